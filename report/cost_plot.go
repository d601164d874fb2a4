package report

import (
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// costPlots draws, per traffic model of c's cost rows, each arm ×
// policy as a point of p99 added latency against idle GiB-hours per day
// (one colour and shape per arm), with the Pareto front joined by a line:
// down and to the left is better. Both axes start at 0, where a policy
// that keeps an instance warm has no added latency.
func costPlots(c *Campaign) ([]namedPlot, error) {
	var out []namedPlot
	for ti, tr := range costTraffics(c) {
		p := plot.New()
		p.X.Label.Text = "p99 added latency over all requests, ms"
		p.Y.Label.Text = "idle memory, GiB-hours per day"
		byArm := map[string]plotter.XYs{}
		var arms []string
		var front plotter.XYs
		for _, r := range c.Cost {
			if r.Traffic != tr {
				continue
			}
			if _, ok := byArm[r.Arm]; !ok {
				arms = append(arms, r.Arm)
			}
			pt := plotter.XY{X: r.AddedP99Ms, Y: r.IdleGiBHoursPerDay}
			byArm[r.Arm] = append(byArm[r.Arm], pt)
			if r.Front {
				front = append(front, pt)
			}
		}
		if len(arms) == 0 {
			continue
		}
		sort.Slice(front, func(i, j int) bool { return front[i].X < front[j].X })
		if len(front) > 1 {
			l, err := plotter.NewLine(front)
			if err != nil {
				return nil, fmt.Errorf("plot cost front: %w", err)
			}
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
			p.Add(l)
			p.Legend.Add("Pareto front", l)
		}
		var maxX, maxY float64
		for i, a := range arms {
			s, err := plotter.NewScatter(byArm[a])
			if err != nil {
				return nil, fmt.Errorf("plot cost %s: %w", a, err)
			}
			s.Color, s.Shape = plotutil.Color(i), plotutil.Shape(i)
			s.Radius = vg.Points(3)
			p.Add(s)
			p.Legend.Add(a, s)
			for _, pt := range byArm[a] {
				maxX, maxY = math.Max(maxX, pt.X), math.Max(maxY, pt.Y)
			}
		}
		p.Add(plotter.NewGrid())
		p.X.Min, p.Y.Min = 0, 0
		p.X.Max, p.Y.Max = math.Max(1, maxX*1.08), math.Max(1e-3, maxY*1.08)
		out = append(out, namedPlot{p: p, name: fmt.Sprintf("cost_%d", ti+1),
			title: fmt.Sprintf("scale-to-zero cost under %s: p99 added latency against idle memory, per arm and policy", tr)})
	}
	return out, nil
}
