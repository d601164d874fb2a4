package main

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/coldstart-go/coldstart/internal/echo"
	"github.com/coldstart-go/coldstart/internal/echo/echopb"
)

// leakyEcho is the echo service that leaks a fixed number of resident bytes
// per unary call, for soak tests: each call touches the next n bytes of an
// anonymous mapping that is never released. The mapping is outside the Go
// heap, so the garbage collector neither frees it nor grows the heap with
// it, and RSS grows by exactly n bytes per call (in whole pages).
type leakyEcho struct {
	echo.Service
	n int

	mu   sync.Mutex
	mem  []byte
	used int
}

func newLeakyEcho(n int, maxBytes int) (*leakyEcho, error) {
	mem, err := syscall.Mmap(-1, 0, maxBytes, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		return nil, fmt.Errorf("map %d bytes to leak into: %w", maxBytes, err)
	}
	// Small pages only: with transparent huge pages RSS would grow in
	// 2 MiB steps instead of n bytes per call.
	if err := syscall.Madvise(mem, 15 /* MADV_NOHUGEPAGE */); err != nil {
		return nil, fmt.Errorf("madvise MADV_NOHUGEPAGE: %w", err)
	}
	return &leakyEcho{n: n, mem: mem}, nil
}

func (l *leakyEcho) Echo(ctx context.Context, req *echopb.EchoRequest) (*echopb.EchoResponse, error) {
	l.mu.Lock()
	end := min(l.used+l.n, len(l.mem))
	for i := l.used; i < end; i += 512 {
		l.mem[i] = 1 // touching one byte makes its page resident
	}
	if end > l.used {
		l.mem[end-1] = 1
	}
	l.used = end
	l.mu.Unlock()
	return l.Service.Echo(ctx, req)
}

// slowEcho is the echo service whose unary call waits d before it
// answers: the server's CPU stays nearly idle whatever load keeps it
// busy, so a closed loop's calls/s is set by d and the calls in flight.
type slowEcho struct {
	echo.Service
	d time.Duration
}

func (s slowEcho) Echo(ctx context.Context, req *echopb.EchoRequest) (*echopb.EchoResponse, error) {
	t := time.NewTimer(s.d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.C:
	}
	return s.Service.Echo(ctx, req)
}
