package steady

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"google.golang.org/grpc"

	"github.com/coldstart-go/coldstart/internal/procfs"
	"github.com/coldstart-go/coldstart/internal/rtmetrics"
	"github.com/coldstart-go/coldstart/launch"
)

// reading is one look at the server and at this process, taken at each
// edge of a measured window.
type reading struct {
	at     time.Time
	server procfs.CPUStat
	rt     *rtmetrics.Snapshot // nil when the server serves no runtime metrics
	self   time.Duration       // this process's user+system CPU
	// handshakes is the server's count of TLS handshakes so far.
	handshakes int64
}

func (s *server) read(ctx context.Context, end bool) (reading, error) {
	var r reading
	// The runtime metrics fetch is an HTTP request to the server: keep its
	// CPU outside the window (fetch before the CPU reading at the start,
	// after it at the end).
	fetch := func() {
		if s.addrs.debug.Address == "" {
			return
		}
		if snap, err := rtmetrics.Fetch(ctx, s.addrs.debug.Address); err == nil {
			r.rt = &snap
		}
	}
	if !end {
		fetch()
	}
	if s.metered {
		cpu, err := procfs.Host.CPU(s.inst.PID())
		if err != nil {
			return r, fmt.Errorf("read %s server CPU: %w", s.arm, err)
		}
		r.server = cpu
	}
	r.self = selfCPU()
	r.handshakes = s.handshakes.Load()
	r.at = time.Now()
	if end {
		fetch()
	}
	return r, nil
}

// selfCPU is this process's user+system CPU time, all threads
// (getrusage(RUSAGE_SELF), microsecond resolution).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// newTransport connects a step's load to s: its plain transport, or with
// Config.ReconnectEvery one whose connections are renewed (reconnecting).
func newTransport(ctx context.Context, cfg Config, s *server, st step, payload []byte) (transport, error) {
	if cfg.ReconnectEvery > 0 {
		one := st
		one.conns = 1
		return newReconnecting(ctx, st.conns, cfg.ReconnectEvery, func(ctx context.Context) (transport, error) {
			return dialTransport(ctx, cfg, s, one, payload)
		})
	}
	return dialTransport(ctx, cfg, s, st, payload)
}

// dialTransport makes st.conns connections of st's protocol to s, over
// TLS with cfg.TLS, their handshakes counted in s.handshakes.
func dialTransport(ctx context.Context, cfg Config, s *server, st step, payload []byte) (transport, error) {
	switch st.proto {
	case GRPC:
		if s.health && st.scenario == Stream {
			return nil, errNoEchoStream(s.addrs.grpc)
		}
		if cfg.Client == ClientLean {
			return newLean(ctx, s.addrs.grpc, s.authority, st.conns, payload, st.scenario == Stream, s.health, s.call, cfg.TLS, &s.handshakes)
		}
		opt := grpcDialOptions(cfg.TLS, &s.handshakes)
		if s.authority != "" {
			opt = append(opt, grpc.WithAuthority(s.authority))
		}
		g, err := newGRPC(ctx, s.addrs.grpc, st.conns, payload, st.scenario == Stream, opt)
		if err != nil {
			return nil, err
		}
		g.health, g.call = s.health, s.call
		return g, nil
	case HTTP1:
		return newHTTP1(ctx, s.addrs.http, cfg.HTTPPath, st.conns, st.depth, payload, cfg.TLS, &s.handshakes)
	case H2C, H2:
		return newH2C(ctx, s.addrs.http, cfg.HTTPPath, st.conns, payload, cfg.TLS, &s.handshakes)
	case H3:
		return newH3(ctx, s.addrs.http, cfg.HTTPPath, st.conns, payload, cfg.TLS, &s.handshakes)
	}
	return nil, fmt.Errorf("unknown protocol %q", st.proto)
}

// runStep warms and measures one step (for a ramp: one step per rate, then
// the knee), recording each row.
func runStep(ctx context.Context, cfg Config, s *server, st step, record func(Row) error) error {
	pr, err := prepareStep(ctx, cfg, s, st)
	if err != nil {
		return err
	}
	defer pr.close()
	sctx, callers := pr.sctx, pr.callers
	if st.scenario != Ramp {
		_, err := s.measure(ctx, sctx, cfg, st, callers, record)
		return err
	}
	// Ramp: raise the rate until p99 or the error rate crosses its limit,
	// or the rate asked for is no longer achieved.
	var knee *Row
	for rate := cfg.Rate; rate <= cfg.RampMax; rate += cfg.RampStep {
		st.rate = rate
		row, err := s.measure(ctx, sctx, cfg, st, callers, record)
		if err != nil {
			return err
		}
		over := row.P99Us > float64(cfg.RampP99)/1e3 || row.ErrorRate > cfg.RampErrors || row.CallsPerS < 0.9*rate
		if over {
			fmt.Fprintf(cfg.Log, "steady: %s ramp crossed at %.0f/s (p99 %.0f µs, errors %.3f, achieved %.0f/s)\n", s.arm, rate, row.P99Us, row.ErrorRate, row.CallsPerS)
			break
		}
		knee = &row
	}
	if knee == nil {
		return nil // even the first rate was over: no knee below it
	}
	k := *knee
	k.Scenario = Knee
	return record(k)
}

// measure runs one measured window and records its row.
func (s *server) measure(ctx, sctx context.Context, cfg Config, st step, callers []caller, record func(Row) error) (Row, error) {
	fmt.Fprintf(cfg.Log, "steady: %s %s: measure\n", s.arm, st)
	podsBefore, podsErr := s.countPods(sctx)
	before, err := s.read(sctx, false)
	if err != nil {
		return Row{}, s.fail(ctx, st, err)
	}
	var o outcome
	switch st.scenario {
	case Open, Ramp:
		o = openLoop(sctx, callers, st.rate, cfg.Duration)
	default:
		if cfg.Duration > 0 {
			o = closedLoop(sctx, callers, 0, cfg.Duration, true)
		} else {
			// Bounded in count and, by WindowLimit, in time.
			lctx, cancel := context.WithTimeout(sctx, cfg.WindowLimit)
			o = closedLoop(lctx, callers, int64(cfg.Calls), 0, true)
			if lctx.Err() != nil && sctx.Err() == nil {
				fmt.Fprintf(cfg.Log, "steady: %s %s: stopped at --window-limit %v after %d calls\n", s.arm, st, cfg.WindowLimit, o.calls)
			}
			cancel()
		}
	}
	self := selfCPU()
	var after reading
	dead := isDone(s.inst)
	if !dead {
		after, err = s.read(sctx, true)
		if err != nil && !isDone(s.inst) {
			return Row{}, s.fail(ctx, st, err)
		}
	}
	after.self = self
	row := s.row(cfg, st, o, before, after)
	if s.pods != nil && podsErr == nil {
		if n, err := s.countPods(sctx); err == nil {
			row.Pods, row.ScaleEvent = &n, n != podsBefore
		}
	}
	if ctx.Err() != nil {
		// Interrupted: the window is cut short, so its figures are not
		// comparable; the rows before it are kept.
		return row, fmt.Errorf("arm %s %s: %w", s.arm, st, ctx.Err())
	}
	if err := record(row); err != nil {
		return row, err
	}
	return row, s.check(ctx, st, o)
}

func isDone(inst launch.Instance) bool {
	select {
	case <-inst.Done():
		return true
	default:
		return false
	}
}

// check turns a server that exited, or an interrupt, into the step's error.
func (s *server) check(ctx context.Context, st step, o outcome) error {
	if isDone(s.inst) {
		return fmt.Errorf("arm %s: server exited during %s after %d calls: %w", s.arm, st, o.calls, s.inst.Err())
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("arm %s %s: %w", s.arm, st, err)
	}
	return nil
}

// fail explains a setup error, preferring the server's exit as the cause.
func (s *server) fail(ctx context.Context, st step, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("arm %s %s: %w", s.arm, st, ctx.Err())
	}
	// A failed connect or /proc read is most often the server dying, its
	// exit not yet reaped: give that a moment to show.
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case <-s.inst.Done():
		return fmt.Errorf("arm %s: server exited during %s: %w", s.arm, st, s.inst.Err())
	case <-t.C:
	}
	return fmt.Errorf("arm %s %s: %w", s.arm, st, err)
}

func us(h *hdrhistogram.Histogram, q float64) float64 {
	return float64(h.ValueAtQuantile(q)) / 1e3
}

func (s *server) row(cfg Config, st step, o outcome, before, after reading) Row {
	r := Row{
		Arm:            s.arm,
		Budget:         s.budget,
		Protocol:       st.proto,
		Scenario:       st.scenario,
		PayloadBytes:   st.payload,
		Concurrency:    st.concurrency,
		Conns:          st.conns,
		Depth:          st.depth,
		RateReq:        st.rate,
		Calls:          o.calls,
		Seconds:        o.elapsed.Seconds(),
		Errors:         o.errors,
		FirstError:     o.first,
		TLS:            cfg.TLS != nil,
		ReconnectEvery: cfg.ReconnectEvery,
	}
	if cfg.TLS != nil && !after.at.IsZero() {
		n := after.handshakes - before.handshakes
		r.TLSHandshakes = &n
		if o.elapsed > 0 {
			ps := float64(n) / o.elapsed.Seconds()
			r.TLSHandshakesPerS = &ps
		}
	}
	if st.proto == GRPC {
		r.Client, r.ErrorCodes = cfg.Client, o.codes
		if s.health {
			r.Method, r.PayloadBytes = healthMethod, 0
		}
		if s.call != nil {
			// The payload is the mean marshalled request.
			r.Method, r.PayloadBytes, r.MetadataKeys = s.call.method, s.call.bytes, s.call.keys()
		}
	}
	if o.elapsed > 0 {
		r.CallsPerS = float64(o.calls) / o.elapsed.Seconds()
	}
	if o.calls > 0 {
		r.ErrorRate = float64(o.errors) / float64(o.calls)
	}
	if h := o.latency; h != nil && h.TotalCount() > 0 {
		r.P50Us, r.P90Us, r.P99Us, r.P999Us = us(h, 50), us(h, 90), us(h, 99), us(h, 99.9)
		r.MaxUs = float64(h.Max()) / 1e3
	}
	if h := o.service; h != nil && h.TotalCount() > 0 {
		r.ServiceP50Us, r.ServiceP99Us = us(h, 50), us(h, 99)
		r.ServiceMaxUs = float64(h.Max()) / 1e3
	}
	if o.calls > 0 {
		n := float64(o.calls)
		r.ClientCPUUsPerCall = float64(after.self-before.self) / 1e3 / n
		if !after.at.IsZero() && s.metered {
			c := (after.server.Seconds() - before.server.Seconds()) * 1e6 / n
			r.ServerCPUUsPerCall = &c
		}
		if before.rt != nil && after.rt != nil {
			a := float64(after.rt.AllocBytes-before.rt.AllocBytes) / n
			g := after.rt.GCCycles - before.rt.GCCycles
			r.AllocBytesPerCall, r.GCCycles = &a, &g
			if after.rt.GCCPUSeconds > 0 {
				gc := (after.rt.GCCPUSeconds - before.rt.GCCPUSeconds) * 1e6 / n
				r.GCCPUUsPerCall = &gc
			}
		}
	}
	if after.rt != nil {
		h := after.rt.HeapBytes
		r.GoMaxProcs, r.HeapBytes = after.rt.GoMaxProcs, &h
	}
	if lim := s.cpuLimit; lim > 0 && r.ServerCPUUsPerCall != nil && r.Seconds > 0 {
		if r.GoMaxProcs > 0 {
			lim = min(lim, float64(r.GoMaxProcs))
		}
		share := r.ServerCPUs() / lim
		r.ServerCPULimit, r.ServerCPUShare = lim, &share
	}
	if !after.at.IsZero() && s.metered {
		// A failed read stays nil (null, not a made-up 0); so does a
		// reading /proc could not complete (Mem.Valid).
		if m, err := procfs.Host.Mem(s.inst.PID()); err == nil && m.Valid {
			hwm, rss, pss := m.HWM, m.RSS, m.PSS
			r.PeakRSSBytes, r.RSSBytes, r.PSSBytes = &hwm, &rss, &pss
		}
	}
	return r
}

// countPods counts the target's instances (0, nil when not counted).
func (s *server) countPods(ctx context.Context) (int, error) {
	if s.pods == nil {
		return 0, nil
	}
	return s.pods(ctx)
}
