package steady

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"google.golang.org/grpc/status"
)

// caller makes one request and waits for its answer. A caller belongs to
// one worker goroutine and reuses its request and response buffers, so a
// call allocates only what the protocol library itself does.
type caller interface {
	call(ctx context.Context) error
}

// transport is the connections of one step; it hands each worker a caller.
type transport interface {
	caller(ctx context.Context, worker int) (caller, error)
	close()
}

// Histograms are in nanoseconds, from 1 µs to 100 s, at 3 significant
// digits.
const (
	histLow  = 1_000
	histHigh = 100_000_000_000
	histSig  = 3
)

func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(histLow, histHigh, histSig) }

// observe adds one latency, clamped into the histogram's range so that no
// value is silently dropped.
func observe(h *hdrhistogram.Histogram, d time.Duration) {
	v := int64(d)
	if v < histLow {
		v = histLow
	}
	if v > histHigh {
		v = histHigh
	}
	_ = h.RecordValue(v)
}

// outcome is what one load window measured.
type outcome struct {
	latency *hdrhistogram.Histogram // from the intended send (open) or the send (closed)
	service *hdrhistogram.Histogram // open loop: from the actual send; nil for closed loop
	calls   int64                   // completed, errors included
	errors  int64
	first   string           // text of the first error
	codes   map[string]int64 // gRPC errors by status code (nil = none)
	elapsed time.Duration
}

// errs collects error counts, the first error's text and, for gRPC
// errors, the count per status code across workers.
type errs struct {
	n     atomic.Int64
	once  sync.Once
	first string
	mu    sync.Mutex
	codes map[string]int64
}

func (e *errs) add(err error) {
	e.n.Add(1)
	e.once.Do(func() { e.first = err.Error() })
	if s, ok := status.FromError(err); ok {
		e.mu.Lock()
		if e.codes == nil {
			e.codes = map[string]int64{}
		}
		e.codes[s.Code().String()]++
		e.mu.Unlock()
	}
}

// stopper turns ctx's cancellation into a flag workers can test without a
// lock on every call.
func stopper(ctx context.Context) (*atomic.Bool, func()) {
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			stop.Store(true)
		case <-done:
		}
	}()
	return &stop, func() { close(done) }
}

// closedLoop runs every caller back to back: each worker sends its next call
// when its previous answer arrives. It stops after calls calls in all (when
// d is 0) or after d, or when ctx is done.
func closedLoop(ctx context.Context, callers []caller, calls int64, d time.Duration, measure bool) outcome {
	stop, release := stopper(ctx)
	defer release()
	var left atomic.Int64
	left.Store(calls)
	var e errs
	hists := make([]*hdrhistogram.Histogram, len(callers))
	counts := make([]int64, len(callers))
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for i, c := range callers {
		if measure {
			hists[i] = newHist()
		}
		wg.Add(1)
		go func(i int, c caller, h *hdrhistogram.Histogram) {
			defer wg.Done()
			var n int64
			for !stop.Load() {
				if d > 0 {
					if !time.Now().Before(deadline) {
						break
					}
				} else if left.Add(-1) < 0 {
					break
				}
				t := time.Now()
				err := c.call(ctx)
				lat := time.Since(t)
				if err != nil {
					if stop.Load() {
						break // cancelled mid-call: not the server's error
					}
					e.add(err)
				}
				n++
				if h != nil {
					observe(h, lat)
				}
			}
			counts[i] = n
		}(i, c, hists[i])
	}
	wg.Wait()
	o := outcome{elapsed: time.Since(start), errors: e.n.Load(), first: e.first, codes: e.codes}
	for i := range callers {
		o.calls += counts[i]
	}
	if measure {
		o.latency = newHist()
		for _, h := range hists {
			o.latency.Merge(h)
		}
	}
	return o
}

// openLoop sends calls at rate per second for d, on a schedule fixed in
// advance: call i is due at start + i/rate whatever the answers do. Each
// call's latency runs from its due time, so a stalled server shows in the
// percentiles rather than slowing the schedule (no coordinated omission);
// its service time runs from when it was really sent. len(callers) bounds
// the calls in flight: a due call with no free caller waits, and the wait
// counts.
func openLoop(ctx context.Context, callers []caller, rate float64, d time.Duration) outcome {
	stop, release := stopper(ctx)
	defer release()
	n := int64(rate * d.Seconds())
	interval := float64(time.Second) / rate
	due := make(chan time.Duration, 1024)
	start := time.Now()
	go func() {
		defer close(due)
		// The schedule wakes on a periodic timerfd read through the
		// netpoller: Go's own timers round sub-millisecond sleeps up to about
		// 1 ms (epoll's timeout is in ms), which would add their error to
		// every latency, and a blocking nanosleep would cost a thread
		// hand-off per call. A wake-up sends every call due by then.
		tick, err := newTicker(time.Duration(interval))
		if err != nil {
			tick = nil // fall back to Go's timers
		} else {
			defer tick.Close()
		}
		for i := int64(0); i < n; {
			now := time.Since(start)
			for ; i < n; i++ {
				at := time.Duration(float64(i) * interval)
				if at > now {
					break
				}
				due <- at
			}
			if i >= n || stop.Load() {
				return
			}
			if tick == nil || tick.wait() != nil {
				tick = nil
				time.Sleep(time.Duration(float64(i)*interval) - time.Since(start))
			}
		}
	}()
	var e errs
	lat := make([]*hdrhistogram.Histogram, len(callers))
	svc := make([]*hdrhistogram.Histogram, len(callers))
	counts := make([]int64, len(callers))
	lastDone := make([]time.Duration, len(callers))
	var wg sync.WaitGroup
	for i, c := range callers {
		lat[i], svc[i] = newHist(), newHist()
		wg.Add(1)
		go func(i int, c caller) {
			defer wg.Done()
			var count int64
			var last time.Duration
			for at := range due {
				if stop.Load() {
					continue // drain the schedule
				}
				sent := time.Since(start)
				err := c.call(ctx)
				done := time.Since(start)
				if err != nil {
					if stop.Load() {
						continue
					}
					e.add(err)
				}
				count++
				last = done
				observe(lat[i], done-at)
				observe(svc[i], done-sent)
			}
			counts[i], lastDone[i] = count, last
		}(i, c)
	}
	wg.Wait()
	o := outcome{latency: newHist(), service: newHist(), errors: e.n.Load(), first: e.first, codes: e.codes}
	for i := range callers {
		o.calls += counts[i]
		o.latency.Merge(lat[i])
		o.service.Merge(svc[i])
		o.elapsed = max(o.elapsed, lastDone[i])
	}
	return o
}
