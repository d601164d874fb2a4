package echo

import (
	"context"
	"errors"
	"flag"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/coldstart-go/coldstart/internal/echo/echopb"
)

// serve starts the sample with levers on a Unix socket and returns a
// client connection to it; both end with the test.
func serve(t *testing.T, l Levers) *grpc.ClientConn {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "echo.sock")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, Options{Unix: sock, Levers: l}) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	cc, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if _, err := echopb.NewEchoClient(cc).Echo(wctx, &echopb.EchoRequest{Payload: []byte("up")}, grpc.WaitForReady(true)); err != nil {
		t.Fatalf("first Echo: %v", err)
	}
	return cc
}

// TestMaxConcurrentStreams: with --max-concurrent-streams 1, a unary call
// waits while a stream holds the connection's only slot; without it, the
// same call goes through beside the stream. The lever reaches grpc-go.
func TestMaxConcurrentStreams(t *testing.T) {
	for _, tc := range []struct {
		max     uint
		blocked bool
	}{{0, false}, {1, true}} {
		cc := serve(t, Levers{MaxConcurrentStreams: tc.max})
		c := echopb.NewEchoClient(cc)
		sctx, scancel := context.WithCancel(context.Background())
		st, err := c.EchoStream(sctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Send(&echopb.EchoRequest{Payload: []byte("hold")}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Recv(); err != nil { // the stream is open on the server
			t.Fatal(err)
		}
		// A blocked call never ends on its own; one that goes through may
		// take long on a busy host.
		wait := 10 * time.Second
		if tc.blocked {
			wait = 300 * time.Millisecond
		}
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		_, err = c.Echo(ctx, &echopb.EchoRequest{Payload: []byte("beside")})
		cancel()
		scancel()
		if got := status.Code(err) == codes.DeadlineExceeded; got != tc.blocked {
			t.Errorf("max-concurrent-streams %d: unary call beside an open stream: %v, want blocked %v", tc.max, err, tc.blocked)
		}
	}
}

// TestLeversFlags: each lever is a flag of grpc-go's option's name, and
// values grpc-go would misread are refused naming the flag.
func TestLeversFlags(t *testing.T) {
	var l Levers
	fs := flag.NewFlagSet("echo", flag.ContinueOnError)
	l.Bind(fs)
	err := fs.Parse([]string{"--num-stream-workers=2", "--max-concurrent-streams=8", "--initial-window-size=1048576", "--initial-conn-window-size=2097152",
		"--read-buffer-size=-1", "--write-buffer-size=65536", "--shared-write-buffer", "--keepalive-time=30s", "--keepalive-timeout=5s", "--max-connection-idle=1m"})
	if err != nil {
		t.Fatal(err)
	}
	want := Levers{NumStreamWorkers: 2, MaxConcurrentStreams: 8, InitialWindowSize: 1 << 20, InitialConnWindowSize: 2 << 20, ReadBufferSize: -1, WriteBufferSize: 64 << 10,
		SharedWriteBuffer: true, KeepaliveTime: 30 * time.Second, KeepaliveTimeout: 5 * time.Second, MaxConnectionIdle: time.Minute}
	if l != want {
		t.Errorf("parsed %+v, want %+v", l, want)
	}
	if n := len(l.ServerOptions()); n != 8 {
		t.Errorf("%d server options for every lever set, want 8 (keepalive is one)", n)
	}
	if n := len((Levers{}).ServerOptions()); n != 0 {
		t.Errorf("the zero Levers gives %d server options, want none", n)
	}
	for _, bad := range []struct {
		l    Levers
		flag string
	}{
		{Levers{ReadBufferSize: -2}, "--read-buffer-size"},
		{Levers{InitialWindowSize: -1}, "--initial-window-size"},
		{Levers{KeepaliveTime: -time.Second}, "--keepalive-time"},
	} {
		err := bad.l.Check()
		if err == nil || !strings.HasPrefix(err.Error(), bad.flag+" ") {
			t.Errorf("Check(%+v) = %v, want an error naming %s", bad.l, err, bad.flag)
		}
		if serr := Serve(context.Background(), Options{Unix: filepath.Join(t.TempDir(), "s"), Levers: bad.l}); serr == nil || errors.Is(serr, context.Canceled) {
			t.Errorf("Serve with %+v = %v, want the Check error", bad.l, serr)
		}
	}
}
