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

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRootCmd().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "steady:", err)
		os.Exit(1)
	}
}
