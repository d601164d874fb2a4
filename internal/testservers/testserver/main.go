// Command testserver is a small real server with many behaviours, one per
// -mode, for tests across coldstart: servers that follow other conventions
// than the sample server (an HTTP-only server, a port flag with another name,
// $PORT only, a Unix socket), servers that are not ready at first, and
// servers that misbehave (exit at once, never become ready, never listen, leak
// memory on every call, leave a detached child behind).
//
// Where it listens: -socket PATH (a Unix socket), else -listen-port N
// (127.0.0.1:N), else 127.0.0.1:$PORT. Nothing else is read. -start-delay D
// sleeps D before listening: a server with a known extra start-up time.
//
// In grpc mode it serves coldstart's Echo, health and reflection; with
// -count-service also coldstart.test.v1.Count (count.proto): Count, a
// server-streaming method, and Last, a unary one; with -require-metadata
// KEY=VALUE it refuses every call but the health service's that lacks
// that metadata pair. With -require-env KEY=VALUE it exits 1 before
// listening unless its environment holds that pair.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	"github.com/coldstart-go/coldstart/internal/echo"
	"github.com/coldstart-go/coldstart/internal/echo/echopb"
)

type options struct {
	mode        string
	listenPort  int
	socket      string
	notReadyFor time.Duration
	h2c         bool
	message     string
	exitCode    int
	noReflect   bool
	startDelay  time.Duration
	mptcp       bool
	leak        int
	echoDelay   time.Duration
	detach      string
	count       bool
	requireMD   string
	requireEnv  string
}

func main() {
	if secs := os.Getenv(detachEnv); secs != "" {
		os.Exit(detachMiddle(secs))
	}
	var o options
	flag.StringVar(&o.mode, "mode", "grpc", "grpc (Echo, health, reflection) | http (GET any path) | exit (print -message to stderr, exit -exit-code) | silent (never listen)")
	flag.IntVar(&o.listenPort, "listen-port", 0, "listen on 127.0.0.1 at this port (0 = use -socket or $PORT)")
	flag.StringVar(&o.socket, "socket", "", "listen on this Unix socket path")
	flag.DurationVar(&o.notReadyFor, "not-ready-for", 0, "answer NOT_SERVING (grpc) or 503 (http) for this long after start (0 = ready at once, negative = forever)")
	flag.BoolVar(&o.h2c, "h2c", false, "http mode: also serve HTTP/2 without TLS (prior knowledge)")
	flag.StringVar(&o.message, "message", "testserver: cannot start: configuration missing", "exit mode: the line printed to stderr")
	flag.IntVar(&o.exitCode, "exit-code", 3, "exit mode: the exit status")
	flag.BoolVar(&o.noReflect, "no-reflection", false, "grpc mode: do not register the reflection service")
	flag.DurationVar(&o.startDelay, "start-delay", 0, "sleep this long before listening: a known extra start-up time (0 = none)")
	flag.BoolVar(&o.mptcp, "mptcp", false, "listen with Multipath TCP whatever GODEBUG says (a socket criu cannot dump)")
	flag.IntVar(&o.leak, "leak-per-call", 0, "grpc mode: each Echo call leaks this many bytes of resident memory (0 = none)")
	flag.DurationVar(&o.echoDelay, "echo-delay", 0, "grpc mode: each unary Echo call sleeps this long before it answers, using no CPU meanwhile: a server a load cannot saturate (0 = none)")
	flag.BoolVar(&o.count, "count-service", false, "grpc mode: also serve coldstart.test.v1.Count (count.proto): Count, server-streaming, and Last, unary")
	flag.StringVar(&o.requireEnv, "require-env", "", "KEY=VALUE that must be in the environment, else exit 1 before listening, saying what it found (\"\" = none): proof that a setting reached the server")
	flag.StringVar(&o.requireMD, "require-metadata", "", "grpc mode: KEY=VALUE every call but the health service's must carry, else Unauthenticated (\"\" = none)")
	flag.StringVar(&o.detach, "detach-child", "", "before listening, start `sleep SECONDS` detached: in a session of its own, by a double fork, so it is not this server's child nor in its process group (\"\" = none); a unique SECONDS such as 3601.4711 is a marker to find it by")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "testserver:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	if o.requireEnv != "" {
		k, want, _ := strings.Cut(o.requireEnv, "=")
		if got := os.Getenv(k); got != want {
			return fmt.Errorf("-require-env: $%s is %q, want %q", k, got, want)
		}
	}
	if o.detach != "" {
		if err := detachSleep(o.detach); err != nil {
			return err
		}
	}
	switch o.mode {
	case "exit":
		fmt.Fprintln(os.Stderr, o.message)
		os.Exit(o.exitCode)
	case "silent":
		<-ctx.Done()
		return nil
	case "grpc", "http":
	default:
		return fmt.Errorf("-mode: unknown mode %q (known: grpc, http, exit, silent)", o.mode)
	}
	if o.startDelay > 0 {
		time.Sleep(o.startDelay)
	}
	lis, err := listen(o)
	if err != nil {
		return err
	}
	start := time.Now()
	ready := func() bool {
		if o.notReadyFor < 0 {
			return false
		}
		return time.Since(start) >= o.notReadyFor
	}
	if o.mode == "http" {
		return serveHTTP(ctx, lis, o, ready)
	}
	return serveGRPC(ctx, lis, o)
}

func listen(o options) (net.Listener, error) {
	network, address := "tcp", ""
	switch {
	case o.socket != "":
		network, address = "unix", o.socket
		_ = os.Remove(o.socket)
	case o.listenPort != 0:
		address = "127.0.0.1:" + strconv.Itoa(o.listenPort)
	default:
		p := os.Getenv("PORT")
		if p == "" {
			return nil, errors.New("no address: pass -socket, -listen-port or set $PORT")
		}
		address = "127.0.0.1:" + p
	}
	var lc net.ListenConfig
	if o.mptcp {
		lc.SetMultipathTCP(true)
	}
	lis, err := lc.Listen(context.Background(), network, address)
	if err != nil {
		return nil, fmt.Errorf("listen %s %s: %w", network, address, err)
	}
	return lis, nil
}

func serveGRPC(ctx context.Context, lis net.Listener, o options) error {
	var opts []grpc.ServerOption
	if o.requireMD != "" {
		var err error
		if opts, err = requireMetadata(o.requireMD); err != nil {
			return err
		}
	}
	srv := grpc.NewServer(opts...)
	if o.count {
		if err := registerCount(srv); err != nil {
			return err
		}
	}
	switch {
	case o.leak > 0 && o.echoDelay > 0:
		return errors.New("-leak-per-call and -echo-delay: want one of them")
	case o.leak > 0:
		l, err := newLeakyEcho(o.leak, 4<<30)
		if err != nil {
			return err
		}
		echopb.RegisterEchoServer(srv, l)
	case o.echoDelay > 0:
		echopb.RegisterEchoServer(srv, slowEcho{d: o.echoDelay})
	default:
		echopb.RegisterEchoServer(srv, echo.Service{})
	}
	hs := health.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	if !o.noReflect {
		reflection.Register(srv)
	}
	if o.notReadyFor != 0 {
		hs.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
		if o.notReadyFor > 0 {
			time.AfterFunc(o.notReadyFor, func() { hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING) })
		}
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(lis) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	srv.Stop()
	return nil
}

func serveHTTP(ctx context.Context, lis net.Listener, o options, ready func() bool) error {
	var requests atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if !ready() {
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		// The protocol lets a test check that h2c really was HTTP/2.
		fmt.Fprintf(w, "ok %s %s\n", r.Proto, r.URL.Path)
		_, _ = io.Copy(io.Discard, r.Body)
	})
	s := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	if o.h2c {
		s.Protocols = new(http.Protocols)
		s.Protocols.SetHTTP1(true)
		s.Protocols.SetUnencryptedHTTP2(true)
	}
	errc := make(chan error, 1)
	go func() { errc <- s.Serve(lis) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	return s.Close()
}
