package prober_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/reflection"

	"github.com/coldstart-go/coldstart/internal/echo"
	"github.com/coldstart-go/coldstart/internal/echo/echopb"
	"github.com/coldstart-go/coldstart/internal/testservers"
	"github.com/coldstart-go/coldstart/prober"
)

// countingListener counts the connections it accepts.
type countingListener struct {
	net.Listener
	n atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

func listenCounting(t *testing.T) (*countingListener, prober.Target) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: l}
	return cl, prober.Target{Network: "tcp", Address: l.Addr().String()}
}

// Every attempt opens its own connection: nothing is reused across
// attempts, so each one sees what a brand-new client would.
func TestFreshConnectionPerAttempt(t *testing.T) {
	const attempts = 3

	hl, htg := listenCounting(t)
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {})}
	hs.Protocols = new(http.Protocols)
	hs.Protocols.SetHTTP1(true)
	hs.Protocols.SetUnencryptedHTTP2(true)
	go hs.Serve(hl)
	t.Cleanup(func() { hs.Close() })

	gl, gtg := listenCounting(t)
	gs := grpc.NewServer()
	echopb.RegisterEchoServer(gs, echo.Service{})
	reflection.Register(gs)
	go gs.Serve(gl)
	t.Cleanup(gs.Stop)

	method, err := prober.ResolveMethod(context.Background(), gtg, "/coldstart.echo.v1.Echo/Echo", []byte(`{"payload":"aGk="}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		c  prober.Checker
		l  *countingListener
		tg prober.Target
	}{
		{&prober.HTTP{Path: "/"}, hl, htg},
		{&prober.HTTP{Path: "/", H2C: true}, hl, htg},
		{method, gl, gtg},
		{prober.TCP{}, gl, gtg},
	} {
		before := tt.l.n.Load()
		for range attempts {
			if a, err := tt.c.Check(context.Background(), tt.tg); err != nil || !a.Ready {
				t.Fatalf("%s: Check = %+v, %v", tt.c.Name(), a, err)
			}
		}
		// A bare connect returns once the kernel has the connection, maybe
		// before the server's Accept: give Accept a moment.
		for i := 0; i < 1000 && tt.l.n.Load()-before < attempts; i++ {
			time.Sleep(time.Millisecond)
		}
		if got := tt.l.n.Load() - before; got != attempts {
			t.Errorf("%s: %d checks opened %d connections, want %d", tt.c.Name(), attempts, got, attempts)
		}
	}
}

// Without reflection on the server, a method coldstart itself knows (the
// health service) still resolves; any other is a clear error.
func TestGRPCMethodNoReflection(t *testing.T) {
	bin := testservers.Build(t)
	tg := freeTCP(t)
	inst := start(t, bin, tg, "-mode", "grpc", "-no-reflection")
	waitReady(t, inst, tg, prober.Health{})
	c, err := prober.ResolveMethod(context.Background(), tg, "/grpc.health.v1.Health/Check", []byte(`{"service":""}`))
	if err != nil {
		t.Fatalf("ResolveMethod(health, no reflection): %v", err)
	}
	if a, err := c.Check(context.Background(), tg); err != nil || !a.Ready {
		t.Errorf("Check = %+v, %v; want ready", a, err)
	}
	_, err = prober.ResolveMethod(context.Background(), tg, "/acme.orders.v1.Orders/Get", nil)
	if !errors.Is(err, prober.ErrBadProbe) || !strings.Contains(err.Error(), "no reflection") {
		t.Errorf("ResolveMethod(unknown, no reflection) = %v, want ErrBadProbe saying the server has no reflection", err)
	}
}
