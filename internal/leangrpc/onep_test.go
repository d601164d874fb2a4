package leangrpc

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestOneP: with one P, as steady's pinned generator runs, calls made one
// at a time (each writes at once, as the only call: see flushLocked) and
// 32 at a time on the same connection (sharing writes) each get their own
// answer, over TCP and a Unix socket.
func TestOneP(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) {
			addr := serve(t, network)
			lc := dial(t, network, addr)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			for i := 0; i < 200; i++ {
				want := fmt.Sprintf("call-%d", i)
				msg, err := lc.NewUnary("/coldstart.echo.v1.Echo/Echo", pb(t, []byte(want))).Call(ctx)
				if err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
				if got := payloadOf(t, msg); got != want {
					t.Fatalf("call %d answered %q, want %q", i, got, want)
				}
			}
			var wg sync.WaitGroup
			for w := 0; w < 32; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					want := fmt.Sprintf("worker-%d", w)
					u := lc.NewUnary("/coldstart.echo.v1.Echo/Echo", pb(t, []byte(want)))
					for i := 0; i < 100; i++ {
						msg, err := u.Call(ctx)
						if err != nil {
							t.Errorf("worker %d call %d: %v", w, i, err)
							return
						}
						if got := payloadOf(t, msg); got != want {
							t.Errorf("worker %d call %d answered %q", w, i, got)
							return
						}
					}
				}()
			}
			wg.Wait()
		})
	}
}

// TestLoneCallSlow: lone calls answered after 30 ms are answered (the
// reader waited in the netpoller), a deadline ends a lone call the server
// sits on, and Close ends one in progress; the connection serves calls
// after the deadline.
func TestLoneCallSlow(t *testing.T) {
	addr := serve(t, "tcp")
	lc := dial(t, "tcp", addr)
	u := lc.NewUnary("/coldstart.echo.v1.Echo/Echo", pb(t, []byte("sleep:30ms")))
	for i := 0; i < 3; i++ {
		msg, err := u.Call(context.Background())
		if err != nil || payloadOf(t, msg) != "sleep:30ms" {
			t.Fatalf("call %d answered after 30 ms: %q, %v", i, msg, err)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	_, err := lc.NewUnary("/coldstart.echo.v1.Echo/Echo", pb(t, []byte("sleep:1m"))).Call(ctx)
	cancel()
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("call past its deadline = %v, want DeadlineExceeded", err)
	}
	if msg, err := lc.NewUnary("/coldstart.echo.v1.Echo/Echo", pb(t, []byte("after"))).Call(context.Background()); err != nil || payloadOf(t, msg) != "after" {
		t.Fatalf("call after a deadline: %q, %v", msg, err)
	}

	done := make(chan error, 1)
	go func() {
		_, err := lc.NewUnary("/coldstart.echo.v1.Echo/Echo", pb(t, []byte("sleep:1m"))).Call(context.Background())
		done <- err
	}()
	// Closed once the call is in progress: its stream is open.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		lc.mu.Lock()
		open := len(lc.streams)
		lc.mu.Unlock()
		if open == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s the connection has %d streams open, want the sleeping call's", open)
		}
	}
	lc.Close()
	select {
	case err := <-done:
		if status.Code(err) != codes.Unavailable {
			t.Fatalf("call on a closed connection = %v, want Unavailable", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a call in progress did not end when its connection was closed")
	}
}
