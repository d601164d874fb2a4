// Command echo is coldstart's bundled sample server: gRPC Echo/EchoStream,
// health and reflection, HTTP/1.1 JSON echo on its own listener, and an
// opt-in debug listener (pprof, runtime metrics).
//
// It listens where it is told: on a listening socket it inherits by socket
// activation (systemd's LISTEN_FDS/LISTEN_PID convention, as coldstart's
// prebound arm hands it over; it then ignores --addr, --unix and $PORT),
// else --addr, --unix, or ":$PORT" (Knative's convention). The debug listener is off unless --debug-addr or
// $COLDSTART_DEBUG_ADDR names it. With --tls-cert and --tls-key the gRPC and
// HTTP listeners serve TLS (HTTP/2 or HTTP/1.1 by ALPN), --http3-addr adds
// HTTP/3 (QUIC, UDP) on the HTTP listener's handler, and with
// --client-ca they require client certificates (mTLS). grpc-go's server settings a service
// owner reaches for are flags of the same names (--num-stream-workers,
// --max-concurrent-streams, the window and buffer sizes, keepalive), and
// net/http's for the HTTP listener are --http-… and --http2-… flags
// (--http-no-keepalives, --http2-max-concurrent-streams), so a campaign
// can vary them.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"sort"
	"syscall"
	"time"

	"github.com/coreos/go-systemd/v22/activation"

	"github.com/coldstart-go/coldstart/internal/echo"
	"github.com/coldstart-go/coldstart/internal/rtmetrics"
)

func main() {
	o := echo.Options{}
	flag.StringVar(&o.Addr, "addr", "", "gRPC listen address host:port (default \":$PORT\")")
	flag.StringVar(&o.Unix, "unix", "", "gRPC Unix socket path (replaces --addr)")
	flag.StringVar(&o.HTTPAddr, "http-addr", os.Getenv("HTTP_ADDR"), "HTTP/1.1 JSON echo address, POST /echo (\"\" = off; default $HTTP_ADDR)")
	flag.StringVar(&o.HTTP3Addr, "http3-addr", os.Getenv("HTTP3_ADDR"), "HTTP/3 (QUIC) address, UDP host:port, serving the HTTP handler; needs --tls-cert, and may be --http-addr's host:port (\"\" = off; default $HTTP3_ADDR)")
	flag.StringVar(&o.DebugAddr, "debug-addr", os.Getenv(rtmetrics.EnvAddr), "pprof and runtime metrics address (\"\" = off; default $"+rtmetrics.EnvAddr+")")
	flag.DurationVar(&o.NotReadyFor, "not-ready-for", 0, "report NOT_SERVING for this long after start (0 = ready at once)")
	flag.StringVar(&o.TLSCert, "tls-cert", "", "serve TLS on the gRPC and HTTP listeners with this PEM certificate (with --tls-key; \"\" = plaintext)")
	flag.StringVar(&o.TLSKey, "tls-key", "", "the PEM private key of --tls-cert")
	flag.StringVar(&o.ClientCA, "client-ca", "", "with --tls-cert: require client certificates that chain to a CA in this PEM file (mTLS)")
	startDelay := flag.Duration("start-delay", 0, "sleep this long before serving (0 = none): a known slow start, for tests")
	o.Levers.Bind(flag.CommandLine)
	o.HTTPLevers.Bind(flag.CommandLine)
	flag.Parse()
	time.Sleep(*startDelay)
	if o.Addr == "" && o.Unix == "" {
		if p := os.Getenv("PORT"); p != "" {
			o.Addr = ":" + p
		}
	}
	lis, err := inherited()
	if err != nil {
		fmt.Fprintln(os.Stderr, "echo:", err)
		os.Exit(1)
	}
	o.Listener = lis
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := echo.Serve(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "echo:", err)
		os.Exit(1)
	}
}

// inherited returns the gRPC listener handed over by socket activation, or
// nil when there is none. activation.Listeners reads LISTEN_FDS only when
// LISTEN_PID is this process's pid, and unsets the variables, so a child of
// the server does not take the sockets for its own. With several sockets,
// the one LISTEN_FDNAMES names "grpc" is the gRPC listener, else the first
// name in sorted order.
func inherited() (net.Listener, error) {
	named, err := activation.ListenersWithNames()
	if err != nil {
		return nil, fmt.Errorf("inherited listeners: %w", err)
	}
	if ls := named["grpc"]; len(ls) > 0 {
		return ls[0], nil
	}
	names := make([]string, 0, len(named))
	for n := range named {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if ls := named[n]; len(ls) > 0 {
			return ls[0], nil
		}
	}
	return nil, nil
}
