package report

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Plot is one image written by Report.Plots.
type Plot struct {
	// Campaign is the Label of the campaign it shows; Kind is "coldstart",
	// "density" or "steady".
	Campaign, Kind string
	// File is the image's name in the plots directory; Title its caption.
	File, Title string
}

// Plots draws, as SVG files in dir: per cold-start campaign and budget,
// the CDF of spawn → first RPC per arm; per density campaign, PSS and RSS
// per idle instance; per steady campaign, the latency percentiles per arm
// and protocol of one step, and calls/s and server CPU per call across
// budgets. It returns the plots in the order the Markdown shows them.
func (r *Report) Plots(dir string) ([]Plot, error) { return r.PlotsAs(dir, "svg") }

// PlotsAs is Plots in another image format: "svg" or "png".
func (r *Report) PlotsAs(dir, format string) ([]Plot, error) {
	if format != "svg" && format != "png" {
		return nil, fmt.Errorf("plot format %q, want svg or png", format)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create plots dir: %w", err)
	}
	var out []Plot
	save := func(p *plot.Plot, c *Campaign, kind, name, title string) error {
		file := fileName(c.Label + "_" + name + "." + format)
		p.Title.Text = title
		if err := p.Save(16*vg.Centimeter, 10*vg.Centimeter, filepath.Join(dir, file)); err != nil {
			return fmt.Errorf("write plot %s: %w", file, err)
		}
		out = append(out, Plot{Campaign: c.Label, Kind: kind, File: file, Title: title})
		return nil
	}
	for _, c := range r.Campaigns {
		for _, b := range budgetsOf(c.Samples, func(s Sample) string { return s.Budget }) {
			p, ok, err := cdfPlot(c, b)
			if err != nil {
				return out, err
			}
			if ok {
				if err := save(p, c, "coldstart", "cdf_"+b, "spawn → first RPC, "+b+" ("+c.Label+")"); err != nil {
					return out, err
				}
			}
		}
		if len(c.Density) > 0 {
			p, err := densityPlot(c)
			if err != nil {
				return out, err
			}
			if err := save(p, c, "density", "density", "memory per idle instance ("+c.Label+")"); err != nil {
				return out, err
			}
		}
		if len(c.Traces) > 0 {
			p, ok, err := explainPlot(c)
			if err != nil {
				return out, err
			}
			if ok {
				if err := save(p, c, "explain", "phases", "start-up phases per arm ("+c.Label+")"); err != nil {
					return out, err
				}
			}
		}
		if len(c.Pull) > 0 {
			ps, err := pullPlots(c)
			if err != nil {
				return out, err
			}
			for _, pp := range ps {
				if err := save(pp.p, c, pp.name, pp.name, pp.title+" ("+c.Label+")"); err != nil {
					return out, err
				}
			}
		}
		if len(c.Soak) > 0 {
			ps, err := soakPlots(c)
			if err != nil {
				return out, err
			}
			for _, sp := range ps {
				if err := save(sp.p, c, "soak", sp.name, sp.title+" ("+c.Label+")"); err != nil {
					return out, err
				}
			}
		}
		if len(c.Steady) > 0 {
			ps, err := steadyPlots(c)
			if err != nil {
				return out, err
			}
			for _, sp := range ps {
				if err := save(sp.p, c, "steady", sp.name, sp.title+" ("+c.Label+")"); err != nil {
					return out, err
				}
			}
		}
	}
	return out, nil
}

// fileName keeps letters, digits, '.', '-' and '_'.
func fileName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			return r
		}
		return '_'
	}, s)
}

func cdfPlot(c *Campaign, budget string) (*plot.Plot, bool, error) {
	p := plot.New()
	p.X.Label.Text = "spawn → first RPC (ms)"
	p.Y.Label.Text = "fraction of cold starts"
	// The legend sits bottom right, in room made for it to the right of
	// the slowest arm's last cold start (below), where no curve runs:
	// there every curve has reached 1.
	p.Legend.Top, p.Legend.Left = false, false
	p.Legend.YOffs = vg.Centimeter / 2
	arms := budgetsOf(c.Samples, func(s Sample) string { return s.Arm })
	n := 0
	for i, arm := range arms {
		var xs []float64
		for _, s := range c.Samples {
			if s.Arm == arm && s.Budget == budget && !s.Warmup && s.Error == "" {
				xs = append(xs, s.FirstRPCMs)
			}
		}
		if len(xs) == 0 {
			continue
		}
		sort.Float64s(xs)
		pts := make(plotter.XYs, 0, 2*len(xs))
		for j, x := range xs {
			pts = append(pts, plotter.XY{X: x, Y: float64(j) / float64(len(xs))}, plotter.XY{X: x, Y: float64(j+1) / float64(len(xs))})
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, false, fmt.Errorf("plot %s %s: %w", arm, budget, err)
		}
		l.Color = plotutil.Color(i)
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(arm, l)
		n++
	}
	p.Add(plotter.NewGrid())
	if p.X.Min > 0 && p.X.Max > 10*p.X.Min {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = logTicks{}
		p.X.Label.Text = "spawn → first RPC (ms, log)"
		p.X.Max *= 4
	} else if p.X.Max > p.X.Min {
		p.X.Max += (p.X.Max - p.X.Min) * 0.6
	}
	return p, n > 0, nil
}

func densityPlot(c *Campaign) (*plot.Plot, error) {
	p := plot.New()
	p.Y.Label.Text = "MiB per idle instance"
	var names []string
	pss := make(plotter.Values, len(c.Density))
	rss := make(plotter.Values, len(c.Density))
	for i, d := range c.Density {
		names = append(names, d.Arm)
		pss[i] = float64(d.PSSBytes) / (1 << 20)
		rss[i] = float64(d.RSSBytes) / (1 << 20)
	}
	w := vg.Points(14)
	bp, err := plotter.NewBarChart(pss, w)
	if err != nil {
		return nil, fmt.Errorf("plot density: %w", err)
	}
	br, err := plotter.NewBarChart(rss, w)
	if err != nil {
		return nil, fmt.Errorf("plot density: %w", err)
	}
	bp.Color, br.Color = plotutil.Color(0), plotutil.Color(1)
	bp.Offset, br.Offset = -w/2, w/2
	p.Add(bp, br, plotter.NewGrid())
	p.Legend.Add("PSS", bp)
	p.Legend.Add("RSS", br)
	p.Legend.Top = true
	p.NominalX(names...)
	headroom(p)
	return p, nil
}

type namedPlot struct {
	p           *plot.Plot
	name, title string
}

func steadyPlots(c *Campaign) ([]namedPlot, error) {
	var out []namedPlot
	// Latency percentiles per arm and protocol, one plot per budget, for
	// the sequential step (else the first step) of each.
	for _, b := range budgetsOf(c.Steady, func(s SteadyRow) string { return s.Budget }) {
		var rows []SteadyRow
		seen := map[string]bool{}
		for _, pref := range []string{"sequential", ""} {
			for _, s := range c.Steady {
				k := s.Arm + "/" + s.Protocol
				if s.Budget == b && (pref == "" || s.Scenario == pref) && !seen[k] && s.P50Us > 0 {
					seen[k] = true
					rows = append(rows, s)
				}
			}
		}
		if len(rows) == 0 {
			continue
		}
		p := plot.New()
		p.Y.Label.Text = "latency (µs, log)"
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = logTicks{}
		p.NominalX("p50", "p90", "p99", "p99.9", "max")
		p.Legend.Top, p.Legend.Left = true, true
		for i, s := range rows {
			pts := plotter.XYs{{X: 0, Y: s.P50Us}, {X: 1, Y: s.P90Us}, {X: 2, Y: s.P99Us}, {X: 3, Y: s.P999Us}, {X: 4, Y: s.MaxUs}}
			for j := range pts {
				pts[j].Y = max(pts[j].Y, 0.1) // a log scale has no zero
			}
			l, sc, err := plotter.NewLinePoints(pts)
			if err != nil {
				return nil, fmt.Errorf("plot %s latency: %w", s.Arm, err)
			}
			l.Color, sc.Color = plotutil.Color(i), plotutil.Color(i)
			sc.Shape = plotutil.Shape(i)
			p.Add(l, sc)
			p.Legend.Add(fmt.Sprintf("%s %s %s", s.Arm, s.Protocol, shapeOf(s)), l, sc)
		}
		p.Add(plotter.NewGrid())
		out = append(out, namedPlot{p, "latency_" + b, "latency percentiles, " + b})
	}
	// Throughput and server CPU per call across budgets: per arm and
	// protocol, the closed-loop step with the most calls in flight.
	budgets := budgetsOf(c.Steady, func(s SteadyRow) string { return s.Budget })
	type ap struct{ arm, proto string }
	best := map[ap]map[string]SteadyRow{}
	var keys []ap
	for _, s := range c.Steady {
		if s.Scenario != "throughput" || s.CallsPerS <= 0 {
			continue
		}
		k := ap{s.Arm, s.Protocol}
		if best[k] == nil {
			best[k] = map[string]SteadyRow{}
			keys = append(keys, k)
		}
		if cur, ok := best[k][s.Budget]; !ok || s.Concurrency > cur.Concurrency {
			best[k][s.Budget] = s
		}
	}
	if len(keys) == 0 || len(budgets) < 2 {
		return out, nil // one budget: nothing to draw across
	}
	for _, m := range []struct {
		name, title, label string
		f                  func(SteadyRow) float64
	}{
		{"throughput", "calls/s across budgets (most in flight)", "calls/s", func(s SteadyRow) float64 { return s.CallsPerS }},
		{"cpu_per_call", "server CPU per call across budgets (most in flight)", "server CPU µs/call", func(s SteadyRow) float64 { return s.ServerCPUUsPerCall }},
	} {
		p := plot.New()
		p.Y.Label.Text = m.label
		p.NominalX(budgets...)
		p.Legend.Top = true
		for i, k := range keys {
			var pts plotter.XYs
			for j, b := range budgets {
				if s, ok := best[k][b]; ok {
					pts = append(pts, plotter.XY{X: float64(j), Y: m.f(s)})
				}
			}
			l, sc, err := plotter.NewLinePoints(pts)
			if err != nil {
				return nil, fmt.Errorf("plot %s: %w", m.name, err)
			}
			l.Color, sc.Color = plotutil.Color(i), plotutil.Color(i)
			sc.Shape = plotutil.Shape(i)
			p.Add(l, sc)
			p.Legend.Add(k.arm+" "+k.proto, l, sc)
		}
		p.Add(plotter.NewGrid())
		headroom(p)
		out = append(out, namedPlot{p, m.name, m.title})
	}
	return out, nil
}

// headroom starts the Y axis at zero and leaves the top quarter free for
// the legend.
func headroom(p *plot.Plot) {
	p.Y.Min = 0
	p.Y.Max *= 1.35
}

// logTicks labels 1, 2 and 5 times each power of ten on a log axis.
type logTicks struct{}

func (logTicks) Ticks(min, max float64) []plot.Tick {
	var ts []plot.Tick
	for e := math.Floor(math.Log10(min)); math.Pow(10, e) <= max; e++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, e)
			if v < min || v > max {
				continue
			}
			ts = append(ts, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', -1, 64)})
		}
	}
	return ts
}
