package steady

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coldstart-go/coldstart/internal/testservers/testcerts"
	"github.com/coldstart-go/coldstart/prober"
	"github.com/coldstart-go/coldstart/prober/probertest"
)

// certDir holds testcerts.WriteSet's files, made now, in a directory the
// servers can read: they run as another user when the tests run as root.
func certDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "steady-certs")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := testcerts.WriteSet(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, f := range files {
		if err := os.Chmod(f, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// tlsArm is the sample server serving TLS with dir's server certificate,
// requiring client certificates from dir's CA when mtls is set.
func tlsArm(t *testing.T, dir string, mtls bool) Arm {
	a := sampleArm(t)
	a.Args = append(append([]string(nil), a.Args...), "--tls-cert", filepath.Join(dir, "server.crt"), "--tls-key", filepath.Join(dir, "server.key"))
	if mtls {
		a.Args = append(a.Args, "--client-ca", filepath.Join(dir, "ca.crt"))
	}
	return a
}

// TestTLS loads the sample server over TLS and mTLS with every client:
// grpc-go and the lean client over gRPC, HTTP/1.1 and HTTP/2 (h2 by
// ALPN). Every call succeeds, and with connections that live for the
// whole step no window pays a handshake.
func TestTLS(t *testing.T) {
	dir := certDir(t)
	for _, mtls := range []bool{false, true} {
		for _, client := range Clients {
			name := "tls"
			o := prober.TLSOptions{CAFile: filepath.Join(dir, "ca.crt")}
			if mtls {
				name = "mtls"
				o.CertFile, o.KeyFile = filepath.Join(dir, "client.crt"), filepath.Join(dir, "client.key")
			}
			t.Run(name+"/"+string(client), func(t *testing.T) {
				protos := []Protocol{GRPC}
				if client == ClientGRPC {
					protos = append(protos, HTTP1, H2) // HTTP load does not depend on the gRPC client
				}
				var c collect
				cfg := Config{
					Arms: []Arm{tlsArm(t, dir, mtls)}, TLS: probertest.LoadTLS(t, o), Client: client, Protocols: protos,
					Scenarios: []Scenario{Sequential, Throughput}, Concurrency: []int{4}, Rounds: 1, Warmup: 20, Calls: 200,
				}
				if err := Run(context.Background(), cfg, c.record); err != nil {
					t.Fatal(err)
				}
				if len(c.rows) != 2*len(protos) {
					t.Fatalf("got %d rows, want %d", len(c.rows), 2*len(protos))
				}
				for _, r := range c.rows {
					if r.Calls != 200 || r.Errors != 0 || !r.TLS {
						t.Errorf("%s %s: calls %d errors %d (%s) tls %v, want 200, none, true", r.Protocol, r.Scenario, r.Calls, r.Errors, r.FirstError, r.TLS)
					}
					if r.TLSHandshakes == nil || *r.TLSHandshakes != 0 || r.TLSHandshakesPerS == nil {
						t.Errorf("%s %s: handshakes %v (%v/s) in the window, want 0: its connections were made before the warmup", r.Protocol, r.Scenario, r.TLSHandshakes, r.TLSHandshakesPerS)
					}
				}
			})
		}
	}
}

// TestTLSReconnect: with Config.ReconnectEvery each connection is dialled
// again after every N calls on it, so a sequential window of C calls
// completes more than C/N − 1 handshakes; with four workers sharing a
// connection no call fails because another reconnected.
func TestTLSReconnect(t *testing.T) {
	dir := certDir(t)
	const every, calls = 10, 200
	tl := probertest.LoadTLS(t, prober.TLSOptions{CAFile: filepath.Join(dir, "ca.crt")})
	for _, client := range Clients {
		t.Run(string(client), func(t *testing.T) {
			protos := []Protocol{GRPC}
			if client == ClientGRPC {
				protos = append(protos, HTTP1, H2)
			}
			var c collect
			cfg := Config{
				Arms: []Arm{tlsArm(t, dir, false)}, TLS: tl, Client: client, Protocols: protos, ReconnectEvery: every,
				Scenarios: []Scenario{Sequential, Throughput}, Concurrency: []int{4}, Pipeline: []int{2}, Rounds: 1, Warmup: 25, Calls: calls,
			}
			if err := Run(context.Background(), cfg, c.record); err != nil {
				t.Fatal(err)
			}
			for _, r := range c.rows {
				if r.Calls != calls || r.Errors != 0 || r.ReconnectEvery != every {
					t.Errorf("%s %s: calls %d errors %d (%s), reconnect every %d, want %d, none, %d", r.Protocol, r.Scenario, r.Calls, r.Errors, r.FirstError, r.ReconnectEvery, calls, every)
				}
				if r.TLSHandshakes == nil || r.TLSHandshakesPerS == nil || *r.TLSHandshakesPerS <= 0 {
					t.Errorf("%s %s: handshakes %v (%v/s), want counted", r.Protocol, r.Scenario, r.TLSHandshakes, r.TLSHandshakesPerS)
					continue
				}
				// Each of the step's connections renews itself after every
				// N calls on it: at least calls/N − 1 handshakes each way
				// the calls fall, one fewer per connection at worst.
				if min := int64(calls/every - r.Conns); *r.TLSHandshakes <= min {
					t.Errorf("%s %s conns=%d: %d handshakes for %d calls renewed every %d, want more than %d", r.Protocol, r.Scenario, r.Conns, *r.TLSHandshakes, calls, every, min)
				}
			}
		})
	}
}

// TestTLSErrors: a TLS setting that cannot work is said before any load,
// naming the input at fault, rather than counted as every call's error.
func TestTLSErrors(t *testing.T) {
	dir := certDir(t)
	ca := filepath.Join(dir, "ca.crt")
	for _, tt := range []struct {
		name   string
		arm    Arm
		tls    prober.TLSOptions
		plain  bool // load in plaintext
		protos []Protocol
		client Client
		option string   // the prober.OptionError's, or "TLS" for steady's
		want   []string // in the message
	}{
		{name: "wrong CA", arm: tlsArm(t, dir, false), tls: prober.TLSOptions{CAFile: filepath.Join(dir, "other-ca.crt")},
			option: "cacert", want: []string{"does not verify against", "other-ca.crt", "signed by an unknown authority"}},
		{name: "wrong CA over http", arm: tlsArm(t, dir, false), tls: prober.TLSOptions{CAFile: filepath.Join(dir, "other-ca.crt")}, protos: []Protocol{H2},
			option: "cacert", want: []string{"does not verify against", "signed by an unknown authority"}},
		{name: "mTLS without a client certificate", arm: tlsArm(t, dir, true), tls: prober.TLSOptions{CAFile: ca},
			option: "cert", want: []string{"demands a client certificate, and none was given"}},
		{name: "mTLS without a client certificate, lean", arm: tlsArm(t, dir, true), tls: prober.TLSOptions{CAFile: ca}, client: ClientLean,
			option: "cert", want: []string{"demands a client certificate, and none was given"}},
		{name: "mTLS without a client certificate over http", arm: tlsArm(t, dir, true), tls: prober.TLSOptions{CAFile: ca}, protos: []Protocol{HTTP1},
			option: "cert", want: []string{"demands a client certificate, and none was given"}},
		{name: "TLS to a plaintext server", arm: sampleArm(t), tls: prober.TLSOptions{CAFile: ca},
			option: "tls", want: []string{"answered in plaintext, not TLS"}},
		{name: "plaintext to a TLS server", arm: tlsArm(t, dir, false), plain: true,
			option: "TLS", want: []string{"serves TLS (it answered a TLS ClientHello), and the load is plaintext"}},
		{name: "plaintext to a TLS server over http", arm: tlsArm(t, dir, false), plain: true, protos: []Protocol{HTTP1},
			option: "TLS", want: []string{"serves TLS", "the load is plaintext"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{Arms: []Arm{tt.arm}, Protocols: tt.protos, Client: tt.client, Scenarios: []Scenario{Sequential}, Rounds: 1, Warmup: -1, Calls: 10}
			if !tt.plain {
				cfg.TLS = probertest.LoadTLS(t, tt.tls)
			}
			err := Run(context.Background(), cfg, func(Row) error {
				t.Error("a row was measured")
				return nil
			})
			if err == nil {
				t.Fatal("Run succeeded, want an error")
			}
			if !errors.Is(err, prober.ErrBadProbe) {
				t.Errorf("Run = %v, want it to wrap prober.ErrBadProbe (final: the readiness wait ends at once)", err)
			}
			var pe *prober.OptionError
			var se *OptionError
			switch {
			case errors.As(err, &se):
				if se.Option != tt.option {
					t.Errorf("Run = %v: option %q, want %q", err, se.Option, tt.option)
				}
			case errors.As(err, &pe):
				if pe.Option != tt.option {
					t.Errorf("Run = %v: option %q, want %q", err, pe.Option, tt.option)
				}
			default:
				t.Errorf("Run = %v, want an OptionError naming %q", err, tt.option)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Run = %v, want %q in it", err, w)
				}
			}
		})
	}
}
