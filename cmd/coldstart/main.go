// Command coldstart builds a Go server several ways and measures which build
// starts fastest, serves best once warm and packs densest under a CPU budget.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() { os.Exit(run()) }

// run executes the command line and returns the exit code, the error
// printed as flagError names it; tests run it in process through
// testscript.
func run() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRootCmd().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "coldstart:", flagError(err))
		return exitCode(err)
	}
	return 0
}

// exitCode is the status an error ends coldstart with: coldstart gate's
// own (2, 3, 4) for its verdicts, else 1. Only a gateError says: an
// *exec.ExitError of a failed build step also has an ExitCode, which is
// not coldstart's to return.
func exitCode(err error) int {
	var g *gateError
	if errors.As(err, &g) {
		return g.ExitCode()
	}
	return 1
}
