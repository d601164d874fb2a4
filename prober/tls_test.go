package prober_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/coldstart-go/coldstart/internal/testservers"
	"github.com/coldstart-go/coldstart/internal/testservers/testcerts"
	"github.com/coldstart-go/coldstart/prober"
	"github.com/coldstart-go/coldstart/prober/probertest"
)

// newCerts writes testcerts.WriteSet's files for the test and returns
// the path of one by name.
func newCerts(t *testing.T) func(name string) string {
	t.Helper()
	dir := t.TempDir()
	if err := testcerts.WriteSet(dir); err != nil {
		t.Fatal(err)
	}
	return func(name string) string { return filepath.Join(dir, name) }
}

// startEcho starts the sample server serving TLS with the named pair
// (and requiring client certificates from ca.crt with mtls).
func startEcho(t *testing.T, file func(string) string, pair string, mtls bool) prober.Target {
	t.Helper()
	bin := testservers.BuildPackage(t, testservers.Echo)
	tg := freeTCP(t)
	args := []string{}
	if pair != "" {
		args = append(args, "--tls-cert", file(pair+".crt"), "--tls-key", file(pair+".key"))
	}
	if mtls {
		args = append(args, "--client-ca", file("ca.crt"))
	}
	inst := start(t, bin, tg, args...)
	waitReady(t, inst, tg, prober.TCP{})
	return tg
}

func TestTLSHealthHandshakePhase(t *testing.T) {
	file := newCerts(t)
	bin := testservers.BuildPackage(t, testservers.Echo)
	tg := freeTCP(t)
	inst := start(t, bin, tg, "--tls-cert", file("server.crt"), "--tls-key", file("server.key"))
	c, err := prober.WithTLS(prober.Health{}, probertest.LoadTLS(t, prober.TLSOptions{CAFile: file("ca.crt")}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Name() != "grpcs-health" {
		t.Errorf("Name = %q, want grpcs-health", c.Name())
	}
	r := waitReady(t, inst, tg, c)
	s := prober.Sample{Phases: r.Phases}
	acc, _ := s.Phase(prober.PhaseAccepting)
	hs, ok := s.Phase(prober.PhaseTLSHandshake)
	ans, _ := s.Phase(prober.PhaseFirstReply)
	if !ok || !(acc <= hs && hs <= ans) {
		t.Errorf("phases %+v: want tls_handshake between accepting and first_answer", r.Phases)
	}
	if r.TLS == nil {
		t.Fatal("Readiness.TLS nil over TLS")
	}
	rec := r.TLS.Record()
	if rec.Ms <= 0 || rec.Resumed || rec.ServerKey != "ECDSA P-256" || rec.ALPN != "h2" || rec.Version == "" {
		t.Errorf("handshake %+v: want a positive full handshake, ECDSA P-256, h2", rec)
	}
	// Every attempt is a new client: the second never resumes the first.
	for range 2 {
		a, err := c.Check(context.Background(), tg)
		if err != nil || !a.Ready || a.TLS == nil || a.TLS.State.DidResume {
			t.Errorf("Check = %+v, %v: want ready over a full handshake", a, err)
		}
	}
}

// TestTLSOwnAuthority: a gRPC probe with an :authority of its own (a
// Knative Service's host, which the ingress routes by) sends and verifies
// the TLS options' server name, not the authority: grpc-go alone refuses
// such a channel, or sends the authority.
func TestTLSOwnAuthority(t *testing.T) {
	file := newCerts(t)
	tg := startEcho(t, file, "server", false)
	tl := probertest.LoadTLS(t, prober.TLSOptions{CAFile: file("ca.crt"), ServerName: "localhost"})
	for _, c := range []prober.Checker{
		prober.Health{Authority: "coldstart-default.bench.example.com", TLS: tl},
		prober.Health{Authority: "coldstart-default.bench.example.com", TLS: tl, TLSName: "coldstart-default.bench.example.com"},
	} {
		a, err := c.Check(context.Background(), tg)
		if err != nil || !a.Ready || a.TLS == nil {
			t.Errorf("%+v: Check = %+v, %v; want ready over TLS, verified as localhost", c, a, err)
		}
	}
	// Without a server name given, the authority is the name verified.
	other := probertest.LoadTLS(t, prober.TLSOptions{CAFile: file("ca.crt")})
	_, err := prober.Health{Authority: "coldstart-default.bench.example.com", TLS: other}.Check(context.Background(), tg)
	var oe *prober.OptionError
	if !errors.As(err, &oe) || !strings.Contains(err.Error(), "the wrong name: it is for localhost, 127.0.0.1, ::1, not coldstart-default.bench.example.com") {
		t.Errorf("Check with the authority as the name = %v, want the wrong name", err)
	}
}

func TestGRPCSMethodProbe(t *testing.T) {
	file := newCerts(t)
	tg := startEcho(t, file, "server", false)
	c, err := prober.ParseProbe("grpcs://localhost/coldstart.echo.v1.Echo/Echo", `{"payload":"aGk="}`)
	if err != nil {
		t.Fatal(err)
	}
	if c, err = prober.WithTLS(c, probertest.LoadTLS(t, prober.TLSOptions{CAFile: file("ca.crt")})); err != nil {
		t.Fatal(err)
	}
	if err := c.(prober.Preparer).Prepare(context.Background(), tg); err != nil {
		t.Fatal(err)
	}
	a, err := c.Check(context.Background(), tg)
	if err != nil || !a.Ready || a.TLS == nil {
		t.Errorf("Check(%s) = %+v, %v: want ready over TLS", c.Name(), a, err)
	}
}

// TestTLSBadInput: each failure is final (WaitReady returns it at once,
// not at its timeout) and says what is wrong, and with what file.
func TestTLSBadInput(t *testing.T) {
	file := newCerts(t)
	for _, tt := range []struct {
		name, pair string
		mtls       bool
		o          prober.TLSOptions
		option     string
		want       string
	}{
		{"unknown authority", "server", false, prober.TLSOptions{CAFile: "other-ca.crt"}, "cacert",
			`^the server's certificate \(subject "CN=localhost".*\) at tcp://127.0.0.1:\d+ does not verify against .*other-ca.crt: signed by an unknown authority`},
		{"wrong name", "wrongname", false, prober.TLSOptions{CAFile: "ca.crt"}, "cacert",
			`^the server's certificate \(subject "CN=example.com".*\) at .* does not verify against .*/ca.crt: the wrong name: it is for example.com, not 127.0.0.1$`},
		{"wrong server name", "server", false, prober.TLSOptions{CAFile: "ca.crt", ServerName: "example.com"}, "tls-server-name",
			`: the wrong name: it is for localhost, 127.0.0.1, ::1, not example.com$`},
		{"expired", "expired", false, prober.TLSOptions{CAFile: "ca.crt"}, "cacert",
			`^the server's certificate .* does not verify against .*/ca.crt: expired \(valid until 20\d\d-.*, now 20\d\d-.*\)$`},
		{"plaintext server", "", false, prober.TLSOptions{CAFile: "ca.crt"}, "tls",
			`^the server at tcp://127.0.0.1:\d+ (answered in plaintext, not TLS|closed the connection on the TLS ClientHello without a TLS reply)`},
		{"no client certificate", "server", true, prober.TLSOptions{CAFile: "ca.crt"}, "cert",
			`^the server at tcp://127.0.0.1:\d+ demands a client certificate, and none was given`},
		{"client certificate of another CA", "server", true, prober.TLSOptions{CAFile: "ca.crt", CertFile: "other-client.crt", KeyFile: "other-client.key"}, "cert",
			`^the server at tcp://127.0.0.1:\d+ refused the client certificate .*other-client.crt`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tg := startEcho(t, file, tt.pair, tt.mtls)
			o := tt.o
			for _, p := range []*string{&o.CAFile, &o.CertFile, &o.KeyFile} {
				if *p != "" {
					*p = file(*p)
				}
			}
			c, err := prober.WithTLS(prober.Health{}, probertest.LoadTLS(t, o))
			if err != nil {
				t.Fatal(err)
			}
			wantBadProbe(t, fakeStarted{time.Now()}, tg, c, tt.option, tt.want)
		})
	}
}

// wantBadProbe checks that WaitReady fails for good (ErrBadProbe, an
// OptionError on option whose text matches want) well before its
// timeout: the failure said, not waited out.
func wantBadProbe(t *testing.T, inst prober.Started, tg prober.Target, c prober.Checker, option, want string) {
	t.Helper()
	began := time.Now()
	_, err := prober.WaitReady(context.Background(), inst, tg, c, prober.WaitOptions{Timeout: 20 * time.Second})
	var oe *prober.OptionError
	switch {
	case err == nil:
		t.Fatal("WaitReady passed")
	case !errors.Is(err, prober.ErrBadProbe) || !errors.As(err, &oe):
		t.Fatalf("WaitReady: %v, want a final OptionError", err)
	case time.Since(began) > 10*time.Second:
		t.Errorf("WaitReady took %v: want the failure said, not a timeout", time.Since(began))
	}
	t.Log(err)
	if oe.Option != option || !regexp.MustCompile(want).MatchString(oe.Err.Error()) {
		t.Errorf("WaitReady: %s: %v\nwant %s: matching %s", oe.Option, oe.Err, option, want)
	}
}

func TestTLSMutual(t *testing.T) {
	file := newCerts(t)
	tg := startEcho(t, file, "server", true)
	c, err := prober.WithTLS(prober.Health{}, probertest.LoadTLS(t, prober.TLSOptions{
		CAFile: file("ca.crt"), CertFile: file("client.crt"), KeyFile: file("client.key"),
	}))
	if err != nil {
		t.Fatal(err)
	}
	a, err := c.Check(context.Background(), tg)
	if err != nil || !a.Ready {
		t.Errorf("Check with a client certificate = %+v, %v: want ready", a, err)
	}
}

func TestLoadTLSBadFiles(t *testing.T) {
	file := newCerts(t)
	for _, tt := range []struct {
		o            prober.TLSOptions
		option, want string
	}{
		{prober.TLSOptions{CertFile: "client.crt", KeyFile: "server.key"}, "key", `^.*/server.key does not match the certificate in .*/client.crt \(`},
		{prober.TLSOptions{CertFile: "client.crt"}, "key", `^none given for the client certificate .*client.crt$`},
		{prober.TLSOptions{CAFile: "server.key"}, "cacert", `^.*/server.key: no PEM certificate in it$`},
		{prober.TLSOptions{CAFile: "missing.crt"}, "cacert", `^open .*/missing.crt: no such file or directory$`},
	} {
		o := tt.o
		for _, p := range []*string{&o.CAFile, &o.CertFile, &o.KeyFile} {
			if *p != "" {
				*p = file(*p)
			}
		}
		_, err := prober.LoadTLS(o)
		var oe *prober.OptionError
		if !errors.As(err, &oe) || oe.Option != tt.option || !regexp.MustCompile(tt.want).MatchString(oe.Err.Error()) {
			t.Errorf("LoadTLS(%+v) = %v, want %s: matching %s", tt.o, err, tt.option, tt.want)
		}
	}
	tl := probertest.LoadTLS(t, prober.TLSOptions{CAFile: file("ca.crt"), CertFile: file("client.crt"), KeyFile: file("client.key")})
	if len(tl.Record.CASHA256) != 1 || len(tl.Record.CertSHA256) != 64 || tl.Record.KeyFile == "" {
		t.Errorf("Record = %+v: want the CA's and the certificate's fingerprints, the key's path", tl.Record)
	}
}

func TestHTTPS(t *testing.T) {
	file := newCerts(t)
	pair, err := tls.LoadX509KeyPair(file("server.crt"), file("server.key"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	srv.EnableHTTP2 = true
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	srv.StartTLS()
	defer srv.Close()
	tg := prober.Target{Network: "tcp", Address: strings.TrimPrefix(srv.URL, "https://")}
	c, err := prober.ParseProbe("https://localhost/healthz", "")
	if err != nil {
		t.Fatal(err)
	}
	if c, err = prober.WithTLS(c, probertest.LoadTLS(t, prober.TLSOptions{CAFile: file("ca.crt")})); err != nil {
		t.Fatal(err)
	}
	a, err := c.Check(context.Background(), tg)
	if err != nil || !a.Ready || a.Detail != "HTTP/2.0" || a.TLS == nil || a.TLS.Record().Ms <= 0 {
		t.Errorf("Check(%s) = %+v, %v: want ready over HTTP/2 and TLS", c.Name(), a, err)
	}

	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer plain.Close()
	_, err = c.Check(context.Background(), prober.Target{Network: "tcp", Address: strings.TrimPrefix(plain.URL, "http://")})
	if err == nil || !errors.Is(err, prober.ErrBadProbe) || !strings.Contains(err.Error(), "answered in plaintext, not TLS") {
		t.Errorf("https against a plaintext server: %v, want 'answered in plaintext, not TLS'", err)
	}
	if _, err := prober.WithTLS(mustParse(t, "http:///healthz"), &prober.TLS{}); err == nil || !strings.Contains(err.Error(), "over TLS probe https://") {
		t.Errorf("WithTLS(http://) = %v, want an error pointing to https://", err)
	}
	if _, err := prober.WithTLS(prober.TCP{}, &prober.TLS{}); err == nil {
		t.Error("WithTLS(tcp) passed")
	}
}

func mustParse(t *testing.T, spec string) prober.Checker {
	c, err := prober.ParseProbe(spec, "")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// fakeStarted is a server started elsewhere at t0 that does not exit.
type fakeStarted struct{ t0 time.Time }

func (f fakeStarted) T0() time.Time         { return f.t0 }
func (f fakeStarted) Done() <-chan struct{} { return nil }
func (f fakeStarted) Err() error            { return nil }

// exitingStarted is a server that exits, with err, once done is closed.
type exitingStarted struct {
	t0   time.Time
	done chan struct{}
	err  error
}

func (e *exitingStarted) T0() time.Time         { return e.t0 }
func (e *exitingStarted) Done() <-chan struct{} { return e.done }
func (e *exitingStarted) Err() error {
	select {
	case <-e.done:
		return e.err
	default:
		return nil
	}
}

// TestTLSServerExitingOnHello: a server that dies as the first ClientHello
// arrives (its listener closed under the connection, as when it fails to
// load its key) is reported by its exit, not named a plaintext server.
func TestTLSServerExitingOnHello(t *testing.T) {
	file := newCerts(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	inst := &exitingStarted{t0: time.Now(), done: make(chan struct{}), err: errors.New("exit status 1: tls: private key does not match public key")}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if n, _ := c.Read(make([]byte, 1)); n == 0 {
				c.Close() // the connect-only attempt
				continue
			}
			c.(*net.TCPConn).SetLinger(0) // a reset, as at a process's exit
			c.Close()
			ln.Close()
			// The exit is seen a moment after the listener closes, as a
			// parent's wait returns after the kernel closed the files.
			time.AfterFunc(20*time.Millisecond, func() { close(inst.done) })
			return
		}
	}()
	c, err := prober.WithTLS(prober.Health{}, probertest.LoadTLS(t, prober.TLSOptions{CAFile: file("ca.crt")}))
	if err != nil {
		t.Fatal(err)
	}
	tg := prober.Target{Network: "tcp", Address: ln.Addr().String()}
	_, err = prober.WaitReady(context.Background(), inst, tg, c, prober.WaitOptions{Timeout: 10 * time.Second})
	if err != inst.err {
		t.Errorf("WaitReady = %v, want the server's exit: %v", err, inst.err)
	}
}

// TestClientConfig: a fresh configuration per call, from the loaded
// files, that never resumes a session; the client certificate is there
// for mTLS, and the name given is used only when the options give none.
func TestClientConfig(t *testing.T) {
	file := newCerts(t)
	tl := probertest.LoadTLS(t, prober.TLSOptions{CAFile: file("ca.crt"), CertFile: file("client.crt"), KeyFile: file("client.key")})
	a, b := tl.ClientConfig("127.0.0.1"), tl.ClientConfig("127.0.0.1")
	if a == b {
		t.Fatal("ClientConfig returned the same *tls.Config twice, want a fresh one each call")
	}
	if !a.SessionTicketsDisabled || a.ClientSessionCache != nil {
		t.Errorf("ClientConfig: tickets disabled %v, session cache %v: want no resumption", a.SessionTicketsDisabled, a.ClientSessionCache)
	}
	if a.RootCAs == nil || len(a.Certificates) != 1 || a.ServerName != "127.0.0.1" || a.MinVersion != tls.VersionTLS12 || a.InsecureSkipVerify {
		t.Errorf("ClientConfig = roots %v, %d certificates, name %q, min version %x, skip verify %v", a.RootCAs, len(a.Certificates), a.ServerName, a.MinVersion, a.InsecureSkipVerify)
	}
	named := probertest.LoadTLS(t, prober.TLSOptions{ServerName: "localhost", InsecureSkipVerify: true})
	if c := named.ClientConfig("127.0.0.1"); c.ServerName != "localhost" || !c.InsecureSkipVerify || c.RootCAs != nil || len(c.Certificates) != 0 {
		t.Errorf("ClientConfig with --tls-server-name and no files = name %q, skip verify %v, roots %v, %d certificates", c.ServerName, c.InsecureSkipVerify, c.RootCAs, len(c.Certificates))
	}
}
