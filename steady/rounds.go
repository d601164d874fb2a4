package steady

import (
	"context"
	"fmt"
	"math"

	"github.com/coldstart-go/coldstart/budget"
	"github.com/coldstart-go/coldstart/internal/noise"
	"github.com/coldstart-go/coldstart/internal/stats"
)

// DefaultRounds is the number of measured windows per arm and step when
// Config.Rounds is 0.
const DefaultRounds = 5

// DefaultMaxRounds is the cap on a step's rounds a front end offers with
// Config.Precision (steady run --rounds auto --max-rounds): six times
// DefaultRounds, so a step that never settles costs at most that much
// more than a fixed run.
const DefaultMaxRounds = 30

// Why a step run with Config.Precision stopped (Stop.Reason, and the
// step rows' Stopped).
const (
	StopPrecision   = "precision"   // every watched median's interval was within Precision
	StopMaxRounds   = "max-rounds"  // MaxRounds rounds were measured first
	StopInterrupted = "interrupted" // the context was cancelled: the rounds finished are kept
)

// Figures Config.Precision watches (Stop.WidestFigure).
const (
	FigureCallsPerS = "calls/s"
	FigureServerCPU = "server CPU per call"
)

// Stop is why one step's rounds, run with Config.Precision, stopped, and
// where they stood then.
type Stop struct {
	Budget string `json:"budget"`
	// Step names the step as progress lines do ("grpc sequential 8B
	// c=1 conns=1 depth=1"); the steps of several protocols measured in
	// the same rounds are named one after another, comma-separated.
	Step   string `json:"step"`
	Reason string `json:"reason"`
	// Rounds is the number of rounds finished.
	Rounds    int     `json:"rounds"`
	Precision float64 `json:"precision"`
	MaxRounds int     `json:"max_rounds"`
	// WidestHalfWidth is the widest watched median interval's half-width
	// relative to its median (0.03 = ±3%); nil when one had no interval
	// yet. WidestArm and WidestFigure name it, and WidestProtocol its
	// protocol when the rounds interleaved several.
	WidestHalfWidth *float64 `json:"widest_half_width"`
	WidestArm       string   `json:"widest_arm,omitempty"`
	WidestProtocol  string   `json:"widest_protocol,omitempty"`
	WidestFigure    string   `json:"widest_figure,omitempty"`
}

// String says why the step stopped, for stderr.
func (s Stop) String() string {
	w := "no interval yet"
	if s.WidestHalfWidth != nil {
		w = fmt.Sprintf("±%.1f%%", 100**s.WidestHalfWidth)
	}
	who := s.WidestArm
	if s.WidestProtocol != "" {
		who += " " + s.WidestProtocol
	}
	at := fmt.Sprintf("widest median interval %s (%s %s)", w, who, s.WidestFigure)
	if s.WidestArm == "" {
		at = "no arm measured"
	}
	step := s.Step
	if s.Budget != "" {
		step += " under " + s.Budget
	}
	switch s.Reason {
	case StopPrecision:
		return fmt.Sprintf("%s: stopped after %d rounds: every calls/s and server CPU per call median within ±%.1f%%; %s", step, s.Rounds, 100*s.Precision, at)
	case StopMaxRounds:
		return fmt.Sprintf("%s: stopped at the cap of %d rounds before every median was within ±%.1f%%; %s", step, s.MaxRounds, 100*s.Precision, at)
	}
	return fmt.Sprintf("%s: interrupted after %d rounds, kept; %s", step, s.Rounds, at)
}

// maxRounds is the most rounds a step runs: Rounds, or MaxRounds with
// Precision set.
func (c Config) maxRounds() int {
	if c.Precision > 0 {
		return c.MaxRounds
	}
	return c.Rounds
}

// widest fills s's widest watched median interval over the units'
// rounds (stats.Widest over each unit's calls/s, and its server CPU per
// call where any round read it), and returns its half-width.
func widest(s *Stop, units []unit, rounds [][]Row, confidence float64) float64 {
	var series [][]float64
	type at struct {
		u      unit
		figure string
	}
	var names []at
	for i, rs := range rounds {
		var calls, cpu []float64
		for _, r := range rs {
			calls = append(calls, r.CallsPerS)
			if v, ok := deref(r.ServerCPUUsPerCall); ok && !math.IsNaN(v) {
				cpu = append(cpu, v)
			}
		}
		series, names = append(series, calls), append(names, at{units[i], FigureCallsPerS})
		if len(cpu) > 0 {
			series, names = append(series, cpu), append(names, at{units[i], FigureServerCPU})
		}
	}
	worst, i := stats.Widest(series, confidence)
	s.WidestHalfWidth, s.WidestArm, s.WidestProtocol, s.WidestFigure = nil, "", "", ""
	if i >= 0 {
		s.WidestArm, s.WidestFigure = names[i].u.s.arm, names[i].figure
		if len(protocolsOf(units)) > 1 {
			s.WidestProtocol = string(names[i].u.st.proto)
		}
		if !math.IsInf(worst, 1) {
			s.WidestHalfWidth = &worst
		}
	}
	return worst
}

// prepared is one arm's load for one step, connected and warmed, ready for
// its measured windows.
type prepared struct {
	s       *server
	st      step
	sctx    context.Context
	cancel  context.CancelFunc
	tr      transport
	callers []caller
}

func (p *prepared) close() {
	if p.tr != nil {
		p.tr.close()
	}
	p.cancel()
}

// prepareStep connects one arm's callers for a step and warms the server
// with cfg.Warmup uncounted calls.
func prepareStep(ctx context.Context, cfg Config, s *server, st step) (*prepared, error) {
	sctx, cancel := context.WithCancel(ctx)
	p := &prepared{s: s, st: st, sctx: sctx, cancel: cancel}
	// The step stops when the server exits, so a dead server does not spin
	// the workers through the rest of the window.
	go func() {
		select {
		case <-s.inst.Done():
			cancel()
		case <-sctx.Done():
		}
	}()
	payload := make([]byte, st.payload)
	for i := range payload {
		payload[i] = byte('a' + i%26)
	}
	var err error
	if p.tr, err = newTransport(sctx, cfg, s, st, payload); err != nil {
		p.close()
		return nil, s.fail(ctx, st, err)
	}
	p.callers = make([]caller, st.concurrency)
	for i := range p.callers {
		if p.callers[i], err = p.tr.caller(sctx, i); err != nil {
			p.close()
			return nil, s.fail(ctx, st, err)
		}
	}
	fmt.Fprintf(cfg.Log, "steady: %s %s: warmup %d calls\n", s.arm, st, cfg.Warmup)
	if cfg.Warmup > 0 {
		o := closedLoop(sctx, p.callers, int64(cfg.Warmup), 0, false)
		if err := s.check(ctx, st, o); err != nil {
			p.close()
			return nil, err
		}
	}
	return p, nil
}

// runBudgetRounds measures every arm under one budget in rounds: each
// arm's server is started once and warmed per step; then, per group of
// steps (stepGroups: one step per protocol and connection shape), rounds
// go round-robin over the arms' steps (stepRounds).
func runBudgetRounds(ctx context.Context, cfg Config, p *pin, b budget.Budget, record func(Row) error) error {
	servers := make([]*server, 0, len(cfg.Arms))
	defer func() {
		for _, s := range servers {
			s.stop()
		}
	}()
	for _, a := range cfg.Arms {
		s, err := startArm(ctx, cfg, p, a, b)
		if err != nil {
			return err
		}
		servers = append(servers, s)
	}
	return runServers(ctx, cfg, servers, record)
}

// runServers runs every step on the ready servers, in rounds: the steps
// of one group (stepGroups) share their rounds.
func runServers(ctx context.Context, cfg Config, servers []*server, record func(Row) error) error {
	for _, g := range stepGroups(cfg) {
		if g[0].scenario == Ramp {
			// A ramp searches for a knee rather than measuring one
			// window: it runs once per arm, as before rounds.
			for _, st := range g {
				for _, s := range servers {
					if err := runStep(ctx, cfg, s, st, record); err != nil {
						return err
					}
				}
			}
			continue
		}
		var units []unit
		for _, st := range g {
			for _, s := range servers {
				units = append(units, unit{s, st})
			}
		}
		if err := stepRounds(ctx, cfg, units, record); err != nil {
			return err
		}
	}
	return nil
}

// stepGroups are the steps of every protocol and payload, gathered into
// the groups that share their rounds: the steps of one scenario, payload,
// concurrency and rate, whatever their protocol and connection shape, so
// that each round measures every protocol once and the protocols pair by
// round as the arms do. Groups come in the order of their first step
// (payload, then protocol, then the protocol's steps), and so do their
// steps.
func stepGroups(cfg Config) [][]step {
	type key struct {
		scenario    Scenario
		payload     int
		concurrency int
		rate        float64
	}
	var keys []key
	groups := map[key][]step{}
	for _, size := range cfg.Payloads {
		for _, proto := range cfg.Protocols {
			for _, st := range steps(cfg, proto) {
				st.payload = size
				k := key{st.scenario, st.payload, st.concurrency, st.rate}
				if _, ok := groups[k]; !ok {
					keys = append(keys, k)
				}
				groups[k] = append(groups[k], st)
			}
		}
	}
	out := make([][]step, len(keys))
	for i, k := range keys {
		out[i] = groups[k]
	}
	return out
}

// unit is one arm's step of a group: one window of each unit per round.
type unit struct {
	s  *server
	st step
}

// protocolsOf lists the protocols of units, in their order.
func protocolsOf(units []unit) []Protocol {
	var out []Protocol
	for _, u := range units {
		if !known(out, u.st.proto) {
			out = append(out, u.st.proto)
		}
	}
	return out
}

// stepRounds measures units in rounds: round-robin over the units, the
// order rotated by one each round (A B C, B C A, C A B, ...), one
// measured window per unit per round. Each window is recorded as it ends
// (Row.Round > 0), then each unit's row of medians over the rounds
// (Row.Round == 0, RoundStats filled); when the units span several
// protocols, every row names them (Row.RoundProtocols). An interrupted
// group records the medians of the rounds it finished before returning.
func stepRounds(ctx context.Context, cfg Config, units []unit, record func(Row) error) (err error) {
	var together []Protocol
	if ps := protocolsOf(units); len(ps) > 1 {
		together = ps
	}
	preps := make([]*prepared, len(units))
	defer func() {
		for _, p := range preps {
			if p != nil {
				p.close()
			}
		}
	}()
	for i, u := range units {
		if preps[i], err = prepareStep(ctx, cfg, u.s, u.st); err != nil {
			return err
		}
	}
	name := ""
	for i, u := range units {
		if i == 0 || u.st != units[i-1].st {
			if name != "" {
				name += ", "
			}
			name += u.st.String()
		}
	}
	rounds := make([][]Row, len(units))
	auto := cfg.Precision > 0
	var stop *Stop
	done := 0 // rounds every unit finished
	defer func() {
		if auto && stop == nil && ctx.Err() != nil {
			stop = &Stop{Reason: StopInterrupted, Rounds: done}
			whole := make([][]Row, len(rounds))
			for i, rs := range rounds {
				whole[i] = rs[:min(len(rs), done)]
			}
			widest(stop, units, whole, cfg.Confidence)
		}
		if stop != nil {
			stop.Budget, stop.Step = units[0].s.budget, name
			stop.Precision, stop.MaxRounds = cfg.Precision, cfg.MaxRounds
			if cfg.Stopped != nil {
				if serr := cfg.Stopped(*stop); serr != nil && err == nil {
					err = fmt.Errorf("record stop: %w", serr)
				}
			}
		}
		// The medians of the rounds finished, also when a round failed or
		// the run was interrupted.
		for _, rs := range rounds {
			if len(rs) == 0 {
				continue
			}
			row := SummarizeRounds(rs, cfg.Confidence)
			if stop != nil {
				row.Stopped, row.Precision, row.MaxRounds = stop.Reason, stop.Precision, stop.MaxRounds
			}
			if rerr := record(row); rerr != nil && err == nil {
				err = rerr
			}
		}
	}()
	n := len(units)
	last := cfg.maxRounds()
	for r := 0; r < last; r++ {
		for k := 0; k < n; k++ {
			i := (k + r) % n
			pr := preps[i]
			snap, nerr := noise.Host.Take()
			var row Row
			_, merr := pr.s.measure(ctx, pr.sctx, cfg, pr.st, pr.callers, func(w Row) error {
				w.Round, w.RoundProtocols = r+1, together
				if nerr == nil {
					if win, err := noise.Host.Since(snap); err == nil {
						// The server is our child but not yet waited for:
						// its CPU in the window is ours, not other work.
						if w.ServerCPUUsPerCall != nil {
							win = win.Less(*w.ServerCPUUsPerCall * float64(w.Calls) / 1e6)
						}
						w.Noise = &win
					}
				}
				row = w
				return record(w)
			})
			if row.Round > 0 {
				rounds[i] = append(rounds[i], row)
			}
			if merr != nil {
				return merr
			}
		}
		done = r + 1
		cfg.reportStep(fmt.Sprintf("steady: %s round %d/%d done", name, done, last))
		if !auto {
			continue
		}
		s := &Stop{Rounds: done}
		switch (stats.AutoStop{Precision: cfg.Precision, Max: last}).After(done, widest(s, units, rounds, cfg.Confidence)) {
		case stats.Precise:
			s.Reason = StopPrecision
		case stats.AtCap:
			s.Reason = StopMaxRounds
		default:
			continue
		}
		stop = s
		cfg.skipSteps(last - done) // this step's rounds not run
		break
	}
	return nil
}

// SummarizeRounds reduces one arm's rounds of one step to a row of medians
// with their intervals at the confidence level (0 = 95%). Readings that
// failed (nil) are left out of their medians and counted as missing;
// errors are summed.
func SummarizeRounds(rs []Row, confidence float64) Row {
	if confidence == 0 {
		confidence = stats.DefaultConfidence
	}
	out := rs[0]
	out.Round, out.Noise = 0, nil
	out.RoundStats = RoundStats{Rounds: len(rs), Confidence: confidence}
	col := func(get func(Row) (float64, bool)) []float64 {
		var xs []float64
		for _, r := range rs {
			if v, ok := get(r); ok && !math.IsNaN(v) {
				xs = append(xs, v)
			}
		}
		return xs
	}
	med := func(xs []float64) float64 {
		if len(xs) == 0 {
			return 0
		}
		return stats.MedianCI(xs, confidence).Value
	}
	ci := func(xs []float64) *Interval {
		if len(xs) == 0 {
			return nil
		}
		m := stats.MedianCI(xs, confidence)
		iv := &Interval{}
		if m.Finite() {
			lo, hi := m.Low, m.High
			iv.Low, iv.High = &lo, &hi
		}
		return iv
	}
	f := func(get func(Row) float64) []float64 {
		return col(func(r Row) (float64, bool) { return get(r), true })
	}
	calls := f(func(r Row) float64 { return r.CallsPerS })
	p50 := f(func(r Row) float64 { return r.P50Us })
	p99 := f(func(r Row) float64 { return r.P99Us })
	out.CallsPerS, out.CallsPerSCI = med(calls), ci(calls)
	out.P50Us, out.P50UsCI = med(p50), ci(p50)
	out.P99Us, out.P99UsCI = med(p99), ci(p99)
	out.P90Us = med(f(func(r Row) float64 { return r.P90Us }))
	out.P999Us = med(f(func(r Row) float64 { return r.P999Us }))
	out.Seconds = med(f(func(r Row) float64 { return r.Seconds }))
	out.Calls = int64(med(f(func(r Row) float64 { return float64(r.Calls) })))
	out.ClientCPUUsPerCall = med(f(func(r Row) float64 { return r.ClientCPUUsPerCall }))
	out.ServiceP50Us = med(f(func(r Row) float64 { return r.ServiceP50Us }))
	out.ServiceP99Us = med(f(func(r Row) float64 { return r.ServiceP99Us }))
	maxUs, svcMax := 0.0, 0.0
	var errs int64
	first := ""
	out.ErrorCodes, out.ServerCPULimit = nil, 0
	for _, r := range rs {
		maxUs, svcMax = max(maxUs, r.MaxUs), max(svcMax, r.ServiceMaxUs)
		out.ServerCPULimit = max(out.ServerCPULimit, r.ServerCPULimit)
		errs += r.Errors
		for code, n := range r.ErrorCodes {
			if out.ErrorCodes == nil {
				out.ErrorCodes = map[string]int64{}
			}
			out.ErrorCodes[code] += n
		}
		if first == "" {
			first = r.FirstError
		}
		if r.ServerCPUUsPerCall == nil || r.RSSBytes == nil {
			out.Missing++
		}
		if r.Noise != nil && r.Noise.Busy {
			out.BusyRounds++
		}
	}
	out.MaxUs, out.ServiceMaxUs, out.Errors, out.FirstError = maxUs, svcMax, errs, first
	var total int64
	for _, r := range rs {
		total += r.Calls
	}
	out.ErrorRate = 0
	if total > 0 {
		out.ErrorRate = float64(errs) / float64(total)
	}
	cpu := col(func(r Row) (float64, bool) { return deref(r.ServerCPUUsPerCall) })
	out.ServerCPUUsPerCall, out.ServerCPUUsPerCallCI = medPtr(cpu, med), ci(cpu)
	out.ServerCPUShare = medPtr(col(func(r Row) (float64, bool) { return deref(r.ServerCPUShare) }), med)
	out.AllocBytesPerCall = medPtr(col(func(r Row) (float64, bool) { return deref(r.AllocBytesPerCall) }), med)
	out.GCCPUUsPerCall = medPtr(col(func(r Row) (float64, bool) { return deref(r.GCCPUUsPerCall) }), med)
	out.PeakRSSBytes = medInt(col(func(r Row) (float64, bool) { return derefInt(r.PeakRSSBytes) }), med)
	out.RSSBytes = medInt(col(func(r Row) (float64, bool) { return derefInt(r.RSSBytes) }), med)
	out.PSSBytes = medInt(col(func(r Row) (float64, bool) { return derefInt(r.PSSBytes) }), med)
	out.TLSHandshakes = medInt(col(func(r Row) (float64, bool) { return derefInt(r.TLSHandshakes) }), med)
	out.TLSHandshakesPerS = medPtr(col(func(r Row) (float64, bool) { return deref(r.TLSHandshakesPerS) }), med)
	if gc := col(func(r Row) (float64, bool) {
		if r.GCCycles == nil {
			return 0, false
		}
		return float64(*r.GCCycles), true
	}); len(gc) > 0 {
		g := uint64(med(gc))
		out.GCCycles = &g
	}
	return out
}

func deref(p *float64) (float64, bool) {
	if p == nil {
		return 0, false
	}
	return *p, true
}

func derefInt(p *int64) (float64, bool) {
	if p == nil {
		return 0, false
	}
	return float64(*p), true
}

func medPtr(xs []float64, med func([]float64) float64) *float64 {
	if len(xs) == 0 {
		return nil
	}
	v := med(xs)
	return &v
}

func medInt(xs []float64, med func([]float64) float64) *int64 {
	if len(xs) == 0 {
		return nil
	}
	v := int64(med(xs))
	return &v
}
