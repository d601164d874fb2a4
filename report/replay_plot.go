package report

import (
	"fmt"
	"image/color"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// replayPlot draws c's replay as the answer to "does the simulator
// agree?": per policy, the real autoscaler's cold requests beside the
// simulator's, with the ±tolerance band's ends on the real bar as
// whiskers: a simulated bar inside them agrees.
func replayPlot(c *Campaign) (namedPlot, bool, error) {
	if len(c.Replays) == 0 {
		return namedPlot{}, false, nil
	}
	p := plot.New()
	p.Y.Label.Text = "cold requests (waited for a start)"
	var real, sim plotter.Values
	var band []whisker
	var names []string
	for i, x := range c.Replays {
		real = append(real, float64(x.Cold))
		sim = append(sim, x.SimColdExpected())
		tol := float64(x.Cold) * replayTolerance
		band = append(band, whisker{X: float64(i), Y: float64(x.Cold), Lo: float64(x.Cold) - tol, Hi: float64(x.Cold) + tol})
		// One parameter a line, the policy kind left out: the ticks
		// of three policies fit side by side.
		names = append(names, strings.ReplaceAll(strings.TrimPrefix(x.Policy, "knative:"), ",", "\n"))
	}
	w := vg.Points(18)
	br, err := plotter.NewBarChart(real, w)
	if err != nil {
		return namedPlot{}, false, fmt.Errorf("plot replay: %w", err)
	}
	bs, err := plotter.NewBarChart(sim, w)
	if err != nil {
		return namedPlot{}, false, fmt.Errorf("plot replay: %w", err)
	}
	br.Color, bs.Color = plotutil.Color(0), plotutil.Color(1)
	br.LineStyle.Width, bs.LineStyle.Width = 0, 0
	br.Offset, bs.Offset = -w/2, w/2
	p.Add(plotter.NewGrid(), br, bs)
	p.Add(&offsetWhiskers{medianWhiskers{pts: band, color: color.Black, shape: nilGlyph{}}, -w / 2})
	p.Legend.Add("real autoscaler", br)
	p.Legend.Add("simulator", bs)
	p.Legend.Add(fmt.Sprintf("real ±%.0f%%", replayTolerance*100), &medianWhiskers{color: color.Black, shape: nilGlyph{}})
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.6, float64(len(names))-0.4
	p.Y.Min = 0
	p.Y.Max *= 1.12
	head := c.Replays[0]
	return namedPlot{p: p, name: "replay", title: fmt.Sprintf("cold requests under %s at %s, real Knative against coldstart cost's simulator, per policy", head.Traffic, head.Arm)}, true, nil
}
