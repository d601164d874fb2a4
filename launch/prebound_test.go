package launch_test

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coldstart-go/coldstart/internal/testservers"
	"github.com/coldstart-go/coldstart/launch"
	"github.com/coldstart-go/coldstart/prober"
)

func launchPrebound(t *testing.T, bin string, tg prober.Target, args ...string) launch.Instance {
	t.Helper()
	inst, err := launch.Prebound{}.Launch(context.Background(), launch.Spec{
		Arm: "prebound", Path: bin, Args: args, Target: tg,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = inst.Stop(ctx)
	})
	return inst
}

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// The sample server takes the socket coldstart bound; the first connection
// is queued before it accepts, and everything is released after Stop.
func TestPreboundSampleServer(t *testing.T) {
	bin := testservers.BuildPackage(t, testservers.Echo)
	for _, tg := range []prober.Target{freeTCP(t), {Network: "unix", Address: prober.SocketPath(socketDir(t))}} {
		t.Run(tg.Network, func(t *testing.T) {
			fds := openFDs(t)
			// A 50 ms start keeps the first connection queued long enough
			// for the watcher to see it, however late it is scheduled.
			inst := launchPrebound(t, bin, tg, "--start-delay", "50ms")
			r := waitReady(t, inst, tg, prober.Health{})
			s := prober.Sample{Phases: append(inst.Phases(), r.Phases...)}
			if tg.Network == "tcp" {
				q, ok1 := s.Phase(launch.PhaseQueued)
				a, ok2 := s.Phase(launch.PhaseServerAccepted)
				rpc, _ := s.Phase(prober.PhaseFirstRPC)
				if !ok1 || !ok2 {
					t.Fatalf("phases = %+v, want %s and %s", s.Phases, launch.PhaseQueued, launch.PhaseServerAccepted)
				}
				if !(q <= a && a <= rpc) {
					t.Errorf("phases out of order (queued %.2f, accepted %.2f, first_rpc %.2f): %+v", q, a, rpc, s.Phases)
				}
			}
			// The server is pid 1 of its own PID namespace: that is how
			// LISTEN_PID is right before the fork.
			st, err := os.ReadFile("/proc/" + strconv.Itoa(inst.PID()) + "/status")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(st), "\nNSpid:\t"+strconv.Itoa(inst.PID())+"\t1\n") {
				t.Errorf("server's /proc status has no NSpid ending in 1:\n%s", st)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := inst.Stop(ctx); err != nil {
				t.Fatal(err)
			}
			if err := prober.WaitFree(ctx, tg, 5*time.Second); err != nil {
				t.Errorf("after Stop: %v", err)
			}
			if got := openFDs(t); got != fds {
				t.Errorf("open fds after Stop = %d, want %d (the listener leaked)", got, fds)
			}
		})
	}
}

// A server that does not read LISTEN_FDS gets ErrIgnoresListener, not a
// timeout: whether it binds $PORT (held by coldstart: address in use) or
// listens somewhere else.
func TestPreboundServerIgnoresListener(t *testing.T) {
	bin := testservers.Build(t)
	other := freeTCP(t)
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"binds $PORT", nil, "tried to bind"},
		{"listens elsewhere", []string{"-listen-port", other.Port()}, "listens on its own socket (tcp " + other.Address + ")"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tg := freeTCP(t)
			inst := launchPrebound(t, bin, tg, tt.args...)
			start := time.Now()
			_, err := prober.WaitReady(context.Background(), inst, tg, prober.Health{}, waitOpts)
			if !errors.Is(err, launch.ErrIgnoresListener) {
				t.Fatalf("WaitReady = %v, want ErrIgnoresListener", err)
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "LISTEN_FDS") {
				t.Errorf("WaitReady error = %q, want it to say %q and name LISTEN_FDS", err, tt.want)
			}
			if d := time.Since(start); d > waitOpts.Timeout/2 {
				t.Errorf("WaitReady took %v: the error came from a timeout", d)
			}
		})
	}
}
