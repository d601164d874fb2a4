package report

import (
	"fmt"
	"math"
	"path/filepath"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"

	"github.com/coldstart-go/coldstart/record"
)

// SoakRow is one interval of a soak (`steady run --soak`, kind "soak").
type SoakRow = record.SoakRow

// SoakSummary is a soak's trends and verdict (kind "soak_summary").
type SoakSummary = record.SoakSummary

// The record kinds of soaks.
const (
	SoakKind        = "soak"
	SoakSummaryKind = "soak_summary"
)

// soakSection writes each soak: its verdict with the slopes of RSS and p99
// and their intervals, the plots over time, and one row per interval.
func (r *Report) soakSection(m *mdw, plots func(*Campaign, string)) {
	if !r.has(func(c *Campaign) bool { return len(c.Soak) > 0 }) {
		return
	}
	m.p("## Soak: memory and latency over time\n\n")
	m.p("One open-loop rate held for the soak, one row per interval; latency from each call's intended send time. " +
		"A slope is the least-squares fit over the intervals with its 95%% interval (Student's t); it is a drift only when " +
		"the whole interval lies above +1 MiB/h (RSS) or +20%% of the median p99 per hour; a metric that fell is stable (\"falling\").\n\n")
	for _, c := range r.Campaigns {
		if len(c.Soak) == 0 {
			continue
		}
		for _, s := range c.SoakSummaries {
			m.p("- **%s** (%s) at %.0f calls/s for %s min, %d intervals, %d calls, %d errors: **%s**. RSS %s; p99 %s.",
				s.Arm, s.Budget, s.RateReq, minutes(s.Seconds), s.Intervals, s.Calls, s.Errors, s.Verdict, s.RSS.Text, s.P99.Text)
			if s.Stop != nil {
				// --soak auto: how long it ran was the rule's choice.
				m.p(" Soaked until precise: %s.", s.Stop)
			}
			m.p("\n")
		}
		if len(c.SoakSummaries) > 0 {
			m.p("\n")
		}
		plots(c, "soak")
		var rows [][]string
		for _, s := range c.Soak {
			rows = append(rows, []string{
				s.Arm, fmt.Sprint(s.Interval), fmt.Sprintf("%.1f", s.AtSeconds/60), fmt.Sprintf("%.0f", s.CallsPerS),
				fmt.Sprintf("%.0f", s.P50Us), fmt.Sprintf("%.0f", s.P99Us), fmt.Sprintf("%.0f", s.P999Us), fmt.Sprint(s.Errors),
				floatOrEmpty(s.ServerCPUUsPerCall), int64MiB(s.RSSBytes), int64MiB(s.PSSBytes), uint64MiB(s.HeapBytes), uint64OrEmpty(s.GCCycles),
			})
		}
		m.table([]string{"arm", "interval", "at min", "calls/s", "p50 µs", "p99 µs", "p99.9 µs", "errors", "server CPU µs/call", "RSS", "PSS", "heap", "GC cycles"}, rows)
		m.p("*%s* `%s`\n\n", provenanceLine(c), filepath.Base(c.File))
	}
}

// minutes renders seconds as minutes: whole when within 0.05 of a whole
// number (a soak of fixed length), else to a tenth (one that stopped on
// precision).
func minutes(sec float64) string {
	m := sec / 60
	if math.Abs(m-math.Round(m)) < 0.05 {
		return fmt.Sprintf("%.0f", m)
	}
	return fmt.Sprintf("%.1f", m)
}

func floatOrEmpty(v *float64) string {
	if v == nil {
		return "unknown"
	}
	return fmt.Sprintf("%.1f", *v)
}

func int64MiB(v *int64) string {
	if v == nil {
		return "unknown"
	}
	return fmt.Sprintf("%.1f MiB", float64(*v)/(1<<20))
}

func uint64MiB(v *uint64) string {
	if v == nil {
		return ""
	}
	return fmt.Sprintf("%.1f MiB", float64(*v)/(1<<20))
}

func uint64OrEmpty(v *uint64) string {
	if v == nil {
		return ""
	}
	return fmt.Sprint(*v)
}

// soakPlots draws RSS and p99 over the soak, one line per arm.
func soakPlots(c *Campaign) ([]namedPlot, error) {
	var out []namedPlot
	for _, metric := range []struct {
		name, title, y string
		get            func(SoakRow) (float64, bool)
	}{
		{"soak_rss", "server RSS over the soak", "RSS, MiB", func(s SoakRow) (float64, bool) {
			if s.RSSBytes == nil {
				return 0, false
			}
			return float64(*s.RSSBytes) / (1 << 20), true
		}},
		{"soak_p99", "p99 latency over the soak", "p99, ms", func(s SoakRow) (float64, bool) { return s.P99Us / 1e3, s.Calls > 0 }},
	} {
		lines := map[string]plotter.XYs{}
		var names []string
		for _, s := range c.Soak {
			v, ok := metric.get(s)
			if !ok {
				continue
			}
			n := s.Arm + " " + s.Budget
			if _, seen := lines[n]; !seen {
				names = append(names, n)
			}
			lines[n] = append(lines[n], plotter.XY{X: s.AtSeconds / 60, Y: v})
		}
		if len(names) == 0 {
			continue
		}
		p := plot.New()
		p.X.Label.Text = "minutes into the soak"
		p.Y.Label.Text = metric.y
		for i, n := range names {
			xy := lines[n]
			sort.Slice(xy, func(a, b int) bool { return xy[a].X < xy[b].X })
			l, pts, err := plotter.NewLinePoints(xy)
			if err != nil {
				return nil, fmt.Errorf("plot %s: %w", metric.name, err)
			}
			l.Color, pts.Color = plotutil.Color(i), plotutil.Color(i)
			pts.Shape = plotutil.Shape(i)
			p.Add(l, pts)
			p.Legend.Add(n, l, pts)
		}
		p.Add(plotter.NewGrid())
		p.Legend.Top = true
		headroom(p)
		out = append(out, namedPlot{p: p, name: metric.name, title: metric.title})
	}
	return out, nil
}
