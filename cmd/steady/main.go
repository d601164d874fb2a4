// Command steady measures what each build of a Go server costs per request
// once warm: latency percentiles, throughput, streaming and open-loop load
// over gRPC, HTTP/1.1 and h2c, with the server's CPU and allocation per call
// and its memory, metered from outside.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() { os.Exit(steadyMain()) }

// steadyMain executes the command line and returns the exit code, the
// error printed as flagError names it; tests run it in process through
// testscript.
func steadyMain() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRootCmd().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "steady:", flagError(err))
		return 1
	}
	return 0
}
