// Command coldstart builds a Go server several ways and measures which build
// starts fastest, serves best once warm and packs densest under a CPU budget.
package main

import (
	"context"
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
		return 1
	}
	return 0
}
