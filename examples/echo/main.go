// Command echo is coldstart's bundled sample server: gRPC Echo/EchoStream,
// health and reflection, HTTP/1.1 JSON echo on its own listener, and an
// opt-in debug listener (pprof, runtime metrics).
//
// It listens where it is told: --addr, --unix, or ":$PORT" (Knative's
// convention). The debug listener is off unless --debug-addr or
// $COLDSTART_DEBUG_ADDR names it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/coldstart-go/coldstart/internal/echo"
	"github.com/coldstart-go/coldstart/internal/rtmetrics"
)

func main() {
	o := echo.Options{}
	flag.StringVar(&o.Addr, "addr", "", "gRPC listen address host:port (default \":$PORT\")")
	flag.StringVar(&o.Unix, "unix", "", "gRPC Unix socket path (replaces --addr)")
	flag.StringVar(&o.HTTPAddr, "http-addr", os.Getenv("HTTP_ADDR"), "HTTP/1.1 JSON echo address, POST /echo (\"\" = off; default $HTTP_ADDR)")
	flag.StringVar(&o.DebugAddr, "debug-addr", os.Getenv(rtmetrics.EnvAddr), "pprof and runtime metrics address (\"\" = off; default $"+rtmetrics.EnvAddr+")")
	flag.DurationVar(&o.NotReadyFor, "not-ready-for", 0, "report NOT_SERVING for this long after start (0 = ready at once)")
	flag.Parse()
	if o.Addr == "" && o.Unix == "" {
		if p := os.Getenv("PORT"); p != "" {
			o.Addr = ":" + p
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := echo.Serve(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "echo:", err)
		os.Exit(1)
	}
}
