package launch_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coldstart-go/coldstart/internal/testservers"
	"github.com/coldstart-go/coldstart/launch"
	"github.com/coldstart-go/coldstart/prober"
)

// gone fails t unless pid has exited and been reaped.
func gone(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("pid %d after a failed start: kill 0 = %v, want ESRCH: it was left behind", pid, err)
	}
}

// A server that listens only after 300 ms is waited for: StartReady
// returns it running, ready, after Launched and then Waited were told.
func TestStartReadyLate(t *testing.T) {
	srv := testservers.Build(t)
	tg := freeTCP(t)
	var launched, waited int
	var pid int
	inst, r, err := launch.StartReady(context.Background(), launch.Process{},
		launch.Spec{Arm: "late", Path: srv, Args: []string{"-mode", "grpc", "-start-delay", "300ms"}, Target: tg},
		launch.ReadyOptions{Wait: waitOpts,
			Launched: func(in launch.Instance) error {
				launched++
				pid = in.PID()
				return nil
			},
			Waited: func(in launch.Instance, wr prober.Readiness) {
				waited++
				if launched != 1 || wr.FirstRPC == 0 {
					t.Errorf("Waited(%+v) after %d Launched calls, want after one, with the ready reading", wr, launched)
				}
			},
		})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Stop(context.Background())
	if launched != 1 || waited != 1 || pid != inst.PID() {
		t.Errorf("Launched %d times (pid %d), Waited %d times; want once each, for pid %d", launched, pid, waited, inst.PID())
	}
	if r.FirstRPC < 300*time.Millisecond || r.Attempts < 2 {
		t.Errorf("ready after %v in %d attempts, want at least the server's 300 ms start delay, and more than one attempt", r.FirstRPC, r.Attempts)
	}
	select {
	case <-inst.Done():
		t.Fatalf("instance exited: %v", inst.Err())
	default:
	}
	if a, err := (prober.Health{}).Check(context.Background(), tg); err != nil || !a.Ready {
		t.Errorf("health check of the started server = %+v, %v; want ready", a, err)
	}
}

// A server that exits before it is ready fails the start with its exit:
// the error names the arm and quotes its stderr; Name labels it.
func TestStartReadyExits(t *testing.T) {
	srv := testservers.Build(t)
	for _, tc := range []struct{ name, prefix string }{{"", ""}, {"crashy instance 2", "crashy instance 2: "}} {
		inst, r, err := launch.StartReady(context.Background(), launch.Process{},
			launch.Spec{Arm: "crashy", Path: srv, Args: []string{"-mode", "exit", "-message", "boom: no config"}, Target: freeTCP(t)},
			launch.ReadyOptions{Wait: waitOpts, Name: tc.name})
		if !errors.Is(err, launch.ErrExited) || !strings.HasPrefix(err.Error(), tc.prefix) ||
			!strings.Contains(err.Error(), "crashy") || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "boom: no config") {
			t.Fatalf("Name %q: StartReady = %v, want %sErrExited naming crashy, its exit status and its stderr", tc.name, err, tc.prefix)
		}
		if inst == nil {
			t.Fatal("no instance for a failed start: its phases are lost")
		}
		if r.Attempts == 0 && len(inst.Phases()) == 0 {
			t.Errorf("failed start: no attempts, no phases")
		}
		gone(t, inst.PID())
	}
}

// A server that never becomes ready fails with prober.ErrNotReady named
// by its arm, and is stopped; so is one whose Launched fails, with that
// error as it is.
func TestStartReadyNotReadyStops(t *testing.T) {
	srv := testservers.Build(t)
	inst, _, err := launch.StartReady(context.Background(), launch.Process{},
		launch.Spec{Arm: "sleepy", Path: srv, Args: []string{"-mode", "silent"}, Target: freeTCP(t)},
		launch.ReadyOptions{Wait: prober.WaitOptions{Timeout: 300 * time.Millisecond}})
	if !errors.Is(err, prober.ErrNotReady) || !strings.HasPrefix(err.Error(), "sleepy: ") {
		t.Fatalf("StartReady = %v, want sleepy: %v", err, prober.ErrNotReady)
	}
	gone(t, inst.PID())

	boom := errors.New("boom")
	inst, _, err = launch.StartReady(context.Background(), launch.Process{},
		launch.Spec{Arm: "hooked", Path: srv, Args: []string{"-mode", "grpc"}, Target: freeTCP(t)},
		launch.ReadyOptions{Wait: waitOpts, Launched: func(launch.Instance) error { return boom }})
	if err != boom {
		t.Fatalf("StartReady with a failing Launched = %v, want its error as it is", err)
	}
	gone(t, inst.PID())
}

// Cancelling the wait stops the server and whatever it started, even a
// child that left its process group and session.
func TestStartReadyCancelLeavesNothing(t *testing.T) {
	srv := testservers.Build(t)
	marker := testservers.NewDetachMarker()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var detached atomic.Bool
	inst, _, err := launch.StartReady(ctx, launch.Process{},
		launch.Spec{Arm: "silent", Path: srv, Args: []string{"-mode", "silent", "-detach-child", marker}, Target: freeTCP(t)},
		launch.ReadyOptions{Wait: waitOpts, Launched: func(launch.Instance) error {
			// Cancelled once the server has detached its sleep.
			go func() {
				for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
					if len(testservers.Detached(t, marker)) > 0 {
						detached.Store(true)
						break
					}
				}
				cancel()
			}()
			return nil
		}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("StartReady cancelled = %v, want %v", err, context.Canceled)
	}
	if !detached.Load() {
		t.Fatal("the server never detached its sleep: the test shows nothing")
	}
	select {
	case <-inst.Done():
	default:
		t.Fatal("StartReady returned with the server still running")
	}
	gone(t, inst.PID())
	waitGone(t, marker)
}
