package report

import (
	"fmt"
	"image/color"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// forestMetrics are the comparisons a forest plot draws, one panel each,
// in this order: for all of them less is better.
var forestMetrics = []struct{ metric, label string }{
	{"first_rpc_ms", "first RPC"},
	{"startup_cpu_ms", "startup CPU"},
	{"idle_pss_bytes", "idle PSS"},
	{"server_cpu_us_per_call", "server CPU per call"},
}

// forest is a campaign's verdicts: per budget (or steady step) one row per
// arm, its ratio to the baseline as a dot with the interval as a whisker,
// on a log axis with a line at ×1; the colour is the verdict.
type forest struct {
	base   string
	rows   []forestKey
	panels []forestPanel
	conf   float64
}

type forestKey struct{ scope, arm string }

type forestPanel struct {
	label string
	cells map[forestKey]ComparisonRow
}

// forestPlot is c's forest of arms against the baseline: first RPC and
// startup CPU per budget for a cold-start campaign, idle PSS for a density
// campaign, server CPU per call for a steady one (per budget, its gRPC
// sequential step, else its first). ok is false for a campaign without
// such comparisons. The title says what is compared.
func (r *Report) forestPlot(c *Campaign) (f forest, title string, ok bool) {
	f.conf = r.confidence()
	steadyScope := map[string]string{} // budget → the one steady scope drawn
	for _, row := range r.Comparisons() {
		if row.Kind != "arms" || row.Campaign != c.Label || row.Ratio == nil {
			continue
		}
		pi := -1
		for i, m := range forestMetrics {
			if m.metric == row.Metric {
				pi = i
			}
		}
		if pi < 0 {
			continue
		}
		budget, step, _ := strings.Cut(strings.TrimPrefix(row.Scope, "budget="), " ")
		if row.Metric == "server_cpu_us_per_call" {
			cur, seen := steadyScope[budget]
			if !seen || (!strings.Contains(cur, "grpc sequential") && strings.Contains(step, "grpc sequential")) {
				steadyScope[budget] = step
			}
		}
	}
	var panels [4]forestPanel
	for _, row := range r.Comparisons() {
		if row.Kind != "arms" || row.Campaign != c.Label || row.Ratio == nil {
			continue
		}
		budget, step, _ := strings.Cut(strings.TrimPrefix(row.Scope, "budget="), " ")
		for i, m := range forestMetrics {
			if m.metric != row.Metric {
				continue
			}
			if m.metric == "server_cpu_us_per_call" && steadyScope[budget] != step {
				continue
			}
			scope := budget
			if step != "" {
				scope += ", " + step
			}
			k := forestKey{scope, row.A}
			if !containsKey(f.rows, k) {
				f.rows = append(f.rows, k)
			}
			if panels[i].cells == nil {
				panels[i] = forestPanel{label: m.label, cells: map[forestKey]ComparisonRow{}}
			}
			panels[i].cells[k] = row
			f.base = row.B
		}
	}
	for _, p := range panels {
		if p.cells != nil {
			f.panels = append(f.panels, p)
		}
	}
	if len(f.panels) == 0 {
		return forest{}, "", false
	}
	var what []string
	for _, p := range f.panels {
		what = append(what, p.label)
	}
	unit, counts := "runs", coldRuns(c)
	switch {
	case len(c.Density) > 0 && len(c.Samples) == 0:
		unit, counts = "instances", densityRuns(c)
	case len(c.Steady) > 0 && len(c.Samples) == 0:
		unit, counts = "", nil
	}
	title = fmt.Sprintf("each arm ÷ %s on %s: ratio with its %.0f%% interval", f.base, strings.Join(what, " and "), 100*f.conf) + c.about(unit, counts)
	if c.Knative() {
		title = "on Knative: " + title
	}
	return f, title, true
}

// hollow reports whether a row is significant but under the minimum
// effect (drawn hollow).
func (f forest) hollow() bool {
	for _, p := range f.panels {
		for _, c := range p.cells {
			if !c.Actionable && verdictColor(c.Verdict) != forestNone {
				return true
			}
		}
	}
	return false
}

func containsKey(ks []forestKey, k forestKey) bool {
	for _, x := range ks {
		if x == k {
			return true
		}
	}
	return false
}

// The verdicts' colours: better (faster, lower), worse, no difference.
var (
	forestBetter = color.RGBA{0, 130, 60, 255}
	forestWorse  = color.RGBA{200, 30, 30, 255}
	forestNone   = color.RGBA{120, 120, 120, 255}
)

func verdictColor(v string) color.Color {
	switch v {
	case "faster", "lower":
		return forestBetter
	case "slower", "higher":
		return forestWorse
	}
	return forestNone
}

// forestRowH is a row's height; forestGap the gap between scopes, in rows.
const (
	forestRowH = vg.Length(17)
	forestGap  = 0.6
)

func (f forest) size() (vg.Length, vg.Length) {
	h := vg.Length(f.rowY(len(f.rows)-1)*-1+1)*forestRowH + 110 + 2*edge
	return figW, max(h, 8*vg.Centimeter)
}

// rowY is row i's position: rows top to bottom, a gap before each new
// scope.
func (f forest) rowY(i int) float64 {
	y, gaps := 0.0, 0
	for j := 1; j <= i && j < len(f.rows); j++ {
		if f.rows[j].scope != f.rows[j-1].scope {
			gaps++
		}
	}
	y = -float64(i) - forestGap*float64(gaps)
	return y
}

func (f forest) rowLabel(k forestKey) string {
	one := true
	for _, r := range f.rows {
		one = one && r.scope == f.rows[0].scope
	}
	if one && !strings.Contains(k.scope, ",") {
		return k.arm
	}
	return k.arm + ", " + k.scope
}

func (f forest) draw(c draw.Canvas, title string) {
	c = drawTitle(c, title)
	// The verdicts' key, beneath the panels.
	var key []keyEntry
	for _, e := range []struct {
		name string
		c    color.Color
	}{
		{"better: faster or lower", forestBetter},
		{"worse: slower or higher", forestWorse},
		{"no difference detected", forestNone},
		{"hollow: significant, under the minimum effect", forestNone},
	} {
		shape := draw.GlyphDrawer(draw.CircleGlyph{})
		if strings.HasPrefix(e.name, "hollow") {
			if !f.hollow() {
				continue
			}
			shape = draw.RingGlyph{}
		}
		key = append(key, keyEntry{e.name, &medianWhiskers{color: e.c, shape: shape}})
	}
	c = drawKey(c, key)

	// The rows' labels are drawn left-aligned in a column of their own
	// (a gonum tick label is right-aligned, so a wider fallback font would
	// run it into the data).
	lab := labelStyle(vg.Points(10))
	var labelW vg.Length
	for _, k := range f.rows {
		labelW = max(labelW, lab.Width(f.rowLabel(k))*fontSlack)
	}
	pc := draw.Crop(c, labelW+vg.Points(8), 0, 0, 0)
	n := len(f.panels)
	dataW := pc.Size().X/vg.Length(n) - vg.Points(20)
	row := make([]*plot.Plot, n)
	for i, pn := range f.panels {
		row[i] = f.panelPlot(pn, dataW)
	}
	cs := plot.Align([][]*plot.Plot{row}, draw.Tiles{Rows: 1, Cols: n, PadX: vg.Points(20)}, pc)
	for i := range row {
		row[i].Draw(cs[0][i])
	}
	dc := row[0].DataCanvas(cs[0][0])
	for i, k := range f.rows {
		y := dc.Min.Y + vg.Length(row[0].Y.Norm(f.rowY(i)))*dc.Size().Y
		c.FillText(lab, vg.Point{X: c.Min.X, Y: y}, f.rowLabel(k))
	}
}

// panelPlot is one metric's panel, its X axis (log) wide enough for each
// row's "×1.23" beside its whisker at a data width of dataW.
func (f forest) panelPlot(pn forestPanel, dataW vg.Length) *plot.Plot {
	p := plot.New()
	p.X.Label.Text = pn.label + " ÷ " + f.base
	p.X.Scale = plot.LogScale{}
	// No Y axis: the rows' labels are the figure's (draw).
	p.Y.Tick.Marker = plot.ConstantTicks(nil)
	p.Y.Tick.Length = 0
	p.Y.LineStyle.Width = 0
	p.Y.Padding = 0

	lo, hi := 1.0, 1.0
	var texts []string
	for _, k := range f.rows {
		cell, ok := pn.cells[k]
		if !ok {
			texts = append(texts, "")
			continue
		}
		lo = math.Min(lo, lowOr(cell))
		hi = math.Max(hi, highOr(cell))
		texts = append(texts, "×"+forestRatio(*cell.Ratio))
	}
	lo, hi = lo/1.05, hi*1.05
	// Room right of the highest whisker for its label: on a log axis a
	// label of width w at data width W takes w/W of the decades shown.
	lab := labelStyle(vg.Points(9))
	span := math.Log10(hi / lo)
	for i, k := range f.rows {
		cell, ok := pn.cells[k]
		if !ok {
			continue
		}
		w := float64(lab.Width(texts[i])*fontSlack+6) / float64(dataW)
		// The label starts at the whisker's end, at fraction
		// log(high/lo)/total of the axis; it must end by 1.
		at := math.Log10(highOr(cell) / lo)
		if w < 1 {
			span = math.Max(span, at/(1-w))
		}
	}
	hi = lo * math.Pow(10, span)
	p.X.Tick.Marker = ratioTicks{}
	p.X.Padding = 0

	ymin, ymax := f.rowY(len(f.rows)-1)-0.6, 0.6
	p.Add(vGrid{})
	one, _ := plotter.NewLine(plotter.XYs{{X: 1, Y: ymin}, {X: 1, Y: ymax}})
	one.Color = color.Black
	one.Width = vg.Points(1)
	p.Add(one)
	p.Add(&forestDots{f: f, pn: pn, texts: texts})
	// After Add, which widens the axes to the data.
	p.Y.Min, p.Y.Max = ymin, ymax
	p.X.Min, p.X.Max = lo, hi
	return p
}

func lowOr(c ComparisonRow) float64 {
	if c.RatioCILow != nil && *c.RatioCILow > 0 {
		return *c.RatioCILow
	}
	return *c.Ratio
}

func highOr(c ComparisonRow) float64 {
	if c.RatioCIHigh != nil && *c.RatioCIHigh > 0 {
		return *c.RatioCIHigh
	}
	return *c.Ratio
}

// forestRatio is a ratio in three significant digits at most: 0.857, 1.10,
// 23.3.
func forestRatio(v float64) string {
	switch {
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	case v >= 1:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.3g", v)
}

// forestDots draws a panel's rows: whisker, dot (hollow when significant
// but under the minimum effect), and the ratio's text after the whisker.
type forestDots struct {
	f     forest
	pn    forestPanel
	texts []string
}

func (d *forestDots) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	lab := labelStyle(vg.Points(9))
	for i, k := range d.f.rows {
		cell, ok := d.pn.cells[k]
		if !ok {
			continue
		}
		col := verdictColor(cell.Verdict)
		shape := draw.GlyphDrawer(draw.CircleGlyph{})
		if !cell.Actionable && col != forestNone {
			shape = draw.RingGlyph{}
		}
		y := d.f.rowY(i)
		mw := &medianWhiskers{pts: []whisker{{X: *cell.Ratio, Y: y, Lo: lowOr(cell), Hi: highOr(cell)}}, horizontal: true, color: col, shape: shape}
		mw.Plot(c, p)
		lab.Color = col
		c.FillText(lab, vg.Point{X: trX(highOr(cell)) + 5, Y: trY(y)}, d.texts[i])
	}
}

// ratioTicks label a log ratio axis "×0.5", "×1", "×2": 1, 2 and 5 times
// powers of ten, finer (1, 1.2, 1.5, 2, 3, 5, 7) where that gives fewer
// than three ticks, finer again (every 0.1 of a decade's step) if need be.
type ratioTicks struct{}

func (ratioTicks) Ticks(min, max float64) []plot.Tick {
	var ts []plot.Tick
	for _, ms := range [][]float64{{1, 2, 5}, {1, 1.2, 1.5, 2, 3, 5, 7}, {1, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8, 1.9, 2, 2.5, 3, 4, 5, 6, 7, 8, 9}} {
		ts = ts[:0]
		for e := math.Floor(math.Log10(min)) - 1; math.Pow(10, e) <= max; e++ {
			for _, m := range ms {
				v := m * math.Pow(10, e)
				if v < min || v > max {
					continue
				}
				ts = append(ts, plot.Tick{Value: v, Label: "×" + trimFloat(v)})
			}
		}
		if len(ts) >= 3 {
			break
		}
	}
	return ts
}

func trimFloat(v float64) string {
	s := fmt.Sprintf("%.3g", v)
	return s
}
