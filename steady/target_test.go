package steady

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coldstart-go/coldstart/internal/testservers"
	"github.com/coldstart-go/coldstart/prober"
)

// startByHand starts a server as a user would, outside steady, and waits
// until it accepts connections at t.
func startByHand(t *testing.T, t0 prober.Target, bin string, env []string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial(t0.Network, t0.Address)
		if err == nil {
			c.Close()
			return cmd
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not accepting at %s: %v", bin, t0, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestTarget loads a sample server started by hand, with both gRPC
// clients, metered through --server-pid, and unmetered without it (server
// figures null, not 0); over TCP and a Unix socket.
func TestTarget(t *testing.T) {
	bin := testservers.BuildPackage(t, testservers.Echo)
	addr, _ := prober.FreeTCP()
	debug, _ := prober.FreeTCP()
	cmd := startByHand(t, addr, bin, []string{"COLDSTART_DEBUG_ADDR=" + debug.Address}, "--addr="+addr.Address)
	sock := prober.Target{Network: "unix", Address: filepath.Join(t.TempDir(), "s.sock")}
	ts := startByHand(t, sock, testservers.Build(t), nil, "-mode", "grpc", "-socket", sock.Address)

	for _, tt := range []struct {
		name    string
		target  Target
		metered bool
	}{
		{"grpc metered", Target{Addr: addr, PID: cmd.Process.Pid, DebugAddr: debug.Address}, true},
		{"unmetered", Target{Addr: addr}, false},
		{"unix socket metered", Target{Addr: sock, PID: ts.Process.Pid}, true},
	} {
		for _, client := range Clients {
			t.Run(tt.name+"/"+string(client), func(t *testing.T) {
				var c collect
				tg := tt.target
				cfg := Config{Target: &tg, Client: client, Scenarios: []Scenario{Sequential, Throughput, Stream}, Concurrency: []int{4}, Warmup: 200, Calls: 2000, Rounds: 2}
				if err := Run(context.Background(), cfg, c.record); err != nil {
					t.Fatal(err)
				}
				if len(c.rows) != 3 || len(c.windows) != 6 {
					t.Fatalf("%d rows, %d windows; want 3 steps of 2 rounds each", len(c.rows), len(c.windows))
				}
				for _, r := range c.rows {
					if r.Errors != 0 || r.Calls != 2000 || r.Client != client || r.Arm != "target" || r.Rounds != 2 {
						t.Errorf("%s: %d calls, %d errors (%s), client %q, arm %q", r.Scenario, r.Calls, r.Errors, r.FirstError, r.Client, r.Arm)
					}
					known := r.ServerCPUUsPerCall != nil && r.RSSBytes != nil && r.PSSBytes != nil
					if known != tt.metered {
						t.Errorf("%s: server CPU %v, RSS %v, PSS %v; want known=%v", r.Scenario, r.ServerCPUUsPerCall, r.RSSBytes, r.PSSBytes, tt.metered)
					}
					if tt.metered && *r.ServerCPUUsPerCall <= 0 {
						t.Errorf("%s: server CPU %v µs/call, want > 0", r.Scenario, *r.ServerCPUUsPerCall)
					}
					if (tt.target.DebugAddr != "") != (r.AllocBytesPerCall != nil) {
						t.Errorf("%s: alloc per call %v with debug address %q", r.Scenario, r.AllocBytesPerCall, tt.target.DebugAddr)
					}
				}
			})
		}
	}
}

// TestTargetErrors: bad targets fail before any load, naming the setting.
func TestTargetErrors(t *testing.T) {
	bin := testservers.BuildPackage(t, testservers.Echo)
	addr, _ := prober.FreeTCP()
	startByHand(t, addr, bin, nil, "--addr="+addr.Address)
	refused, _ := prober.FreeTCP()
	for _, tt := range []struct {
		name   string
		target Target
		is     error
		want   string
	}{
		{"refused", Target{Addr: refused}, ErrRefused, "Target.Addr: target refused the connection: " + refused.String()},
		{"pid not the listener", Target{Addr: addr, PID: os.Getpid()}, ErrNotListener, "Target.PID: process"},
		{"no such pid", Target{Addr: addr, PID: 1 << 30}, nil, "Target.PID: no process"},
		{"not loopback", Target{Addr: prober.Target{Network: "tcp", Address: "192.0.2.1:80"}}, nil, "unless allowed (Target.AllowRemote)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tg := tt.target
			err := Run(context.Background(), Config{Target: &tg, Warmup: -1, Calls: 10}, func(Row) error {
				t.Error("a row was recorded")
				return nil
			})
			if err == nil || !strings.Contains(err.Error(), tt.want) || (tt.is != nil && !errors.Is(err, tt.is)) {
				t.Errorf("Run = %v, want an error (%v) containing %q", err, tt.is, tt.want)
			}
		})
	}
}

func TestParseTarget(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want prober.Target
		err  bool
	}{
		{"127.0.0.1:8080", prober.Target{Network: "tcp", Address: "127.0.0.1:8080"}, false},
		{"localhost:80", prober.Target{Network: "tcp", Address: "localhost:80"}, false},
		{"[::1]:80", prober.Target{Network: "tcp", Address: "[::1]:80"}, false},
		{"unix:///run/s.sock", prober.Target{Network: "unix", Address: "/run/s.sock"}, false},
		{"unix:/run/s.sock", prober.Target{Network: "unix", Address: "/run/s.sock"}, false},
		{"unix://relative", prober.Target{}, true},
		{"8080", prober.Target{}, true},
	} {
		got, err := ParseTarget(tt.in)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("ParseTarget(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.err)
		}
	}
}

// TestTargetPods: a target that counts its instances gets the count at
// each window's end in Pods, and a window whose count changed is marked.
func TestTargetPods(t *testing.T) {
	bin := testservers.BuildPackage(t, testservers.Echo)
	addr, _ := prober.FreeTCP()
	startByHand(t, addr, bin, nil, "--addr="+addr.Address)
	var n int
	tg := Target{Addr: addr, Pods: func(context.Context) (int, error) { n++; return n / 2, nil }}
	var c collect
	if err := Run(context.Background(), Config{Target: &tg, Scenarios: []Scenario{Sequential}, Warmup: -1, Calls: 100, Rounds: 2}, c.record); err != nil {
		t.Fatal(err)
	}
	// Counts 0|1, then 1|2: the first window 0 → 1 pods, the second 1 → 2.
	if len(c.windows) != 2 {
		t.Fatalf("%d windows, want 2", len(c.windows))
	}
	for i, w := range c.windows {
		if w.Pods == nil || *w.Pods != i+1 || !w.ScaleEvent {
			t.Errorf("window %d: pods %v, scale event %v; want %d and marked", i+1, w.Pods, w.ScaleEvent, i+1)
		}
	}
}

// TestTargetHealthOnly: a gRPC server without coldstart's Echo service
// (slowinit serves only the health check) is loaded with health checks by
// both clients, and its rows name the method and carry no payload; the
// stream scenario, which needs EchoStream, is refused before any load.
func TestTargetHealthOnly(t *testing.T) {
	bin := testservers.BuildPackage(t, "internal/testservers/slowinit")
	addr, _ := prober.FreeTCP()
	_, port, _ := net.SplitHostPort(addr.Address)
	cmd := startByHand(t, addr, bin, []string{"PORT=" + port, "SLOWINIT_MS=0"})
	for _, client := range Clients {
		t.Run(string(client), func(t *testing.T) {
			var c collect
			tg := Target{Addr: addr, PID: cmd.Process.Pid}
			cfg := Config{Target: &tg, Client: client, Scenarios: []Scenario{Sequential, Throughput}, Concurrency: []int{4}, Warmup: 100, Calls: 500, Rounds: 1}
			if err := Run(context.Background(), cfg, c.record); err != nil {
				t.Fatal(err)
			}
			if len(c.rows) != 2 {
				t.Fatalf("%d rows, want 2", len(c.rows))
			}
			for _, r := range c.rows {
				if r.Method != healthMethod || r.PayloadBytes != 0 || r.Errors != 0 || r.Calls != 500 || r.ServerCPUUsPerCall == nil {
					t.Errorf("%s: method %q, payload %d B, %d calls, %d errors (%s), server CPU %v; want 500 health checks without error, metered",
						r.Scenario, r.Method, r.PayloadBytes, r.Calls, r.Errors, r.FirstError, r.ServerCPUUsPerCall)
				}
			}
		})
	}
	tg := Target{Addr: addr}
	err := Run(context.Background(), Config{Target: &tg, Scenarios: []Scenario{Sequential, Stream}, Warmup: -1, Calls: 10}, func(Row) error {
		t.Error("a row was recorded")
		return nil
	})
	if want := "Scenarios: stream: " + addr.String() + " has no coldstart Echo service"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("stream on a health-only target: %v, want an error containing %q", err, want)
	}
}
