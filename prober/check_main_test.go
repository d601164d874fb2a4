package prober_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/coldstart-go/coldstart/internal/testservers"
	"github.com/coldstart-go/coldstart/launch"
	"github.com/coldstart-go/coldstart/launch/launchtest"
	"github.com/coldstart-go/coldstart/prober"
)

// TestMain removes the test servers built for this package's tests.
func TestMain(m *testing.M) { os.Exit(testservers.Run(m)) }

// start launches bin with args as a plain process at target and stops it
// when the test ends.
func start(t *testing.T, bin string, target prober.Target, args ...string) launch.Instance {
	t.Helper()
	inst, err := launch.Process{}.Launch(context.Background(), launch.Spec{
		Arm: "test", Path: bin, Args: args, Target: target,
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

// The helpers the launch and prober tests share: launch/launchtest.
var (
	freeTCP   = launchtest.FreeTCP
	socketDir = launchtest.SocketDir
	waitReady = launchtest.WaitReady
	waitOpts  = launchtest.WaitOptions
)
