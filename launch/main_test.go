package launch_test

import (
	"os"
	"testing"

	"github.com/coldstart-go/coldstart/internal/testservers"
	"github.com/coldstart-go/coldstart/launch/launchtest"
)

// TestMain removes the test servers built for this package's tests. With
// engineChildEnv set, the test binary is instead a run that launches a
// container through the fake engine (engine_test.go); with
// rootlessChildEnv set, one through runc as whoever runs it
// (rootless_test.go).
func TestMain(m *testing.M) {
	if fake := os.Getenv(engineChildEnv); fake != "" {
		os.Exit(engineChild(fake))
	}
	if image := os.Getenv(rootlessChildEnv); image != "" {
		os.Exit(rootlessChild(image))
	}
	os.Exit(testservers.Run(m))
}

// The helpers the launch and prober tests share: launch/launchtest.
var (
	freeTCP   = launchtest.FreeTCP
	socketDir = launchtest.SocketDir
	waitReady = launchtest.WaitReady
	waitOpts  = launchtest.WaitOptions
)
