package launch_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/coldstart-go/coldstart/internal/testservers"
	"github.com/coldstart-go/coldstart/launch"
	"github.com/coldstart-go/coldstart/prober"
)

// TestMain removes the test servers built for this package's tests. With
// engineChildEnv set, the test binary is instead a run that launches a
// container through the fake engine (engine_test.go).
func TestMain(m *testing.M) {
	if fake := os.Getenv(engineChildEnv); fake != "" {
		os.Exit(engineChild(fake))
	}
	os.Exit(testservers.Run(m))
}

func freeTCP(t *testing.T) prober.Target {
	t.Helper()
	tg, err := prober.FreeTCP()
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// socketDir is a short per-test directory for Unix sockets (t.TempDir paths
// can pass the 107-byte limit).
func socketDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "cs")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

var waitOpts = prober.WaitOptions{Timeout: 20 * time.Second}

// waitReady waits for inst to be ready by c and checks that all three
// readiness phases were recorded in order.
func waitReady(t *testing.T, inst launch.Instance, tg prober.Target, c prober.Checker) prober.Readiness {
	t.Helper()
	r, err := prober.WaitReady(context.Background(), inst, tg, c, waitOpts)
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
