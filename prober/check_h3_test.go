package prober_test

import (
	"context"
	"errors"
	"regexp"
	"testing"

	"github.com/coldstart-go/coldstart/internal/testservers"
	"github.com/coldstart-go/coldstart/launch"
	"github.com/coldstart-go/coldstart/prober"
	"github.com/coldstart-go/coldstart/prober/probertest"
)

// startEchoH3 starts the sample server serving TLS with the named pair,
// gRPC on the target's TCP port and, with h3, HTTP/3 on its UDP port.
func startEchoH3(t *testing.T, file func(string) string, pair string, h3, mtls bool) (prober.Target, launch.Instance) {
	t.Helper()
	bin := testservers.BuildPackage(t, testservers.Echo)
	tg := freeTCP(t)
	args := []string{"--tls-cert", file(pair + ".crt"), "--tls-key", file(pair + ".key")}
	if h3 {
		args = append(args, "--http3-addr", tg.Address)
	}
	if mtls {
		args = append(args, "--client-ca", file("ca.crt"))
	}
	inst := start(t, bin, tg, args...)
	return tg, inst
}

func TestH3HandshakePhase(t *testing.T) {
	file := newCerts(t)
	tg, inst := startEchoH3(t, file, "server", true, false)
	c, err := prober.ParseProbe("h3:///healthz", "")
	if err != nil {
		t.Fatal(err)
	}
	if c, err = prober.WithTLS(c, probertest.LoadTLS(t, prober.TLSOptions{CAFile: file("ca.crt")})); err != nil {
		t.Fatal(err)
	}
	if c.Name() != "h3 /healthz" {
		t.Errorf("Name = %q, want h3 /healthz", c.Name())
	}
	r := waitReady(t, inst, tg, c)
	s := prober.Sample{Phases: r.Phases}
	acc, okAcc := s.Phase(prober.PhaseAccepting)
	hs, okHS := s.Phase(prober.PhaseTLSHandshake)
	ans, _ := s.Phase(prober.PhaseFirstReply)
	if !okAcc || !okHS || !(acc <= hs && hs <= ans) {
		t.Errorf("phases %+v: want accepting (the first datagram back), then tls_handshake (QUIC's), then first_answer", r.Phases)
	}
	if r.TLS == nil {
		t.Fatal("Readiness.TLS nil over QUIC")
	}
	rec := r.TLS.Record()
	if rec.Ms <= 0 || rec.Resumed || rec.ALPN != "h3" || rec.Version != "TLS 1.3" || rec.ServerKey != "ECDSA P-256" {
		t.Errorf("handshake %+v: want a positive full TLS 1.3 handshake, ALPN h3, ECDSA P-256", rec)
	}
	// Every attempt is a new QUIC connection: none resumes another.
	for range 2 {
		a, err := c.Check(context.Background(), tg)
		if err != nil || !a.Ready || a.Detail != "HTTP/3.0" || a.TLS == nil || a.TLS.State.DidResume || a.Reached.IsZero() {
			t.Errorf("Check = %+v, %v: want ready over HTTP/3 and a full handshake", a, err)
		}
	}
}

// TestH3BadInput: each failure is final and says what is wrong, and
// where, rather than a readiness timeout.
func TestH3BadInput(t *testing.T) {
	file := newCerts(t)
	for _, tt := range []struct {
		name, pair string
		h3, mtls   bool
		o          prober.TLSOptions
		option     string
		want       string
	}{
		{"unknown authority", "server", true, false, prober.TLSOptions{CAFile: "other-ca.crt"}, "cacert",
			`^the server's certificate \(subject "CN=localhost".*\) at udp://127.0.0.1:\d+ does not verify against .*other-ca.crt: signed by an unknown authority`},
		{"wrong name", "wrongname", true, false, prober.TLSOptions{CAFile: "ca.crt"}, "cacert",
			`^the server's certificate \(subject "CN=example.com".*\) at udp://.* the wrong name: it is for example.com, not 127.0.0.1$`},
		{"no client certificate", "server", true, true, prober.TLSOptions{CAFile: "ca.crt"}, "cert",
			`^the server at udp://127.0.0.1:\d+ demands a client certificate, and none was given`},
		{"no HTTP/3 listener", "server", false, false, prober.TLSOptions{CAFile: "ca.crt"}, "probe",
			`^nothing listens on udp://127.0.0.1:\d+: the port answered the QUIC Initial with ICMP port unreachable \(.*connection refused\), while the server has accepted TCP at tcp://127.0.0.1:\d+ for 1s: does it serve HTTP/3 on that UDP port\?$`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tg, inst := startEchoH3(t, file, tt.pair, tt.h3, tt.mtls)
			o := tt.o
			for _, p := range []*string{&o.CAFile, &o.CertFile, &o.KeyFile} {
				if *p != "" {
					*p = file(*p)
				}
			}
			c, err := prober.WithTLS(mustParse(t, "h3:///healthz"), probertest.LoadTLS(t, o))
			if err != nil {
				t.Fatal(err)
			}
			wantBadProbe(t, inst, tg, c, tt.option, tt.want)
		})
	}
}

func TestH3UnixTarget(t *testing.T) {
	c, err := prober.WithTLS(mustParse(t, "h3:///healthz"), &prober.TLS{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Check(context.Background(), prober.Target{Network: "unix", Address: "/tmp/x.sock"})
	if !errors.Is(err, prober.ErrBadProbe) || !regexp.MustCompile(`h3 /healthz probes a UDP port, and the instance listens on unix:///tmp/x.sock`).MatchString(err.Error()) {
		t.Errorf("h3 against a Unix socket: %v, want a bad probe naming the socket", err)
	}
}
