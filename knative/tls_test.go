package knative

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	appsv1 "k8s.io/api/apps/v1"
	"knative.dev/serving/pkg/apis/serving"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"

	"github.com/coldstart-go/coldstart/internal/testservers/testcerts"
	"github.com/coldstart-go/coldstart/prober"
	"github.com/coldstart-go/coldstart/prober/probertest"
)

// plainProbe is a ProbeFunc of f: an attempt that makes no TLS handshake.
func plainProbe(f func(ctx context.Context, target, authority string) error) ProbeFunc {
	return func(ctx context.Context, target, authority string) (*prober.Handshake, error) {
		return nil, f(ctx, target, authority)
	}
}

// tlsHealthServer serves grpc.health.v1 over TLS on loopback with pair, as
// an ingress terminating TLS in front of the activator would, and notes
// the server name (SNI) of every handshake and the :authority of every
// call.
type tlsHealthServer struct {
	addr              string
	mu                sync.Mutex
	snis, authorities []string
}

func newTLSHealthServer(t *testing.T, pair testcerts.Pair) *tlsHealthServer {
	t.Helper()
	cert, err := tls.X509KeyPair(pair.CertPEM, pair.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &tlsHealthServer{addr: l.Addr().String()}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, GetConfigForClient: func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		s.mu.Lock()
		s.snis = append(s.snis, hello.ServerName)
		s.mu.Unlock()
		return nil, nil
	}}
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(cfg)), grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		s.mu.Lock()
		s.authorities = append(s.authorities, md.Get(":authority")...)
		s.mu.Unlock()
		return h(ctx, req)
	}))
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go srv.Serve(l)
	t.Cleanup(srv.Stop)
	return s
}

// names are the server names sent and the :authorities, each sorted,
// once.
func (s *tlsHealthServer) names() (snis, authorities []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	set := func(v []string) []string { return slices.Compact(slices.Sorted(slices.Values(v))) }
	return set(s.snis), set(s.authorities)
}

// tlsFiles are TLS files made now: ca.crt, the CA of the server
// certificate returned (for the Services' hosts by wildcard, outside and
// inside the cluster), and other-ca.crt, a CA that signs nothing here.
func tlsFiles(t *testing.T) (testcerts.Pair, string) {
	t.Helper()
	dir := t.TempDir()
	ca, err := testcerts.NewCA("coldstart test CA")
	if err != nil {
		t.Fatal(err)
	}
	other, err := testcerts.NewCA("coldstart other CA")
	if err != nil {
		t.Fatal(err)
	}
	for name, pem := range map[string][]byte{"ca.crt": ca.PEM, "other-ca.crt": other.PEM} {
		if err := os.WriteFile(filepath.Join(dir, name), pem, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pair, err := ca.Leaf(testcerts.LeafOptions{Names: []string{"*.bench.example.com", "*.bench.svc.cluster.local"}})
	if err != nil {
		t.Fatal(err)
	}
	return pair, dir
}

// tlsCluster is a fake cluster holding the Services coldstart-default and
// coldstart-upx, both at zero.
func tlsCluster(t *testing.T) Clients {
	t.Helper()
	var svcs []*servingv1.Service
	var deps []*appsv1.Deployment
	for _, arm := range testArms() {
		svc, _ := NewService(arm, testDeployOptions("bench").Service)
		markStatus(svc, true)
		svcs = append(svcs, svc)
		d := deployment(svc.Name+"-00001-deployment", ptr(int32(0)), 1, 1, appsv1.DeploymentStatus{})
		d.Labels[serving.ServiceLabelKey] = svc.Name
		deps = append(deps, d)
	}
	c := fakeCluster(t, "bench", true, svcs...)
	c.Kube = fakeKube(deps[0], deps[1])
	return c
}

// tlsOptions are two Services' cold starts through a TLS target, one run
// each after a warm-up.
func tlsOptions(target string, activator bool, c prober.Checker) []MeasureOptions {
	var opts []MeasureOptions
	for _, arm := range []string{"default", "upx"} {
		opts = append(opts, MeasureOptions{Namespace: "bench", Service: "coldstart-" + arm, Arm: arm, Budget: Budget,
			Runs: 1, Warmup: true, Target: target, Activator: activator, ProbeTimeout: time.Minute,
			PhaseGrace: time.Millisecond, Probe: CheckerProbe(c)})
	}
	return opts
}

// TestScaleFromZeroOverTLS: with a TLS checker (--tls), every cold start's
// probes are new TLS clients to what terminates TLS in front of the
// Services, each sending and verifying its own Service's host (the
// :authority it routes by: the Service's URL through an ingress, the
// revision's host through the activator), unless --tls-server-name names
// one; each sample has the handshake as a phase and its record, as a local
// run's does.
func TestScaleFromZeroOverTLS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pair, dir := tlsFiles(t)
	leaf, err := tls.X509KeyPair(pair.CertPEM, pair.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	fp := prober.Fingerprint(leaf.Leaf)
	for _, tt := range []struct {
		name       string
		activator  bool
		serverName string
		snis       []string // the names sent, sorted
		hosts      []string // the :authorities, sorted
	}{
		{"ingress", false, "", []string{"coldstart-default.bench.example.com", "coldstart-upx.bench.example.com"}, nil},
		{"activator", true, "", []string{"coldstart-default-00001.bench.svc.cluster.local", "coldstart-upx-00001.bench.svc.cluster.local"}, nil},
		// A gateway with a certificate of its own: the name it is for is
		// sent and verified, and the probes still route by the Services'.
		{"--tls-server-name wins", false, "gateway.bench.example.com", []string{"gateway.bench.example.com"},
			[]string{"coldstart-default.bench.example.com", "coldstart-upx.bench.example.com"}},
	} {
		if tt.hosts == nil {
			tt.hosts = tt.snis
		}
		t.Run(tt.name, func(t *testing.T) {
			srv := newTLSHealthServer(t, pair)
			checker, err := prober.WithTLS(prober.Health{}, probertest.LoadTLS(t, prober.TLSOptions{CAFile: filepath.Join(dir, "ca.crt"), ServerName: tt.serverName}))
			if err != nil {
				t.Fatal(err)
			}
			var samples []prober.Sample
			if err := ScaleFromZeroInterleaved(ctx, tlsCluster(t), tlsOptions(srv.addr, tt.activator, checker), func(s prober.Sample) error {
				samples = append(samples, s)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if len(samples) != 4 {
				t.Fatalf("%d samples, want 4 (2 Services, a warm-up and a run each)", len(samples))
			}
			for _, s := range samples {
				if s.Error != "" {
					t.Errorf("%s run %d: %s", s.Arm, s.Run, s.Error)
					continue
				}
				if s.TLS == nil || s.TLS.ServerCertSHA256 != fp || s.TLS.Resumed || s.TLS.Version != "TLS 1.3" || s.TLS.ALPN != "h2" {
					t.Errorf("%s run %d: tls %+v, want a full TLS 1.3 handshake (h2) with the certificate %.16s…", s.Arm, s.Run, s.TLS, fp)
				}
				hs, ok := s.Phase(prober.PhaseTLSHandshake)
				if first, _ := s.Phase(prober.PhaseFirstRPC); !ok || hs > first {
					t.Errorf("%s run %d: phases %+v, want tls_handshake (found %v) before first_rpc", s.Arm, s.Run, s.Phases, ok)
				}
			}
			snis, hosts := srv.names()
			if !slices.Equal(snis, tt.snis) || !slices.Equal(hosts, tt.hosts) {
				t.Errorf("server names sent %q, :authority %q; want %q, %q", snis, hosts, tt.snis, tt.hosts)
			}
		})
	}
}

// TestScaleFromZeroTLSFailures: what cannot succeed over TLS ends the cold
// start at once, in a local run's words naming the flag at fault (the
// file, the reason), instead of waiting out the probe timeout.
func TestScaleFromZeroTLSFailures(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pair, dir := tlsFiles(t)
	_, plain, _ := healthServer(t)
	tlsSrv := newTLSHealthServer(t, pair)
	for _, tt := range []struct {
		name   string
		target string
		o      prober.TLSOptions
		option string
		want   string
	}{
		{"--tls against plaintext", plain, prober.TLSOptions{CAFile: filepath.Join(dir, "ca.crt")}, "tls",
			`^the server at tcp://127\.0\.0\.1:\d+ (answered in plaintext, not TLS|closed the connection on the TLS ClientHello without a TLS reply)`},
		{"another CA", tlsSrv.addr, prober.TLSOptions{CAFile: filepath.Join(dir, "other-ca.crt")}, "cacert",
			`^the server's certificate \(subject "CN=\*\.bench\.example\.com".*\) at tcp://127\.0\.0\.1:\d+ does not verify against ` +
				regexp.QuoteMeta(filepath.Join(dir, "other-ca.crt")) + `: signed by an unknown authority`},
		{"a name the certificate lacks", tlsSrv.addr, prober.TLSOptions{CAFile: filepath.Join(dir, "ca.crt"), ServerName: "elsewhere.example.org"}, "tls-server-name",
			`the wrong name: it is for \*\.bench\.example\.com, \*\.bench\.svc\.cluster\.local, not elsewhere\.example\.org$`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			checker, err := prober.WithTLS(prober.Health{}, probertest.LoadTLS(t, tt.o))
			if err != nil {
				t.Fatal(err)
			}
			err = ScaleFromZeroInterleaved(ctx, tlsCluster(t), tlsOptions(tt.target, false, checker)[:1], func(s prober.Sample) error {
				t.Errorf("a sample was recorded: %+v", s)
				return nil
			})
			var oe *prober.OptionError
			if !errors.Is(err, prober.ErrBadProbe) || !errors.As(err, &oe) {
				t.Fatalf("cold start = %v, want a bad probe naming its option", err)
			}
			if oe.Option != tt.option || !regexp.MustCompile(tt.want).MatchString(oe.Err.Error()) {
				t.Errorf("option %q: %v\nwant option %q, matching %s", oe.Option, oe.Err, tt.option, tt.want)
			}
			if !strings.Contains(err.Error(), "service bench/coldstart-default run 0: ") {
				t.Errorf("error %q does not name the Service and the run", err)
			}
		})
	}
}

// TestScaleFromZeroOverHTTPS: an https:// probe's URL names loopback, no
// Service: through the ingress each request's Host and the name sent and
// verified are the Service's host.
func TestScaleFromZeroOverHTTPS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pair, dir := tlsFiles(t)
	cert, err := tls.X509KeyPair(pair.CertPEM, pair.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Host+" "+r.TLS.ServerName+" "+r.URL.Path)
		mu.Unlock()
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	c, err := prober.ParseProbe("https://localhost/healthz", "")
	if err != nil {
		t.Fatal(err)
	}
	if c, err = prober.WithTLS(c, probertest.LoadTLS(t, prober.TLSOptions{CAFile: filepath.Join(dir, "ca.crt")})); err != nil {
		t.Fatal(err)
	}
	var samples []prober.Sample
	if err := ScaleFromZeroInterleaved(ctx, tlsCluster(t), tlsOptions(srv.Listener.Addr().String(), false, c), func(s prober.Sample) error {
		samples = append(samples, s)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, s := range samples {
		if s.Error != "" || s.TLS == nil || s.TLS.ALPN != "h2" {
			t.Errorf("%s run %d: error %q, tls %+v; want an answer over TLS, h2 by ALPN", s.Arm, s.Run, s.Error, s.TLS)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"coldstart-default.bench.example.com coldstart-default.bench.example.com /healthz", "coldstart-upx.bench.example.com coldstart-upx.bench.example.com /healthz"}
	if got := slices.Compact(slices.Sorted(slices.Values(seen))); len(samples) != 4 || !slices.Equal(got, want) {
		t.Errorf("%d samples; requests (Host, server name, path) %q, want %q", len(samples), got, want)
	}
}
