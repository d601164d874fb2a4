package report

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/coldstart-go/coldstart/internal/stats"
	"github.com/coldstart-go/coldstart/record"
)

// BurstSummary is one arm under one budget at one burst size, as `coldstart
// run --burst` records it (kind "burst_summary"); Burst one burst (kind
// "burst").
type (
	BurstSummary = record.BurstSummary
	Burst        = record.Burst
)

// burstSums are c's burst summaries: as recorded, or, for a campaign
// interrupted before it wrote them, made from its bursts at the report's
// baseline and level.
func (r *Report) burstSums(c *Campaign) []BurstSummary {
	if len(c.BurstSummaries) > 0 || len(c.Bursts) == 0 {
		return c.BurstSummaries
	}
	size := map[string]int64{}
	for _, a := range c.Artifacts {
		size[a.Arm] = a.SizeBytes
	}
	return record.SummarizeBursts(c.Bursts, size, r.Baseline, r.confidence(), r.minEffect())
}

// burstSection writes, per campaign with bursts and per budget: a table of
// every arm at every N (the instances' p50, p99 and max spawn → first RPC,
// when all N served, that against the baseline arm's, the p50 against
// N=1's with the knee marked, the group's CPU and memory peak), the plot
// of latency against N, and one recommendation line at the largest N.
func (r *Report) burstSection(m *mdw, plots func(*Campaign, string)) {
	if !r.has(func(c *Campaign) bool { return len(c.Bursts) > 0 || len(c.BurstSummaries) > 0 }) {
		return
	}
	m.p("## Bursts: many starts at once in one budget\n\n")
	m.p("`coldstart run --burst` starts N instances of an arm at the same instant inside one budget they share, as the pods "+
		"on a node share its allocatable: one cgroup carries the budget's CPU quota, CPU set and memory limit, and each "+
		"instance runs in a child cgroup of its own, probed on its own fresh channel. Figures are medians over rounds; in "+
		"each round every N ran and, per N, every arm, so comparisons pair by round. p50, p99 and max are over one burst's "+
		"instances, each from its own spawn to its first ready RPC; *all* is from the burst's first spawn until all N serve. "+
		"CPU and peak are the whole group's. **Knee**: the smallest N whose p50 is more than %g× N=1's with significance "+
		"(the lower bound of that ratio's %.0f%% interval above %g).", record.KneeFactor, 100*r.confidence(), record.KneeFactor)
	if r.has(func(c *Campaign) bool { return c.Knative() && len(c.Bursts) > 0 }) {
		m.p(" On Knative (`run --on knative --parallel`, budget knative), N is Services of one arm scaled from zero at once, " +
			"each from one t0 to its first ready RPC through the activator; the pods' CPU and memory are not coldstart's to read there.")
	}
	m.p("\n\n")
	for _, c := range r.Campaigns {
		sums := r.burstSums(c)
		if len(sums) == 0 && !(c.Knative() && len(c.Bursts) > 0) {
			continue // a Knative campaign whose every N failed still says why
		}
		for _, b := range budgetsOf(sums, func(s BurstSummary) string { return s.Budget }) {
			var rows [][]string
			var in []BurstSummary
			for _, s := range sums {
				if s.Budget != b {
					continue
				}
				in = append(in, s)
				n1 := burstVs(s.VsN1.Vs())
				if s.Knee {
					n1 += " **knee**"
				}
				all := ms(s.AllReadyMs)
				if s.AllReadyLowMs != nil && s.AllReadyHiMs != nil {
					all += " [" + ms(*s.AllReadyLowMs) + "–" + ms(*s.AllReadyHiMs) + "]"
				}
				rows = append(rows, []string{s.Arm, strconv.Itoa(s.N), strconv.Itoa(s.Runs), ms(s.P50Ms), ms(s.P99Ms), ms(s.MaxMs),
					all, burstVs(s.VsBaseline), n1, msOrDash(s.GroupCPUMs), mibOrDashP(s.GroupMemPeakBytes)})
			}
			m.p("### %s — %s\n\n", b, c.Label)
			base := in[0].VsBaseline.Baseline
			m.table([]string{"arm", "N", "rounds", "p50 ms", "p99 ms", "max ms", fmt.Sprintf("all ms [%.0f%% CI]", 100*r.confidence()),
				"all vs " + base, "p50 vs N=1", "group CPU ms", "group peak"}, rows)
			if line := burstRecommendation(b, in); line != "" {
				m.p("**Recommendation:** %s\n\n", line)
			}
		}
		r.knativeParallelSLA(m, c)
		plots(c, "burst")
		m.p("%s\n\n", provenanceLine(c))
	}
}

// burstVs is a ratio with its interval and verdict, "baseline", or "–".
func burstVs(v record.VsBaseline) string {
	switch {
	case v.Verdict == record.VerdictBaseline:
		return "baseline"
	case v.Ratio == nil:
		return "–"
	}
	s := fmt.Sprintf("%.2f×", *v.Ratio)
	if v.CILow != nil && v.CIHigh != nil {
		s += fmt.Sprintf(" [%.2f, %.2f]", *v.CILow, *v.CIHigh)
	}
	verdict := v.Verdict
	if verdict == string(stats.NoDifference) {
		verdict = "~"
	}
	s += " " + verdict
	if v.P != nil {
		s += " (p " + pText(*v.P) + ")"
	}
	return s
}

// burstRecommendation is one line for one budget at the largest N every
// arm reached: when each arm answers its last start, soonest first, and
// what that means against the baseline arm. A difference counts only when
// significant and at least the report's smallest effect.
func burstRecommendation(budget string, sums []BurstSummary) string {
	reached := map[string]int{}
	for _, s := range sums {
		reached[s.Arm] = max(reached[s.Arm], s.N)
	}
	n := math.MaxInt
	for _, x := range reached {
		n = min(n, x)
	}
	var at []BurstSummary
	for _, s := range sums {
		if s.N == n && s.Runs > 0 {
			at = append(at, s)
		}
	}
	if len(at) == 0 {
		return ""
	}
	sort.SliceStable(at, func(i, j int) bool { return at[i].AllReadyMs < at[j].AllReadyMs })
	var times []string
	for i, s := range at {
		t := s.Arm + " after " + ms(s.AllReadyMs) + " ms"
		if i == 0 {
			t = s.Arm + " answers the last start after " + ms(s.AllReadyMs) + " ms"
		}
		times = append(times, t)
	}
	line := fmt.Sprintf("under a burst of %d at %s, %s", n, budget, strings.Join(times, "; "))
	if len(at) == 1 {
		return line + "."
	}
	best := at[0]
	v := best.VsBaseline
	base := v.Baseline
	switch {
	case v.Verdict == record.VerdictBaseline:
		beaten := true
		for _, s := range at[1:] {
			beaten = beaten && s.VsBaseline.Verdict == string(stats.Slower)
		}
		if beaten {
			return line + fmt.Sprintf(". Keep %s for bursts of %d: every other arm serves all %d significantly later.", base, n, n)
		}
		return line + fmt.Sprintf(". No arm serves all %d significantly sooner than %s.", n, base)
	case v.Verdict == string(stats.Faster) && v.Ratio != nil && 1-*v.Ratio >= stats.DefaultMinEffect:
		return line + fmt.Sprintf(". For bursts of %d, %s serves all %d sooner than %s: %s.", n, best.Arm, n, base, burstVs(v))
	}
	return line + fmt.Sprintf(". No arm serves all %d significantly sooner than %s.", n, base)
}

// burstPlots draws, per budget of c's bursts, each arm's p50 (solid) and
// max (dashed) spawn → first RPC against N, on a log2 x axis and a log y
// axis, with each arm's knee ringed.
func (r *Report) burstPlots(c *Campaign) ([]namedPlot, error) {
	sums := r.burstSums(c)
	var out []namedPlot
	for _, b := range budgetsOf(sums, func(s BurstSummary) string { return s.Budget }) {
		p := plot.New()
		p.X.Label.Text = "instances started at once, N (log2)"
		p.Y.Label.Text = "spawn → first RPC, ms (log)"
		p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
		p.Y.Tick.Marker = logTicks{}
		var arms []string
		var ns []int
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, s := range sums {
			if s.Budget != b {
				continue
			}
			if !slices.Contains(arms, s.Arm) {
				arms = append(arms, s.Arm)
			}
			if !slices.Contains(ns, s.N) {
				ns = append(ns, s.N)
			}
		}
		sort.Ints(ns)
		var knees plotter.XYs
		for i, a := range arms {
			var p50, mx plotter.XYs
			for _, s := range sums {
				if s.Budget != b || s.Arm != a || s.P50Ms <= 0 {
					continue
				}
				p50 = append(p50, plotter.XY{X: float64(s.N), Y: s.P50Ms})
				mx = append(mx, plotter.XY{X: float64(s.N), Y: max(s.MaxMs, s.P50Ms)})
				lo, hi = math.Min(lo, s.P50Ms), math.Max(hi, s.MaxMs)
				if s.Knee {
					knees = append(knees, plotter.XY{X: float64(s.N), Y: s.P50Ms})
				}
			}
			if len(p50) == 0 {
				continue
			}
			l, sc, err := plotter.NewLinePoints(p50)
			if err != nil {
				return nil, fmt.Errorf("plot %s bursts: %w", a, err)
			}
			l.Color, sc.Color, sc.Shape = plotutil.Color(i), plotutil.Color(i), plotutil.Shape(i)
			lm, err := plotter.NewLine(mx)
			if err != nil {
				return nil, fmt.Errorf("plot %s bursts: %w", a, err)
			}
			lm.Color, lm.Dashes = plotutil.Color(i), []vg.Length{vg.Points(4), vg.Points(3)}
			p.Add(l, sc, lm)
			p.Legend.Add(a+" p50", l, sc)
			p.Legend.Add(a+" max", lm)
		}
		if math.IsInf(lo, 1) {
			continue
		}
		if len(knees) > 0 {
			k, err := plotter.NewScatter(knees)
			if err != nil {
				return nil, fmt.Errorf("plot knees: %w", err)
			}
			k.Shape, k.Radius, k.Color = draw.RingGlyph{}, vg.Points(7), plotutil.Color(len(arms))
			p.Add(k)
			p.Legend.Add(fmt.Sprintf("knee: p50 > %g× N=1's", record.KneeFactor), k)
		}
		p.Add(plotter.NewGrid())
		p.X.Tick.Marker = pow2Ticks(ns)
		p.X.Min, p.X.Max = float64(ns[0])/1.3, float64(ns[len(ns)-1])*1.3
		p.Y.Min, p.Y.Max = tickFloor(lo), tickCeil(hi)
		out = append(out, namedPlot{p: p, name: "burst_" + b,
			title: fmt.Sprintf("bursts under %s: p50 (solid) and max (dashed) of spawn → first RPC against N, medians over rounds", b)})
	}
	return out, nil
}

// pow2Ticks labels the burst sizes measured on a log2 axis.
type pow2Ticks []int

func (t pow2Ticks) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for _, n := range t {
		if v := float64(n); v >= lo && v <= hi {
			ts = append(ts, plot.Tick{Value: v, Label: strconv.Itoa(n)})
		}
	}
	return ts
}
