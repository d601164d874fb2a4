package knative

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"

	"github.com/coldstart-go/coldstart/prober"
)

// healthServer serves grpc.health.v1 on loopback and reports the
// :authority of each call.
func healthServer(t *testing.T) (*health.Server, string, <-chan string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	auth := make(chan string, 8)
	srv := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		auth <- strings.Join(md.Get(":authority"), ",")
		return h(ctx, req)
	}))
	hs := health.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	go srv.Serve(l)
	t.Cleanup(srv.Stop)
	return hs, l.Addr().String(), auth
}

func TestHealthCheck(t *testing.T) {
	hs, addr, auth := healthServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := HealthCheck(ctx, addr, "coldstart-default.bench.example.com"); err != nil {
		t.Fatalf("HealthCheck(SERVING) = %v", err)
	}
	if a := <-auth; a != "coldstart-default.bench.example.com" {
		t.Errorf(":authority = %q, want the ksvc host", a)
	}
	hs.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	if _, err := HealthCheck(ctx, addr, ""); err == nil || !strings.Contains(err.Error(), "NOT_SERVING") {
		t.Errorf("HealthCheck(NOT_SERVING) = %v, want an error naming NOT_SERVING", err)
	}
	// Nothing listening: one fail-fast attempt, no wait for a backoff.
	if _, err := HealthCheck(ctx, closedAddr(t), ""); err == nil {
		t.Error("HealthCheck(closed port) = nil")
	}
	if ctx.Err() != nil {
		t.Error("HealthCheck on a closed port waited out the context")
	}
}

func TestProbeAddress(t *testing.T) {
	tests := []struct {
		name                 string
		o                    MeasureOptions
		url, local           string
		wantTarget, wantAuth string
		wantErr              error
	}{
		{"from status", MeasureOptions{}, "http://s.bench.example.com", "http://s.bench.svc.cluster.local",
			"s.bench.svc.cluster.local:80", "s.bench.example.com", nil},
		{"ingress target", MeasureOptions{Target: "203.0.113.7:80"}, "http://s.bench.example.com", "",
			"203.0.113.7:80", "s.bench.example.com", nil},
		{"both given", MeasureOptions{Target: "[::1]:8080", Authority: "x"}, "", "", "[::1]:8080", "x", nil},
		{"nothing to dial", MeasureOptions{}, "http://s.bench.example.com", "", "", "", ErrNoTarget},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			target, auth, err := probeAddress(tt.o, tt.url, tt.local)
			if !errors.Is(err, tt.wantErr) || target != tt.wantTarget || auth != tt.wantAuth {
				t.Errorf("probeAddress = %q, %q, %v; want %q, %q, %v", target, auth, err, tt.wantTarget, tt.wantAuth, tt.wantErr)
			}
		})
	}
	if _, _, err := probeAddress(MeasureOptions{Target: "no-port"}, "", ""); err == nil {
		t.Error("probeAddress(target without port) = nil error")
	}
}

func closedAddr(t *testing.T) string {
	t.Helper()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(closedPort(t)))
}

// TestCheckerProbeAuthority: the probe `coldstart run --on knative` uses
// (CheckerProbe of the --probe checker) carries the authority it is given;
// it used to drop it, so an ingress or the activator saw the dialled address
// as the host and could not route the request.
func TestCheckerProbeAuthority(t *testing.T) {
	_, addr, auth := healthServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tests := []struct {
		name    string
		checker prober.Checker
		arg     string
		want    string
	}{
		{"given", prober.Health{}, "coldstart-default-00001.bench.svc.cluster.local", "coldstart-default-00001.bench.svc.cluster.local"},
		{"checker's own wins", prober.Health{Authority: "mine"}, "theirs", "mine"},
		{"none: the address", prober.Health{}, "", addr},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := CheckerProbe(tt.checker)(ctx, addr, tt.arg); err != nil {
				t.Fatal(err)
			}
			if got := <-auth; got != tt.want {
				t.Errorf(":authority = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestWithAuthority(t *testing.T) {
	m, err := prober.NewGRPCMethod("/pkg.Svc/Get", nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := prober.NewHTTP("h2c://127.0.0.1/healthz")
	if err != nil {
		t.Fatal(err)
	}
	got := func(c prober.Checker) string {
		switch t := c.(type) {
		case prober.Health:
			return t.Authority
		case *prober.GRPCMethod:
			return t.Authority
		case *prober.HTTP:
			return t.Host
		}
		return "n/a"
	}
	tests := []struct {
		name string
		c    prober.Checker
		want string
	}{
		{"health", prober.Health{}, "a.b"},
		{"health, own kept", prober.Health{Authority: "own"}, "own"},
		{"grpc method", m, "a.b"},
		{"http host", h, "a.b"},
		{"tcp has none", prober.TCP{}, "n/a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if g := got(WithAuthority(tt.c, "a.b")); g != tt.want {
				t.Errorf("authority %q, want %q", g, tt.want)
			}
		})
	}
	if m.Authority != "" || h.Host != "" {
		t.Error("WithAuthority changed the checker it was given")
	}
	if c := WithAuthority(prober.Health{}, ""); got(c) != "" {
		t.Errorf("empty authority set %q", got(c))
	}
}
