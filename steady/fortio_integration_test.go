//go:build integration

package steady

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coldstart-go/coldstart/internal/require"
	"github.com/coldstart-go/coldstart/internal/testservers"
	"github.com/coldstart-go/coldstart/prober"
)

// fortioBin finds fortio (scripts/test-setup.sh installs v1.68.2 with go
// install, into $(go env GOPATH)/bin, which need not be on $PATH).
func fortioBin(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("fortio"); err == nil {
		return p
	}
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		gopath := filepath.SplitList(strings.TrimSpace(string(out)))
		if len(gopath) > 0 {
			p := filepath.Join(gopath[0], "bin", "fortio")
			if _, err := os.Stat(p); err == nil {
				return p
			}
		}
	}
	require.Skipf(t, require.Fortio, "fortio not found on $PATH or in $(go env GOPATH)/bin: scripts/test-setup.sh installs it")
	return ""
}

// TestTargetFortio loads a server that coldstart neither started nor
// wrote: fortio's (v1.68.2), started by hand with its gRPC (ping and
// health) and HTTP (echo) servers on loopback. It has no coldstart Echo
// service, so steady's gRPC load is its health check, with both clients;
// its HTTP echo takes steady's HTTP/1.1 load as it is. Every row is
// metered through --server-pid (server CPU and memory known); a
// --server-pid that is a listening server, but not this one, is refused
// before any load, naming the flag.
func TestTargetFortio(t *testing.T) {
	bin := fortioBin(t)
	grpcAddr, _ := prober.FreeTCP()
	httpAddr, _ := prober.FreeTCP()
	cmd := startByHand(t, grpcAddr, bin, nil, "server", "-loglevel", "warning",
		"-grpc-port", grpcAddr.Address, "-http-port", httpAddr.Address,
		"-redirect-port", "disabled", "-tcp-port", "disabled", "-udp-port", "disabled", "-data-dir", t.TempDir())
	waitAccepting(t, httpAddr)
	pid := cmd.Process.Pid
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	for _, client := range Clients {
		t.Run("grpc/"+string(client), func(t *testing.T) {
			var c collect
			var log bytes.Buffer
			tg := Target{Addr: grpcAddr, PID: pid}
			cfg := Config{Target: &tg, Client: client, Scenarios: []Scenario{Sequential, Throughput}, Concurrency: []int{4},
				Warmup: 200, Calls: 2000, Rounds: 2, Log: &log}
			if err := Run(ctx, cfg, c.record); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(log.String(), "has no coldstart Echo service") {
				t.Errorf("the log does not say the load is health checks:\n%s", log.String())
			}
			checkMetered(t, &c, 2, healthMethod)
		})
	}
	t.Run("http1", func(t *testing.T) {
		var c collect
		tg := Target{Addr: httpAddr, PID: pid}
		cfg := Config{Target: &tg, Protocols: []Protocol{HTTP1}, HTTPPath: "/echo", Scenarios: []Scenario{Sequential},
			Warmup: 200, Calls: 2000, Rounds: 2}
		if err := Run(ctx, cfg, c.record); err != nil {
			t.Fatal(err)
		}
		checkMetered(t, &c, 1, "")
	})

	// The sample server, also started by hand: a listening server, but
	// not the one at fortio's address.
	echoAddr := mustFreeTCP(t)
	echo := startByHand(t, echoAddr, testservers.BuildPackage(t, testservers.Echo), nil, "--addr="+echoAddr.Address)
	for _, tt := range []struct {
		name string
		cfg  Config
		is   error
		want string
	}{
		{"another server's pid", Config{Target: &Target{Addr: grpcAddr, PID: echo.Process.Pid}}, ErrNotListener, "Target.PID: process"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Warmup, tt.cfg.Calls = -1, 10
			err := Run(ctx, tt.cfg, func(Row) error {
				t.Error("a row was recorded")
				return nil
			})
			if err == nil || !strings.Contains(err.Error(), tt.want) || (tt.is != nil && !errors.Is(err, tt.is)) {
				t.Errorf("Run = %v, want an error (%v) containing %q", err, tt.is, tt.want)
			}
		})
	}
}

// checkMetered: n rows, each of 2 rounds of 2,000 calls without error,
// calling method (for gRPC), with the server's CPU and memory known.
func checkMetered(t *testing.T, c *collect, n int, method string) {
	t.Helper()
	if len(c.rows) != n || len(c.windows) != 2*n {
		t.Fatalf("%d rows, %d windows; want %d steps of 2 rounds", len(c.rows), len(c.windows), n)
	}
	for _, r := range append(c.rows, c.windows...) {
		if r.Errors != 0 || r.Calls != 2000 || r.Arm != "target" || r.Method != method {
			t.Errorf("%s %s round %d: %d calls, %d errors (%s), arm %q, method %q; want 2000 calls of %q without error",
				r.Protocol, r.Scenario, r.Round, r.Calls, r.Errors, r.FirstError, r.Arm, r.Method, method)
		}
		if r.ServerCPUUsPerCall == nil || *r.ServerCPUUsPerCall <= 0 || r.RSSBytes == nil || r.PSSBytes == nil {
			t.Errorf("%s %s round %d: server CPU %v µs/call, RSS %v, PSS %v; want all known (--server-pid)",
				r.Protocol, r.Scenario, r.Round, r.ServerCPUUsPerCall, r.RSSBytes, r.PSSBytes)
		}
		if method == healthMethod && r.PayloadBytes != 0 {
			t.Errorf("%s round %d: payload %d bytes, but health checks carry none", r.Scenario, r.Round, r.PayloadBytes)
		}
	}
}

func mustFreeTCP(t *testing.T) prober.Target {
	t.Helper()
	a, err := prober.FreeTCP()
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// waitAccepting waits until something accepts connections at a.
func waitAccepting(t *testing.T, a prober.Target) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial(a.Network, a.Address)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing accepts at %s: %v", a, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
