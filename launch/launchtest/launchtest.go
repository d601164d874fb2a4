// Package launchtest holds the helpers the launch and prober tests share: a
// free TCP target, a short directory for Unix sockets, and a readiness
// wait that checks the phases it records.
package launchtest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/coldstart-go/coldstart/launch"
	"github.com/coldstart-go/coldstart/prober"
)

// WaitOptions bound the tests' readiness waits: 20 s before giving up.
var WaitOptions = prober.WaitOptions{Timeout: 20 * time.Second}

// FreeTCP is a free TCP target on the loopback.
func FreeTCP(t testing.TB) prober.Target {
	t.Helper()
	tg, err := prober.FreeTCP()
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// SocketDir is a short per-test directory for Unix sockets (t.TempDir
// paths can pass the 107-byte limit), removed when the test ends.
func SocketDir(t testing.TB) string {
	t.Helper()
	d, err := os.MkdirTemp("", "cs")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// WaitReady waits for inst to be ready by c and checks that all three
// readiness phases were recorded, in order.
func WaitReady(t testing.TB, inst launch.Instance, tg prober.Target, c prober.Checker) prober.Readiness {
	t.Helper()
	r, err := prober.WaitReady(context.Background(), inst, tg, c, WaitOptions)
	if err != nil {
		t.Fatalf("WaitReady(%s, %s): %v", tg, c.Name(), err)
	}
	s := prober.Sample{Phases: r.Phases}
	acc, ok1 := s.Phase(prober.PhaseAccepting)
	ans, ok2 := s.Phase(prober.PhaseFirstReply)
	rpc, ok3 := s.Phase(prober.PhaseFirstRPC)
	if !ok1 || !ok2 || !ok3 {
		t.Fatalf("WaitReady(%s, %s) phases = %+v, want accepting, first_answer and first_rpc", tg, c.Name(), r.Phases)
	}
	if !(acc <= ans && ans <= rpc) {
		t.Errorf("WaitReady(%s, %s) phases out of order: %+v", tg, c.Name(), r.Phases)
	}
	return r
}
