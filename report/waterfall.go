package report

import (
	"fmt"
	"image/color"
	"math"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// A waterfall is one horizontal bar per start, cut into its phases in
// order, each phase its median length in ms; the longest phase is labelled
// with its ms and share, the bar's end with its total. Bars of a similar
// length share a panel and its axis; a bar that another dwarfs (more than
// wfDwarf times as long) gets a panel and an axis of its own, so that a
// 2 ms phase of a 9 ms start stays visible beside a 120 ms start.
type waterfall struct {
	panels []wfPanel
	// names are the phases in legend order; a phase's colour is its index.
	names []string
}

type wfPanel struct {
	bars []wfBar
	// max is the axis' end before room is made for labels: the longest
	// bar of the panel's scale group.
	max float64
}

type wfBar struct {
	label string
	segs  []wfSeg
}

// wfSeg is one phase: name is its legend entry, step what the label
// says of it ("pod scheduled → sandbox ready").
type wfSeg struct {
	name, step string
	ms         float64
}

func (b wfBar) total() float64 {
	var t float64
	for _, s := range b.segs {
		t += s.ms
	}
	return t
}

// dominant is the index of the longest phase.
func (b wfBar) dominant() int {
	best := 0
	for i, s := range b.segs {
		if s.ms > b.segs[best].ms {
			best = i
		}
	}
	return best
}

// wfDwarf is how many times longer than another bar a bar may be and
// still share its axis.
const wfDwarf = 4

// scaleGroups gives each total the longest total of its scale group: the
// longest bar leads a group, and every bar at least 1/wfDwarf of it joins.
func scaleGroups(totals []float64) []float64 {
	idx := make([]int, len(totals))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return totals[idx[a]] > totals[idx[b]] })
	out := make([]float64, len(totals))
	lead := math.NaN()
	for _, i := range idx {
		if math.IsNaN(lead) || totals[i]*wfDwarf < lead {
			lead = totals[i]
		}
		out[i] = lead
	}
	return out
}

// panelsByScale puts bars of one scale group in one panel, panels in the
// order of their first bar.
func panelsByScale(bars []wfBar) []wfPanel {
	var totals []float64
	for _, b := range bars {
		totals = append(totals, b.total())
	}
	groups := scaleGroups(totals)
	var out []wfPanel
	at := map[float64]int{}
	for i, b := range bars {
		j, ok := at[groups[i]]
		if !ok {
			j = len(out)
			at[groups[i]] = j
			out = append(out, wfPanel{max: groups[i]})
		}
		out[j].bars = append(out[j].bars, b)
	}
	return out
}

// phaseBar is a bar of the steps between consecutive phase medians, in
// the order of their medians, from start (its name: "t0", "spawn") up to
// first_rpc; empty steps are left out.
func phaseBar(label, start string, phases map[string]float64) wfBar {
	b := wfBar{label: label}
	prev := phaseAt{start, 0}
	for _, p := range inOrder(phases) {
		if prev.name == "first_rpc" {
			break
		}
		if d := p.ms - prev.ms; d > 0 {
			b.segs = append(b.segs, wfSeg{name: "→ " + phaseName(p.name), step: phaseName(prev.name) + " → " + phaseName(p.name), ms: d})
			prev = p
		} else if p.name == "first_rpc" {
			break
		}
	}
	return b
}

// phaseName writes a recorded phase for a reader: "queue_proxy_received"
// is "queue-proxy received", "first_rpc" "first RPC".
func phaseName(n string) string {
	n = strings.ReplaceAll(n, "queue_proxy", "queue-proxy")
	n = strings.ReplaceAll(n, "_", " ")
	n = strings.ReplaceAll(n, "rpc", "RPC")
	return n
}

// knativeWaterfall is, per arm of a Knative campaign, its scale from zero
// (t0 to first RPC through the span and watch phases) above the same arm
// started locally (the campaign and budget the "Local and on Knative"
// section pairs it with). Knative bars share one axis, local bars share
// theirs unless one dwarfs the others; every bar is a panel of its own, so
// that each pair sits together.
func knativeWaterfall(k *Campaign, local []*Campaign) (waterfall, bool) {
	var kbars, lbars []wfBar
	for _, s := range sortedSummaries(k.Summaries) {
		kb := phaseBar(s.Arm+" on Knative", "t0", s.PhasesMs)
		if len(kb.segs) == 0 {
			continue
		}
		lb := wfBar{}
		if lc, budget, xs := localFor(local, s.Arm); len(xs) > 0 {
			for _, ls := range lc.Summaries {
				if ls.Arm == s.Arm && ls.Budget == budget {
					lb = phaseBar(s.Arm+" locally, "+budget, "spawn", ls.PhasesMs)
				}
			}
		}
		kbars = append(kbars, kb)
		lbars = append(lbars, lb)
	}
	if len(kbars) == 0 {
		return waterfall{}, false
	}
	var kt, lt []float64
	for i := range kbars {
		kt = append(kt, kbars[i].total())
		lt = append(lt, lbars[i].total())
	}
	kmax := 0.0
	for _, t := range kt {
		kmax = max(kmax, t)
	}
	lg := scaleGroups(lt)
	var w waterfall
	for i := range kbars {
		w.panels = append(w.panels, wfPanel{bars: []wfBar{kbars[i]}, max: kmax})
		if len(lbars[i].segs) > 0 {
			w.panels = append(w.panels, wfPanel{bars: []wfBar{lbars[i]}, max: lg[i]})
		}
	}
	w.names = w.phaseNames()
	return w, true
}

// phaseNames are the phases of every bar, in order of first appearance.
func (w waterfall) phaseNames() []string {
	var out []string
	for _, p := range w.panels {
		for _, b := range p.bars {
			for _, s := range b.segs {
				out = appendUnique(out, s.name)
			}
		}
	}
	return out
}

// wfColors tell up to sixteen phases apart (Tableau's 10 and six more).
var wfColors = []color.RGBA{
	{31, 119, 180, 255}, {255, 127, 14, 255}, {44, 160, 44, 255}, {214, 39, 40, 255},
	{148, 103, 189, 255}, {140, 86, 75, 255}, {227, 119, 194, 255}, {127, 127, 127, 255},
	{188, 189, 34, 255}, {23, 190, 207, 255}, {0, 0, 128, 255}, {128, 128, 0, 255},
	{255, 187, 120, 255}, {152, 223, 138, 255}, {174, 199, 232, 255}, {0, 0, 0, 255},
}

func (w waterfall) color(name string) color.RGBA {
	for i, n := range w.names {
		if n == name {
			return wfColors[i%len(wfColors)]
		}
	}
	return color.RGBA{A: 255}
}

const (
	wfBarHeight = vg.Length(16)
	wfRowHeight = vg.Length(32) // the bar and a line of text beneath it
	wfAxis      = vg.Length(30) // a panel's tick labels and padding
)

func (w waterfall) size() (vg.Length, vg.Length) {
	rows := 0
	for _, p := range w.panels {
		rows = max(rows, len(p.bars))
	}
	keyRows := (len(w.names) + 2) / 3
	h := vg.Length(len(w.panels))*(vg.Length(rows)*wfRowHeight+wfAxis) + 50 + vg.Length(keyRows)*14 + 2*edge
	return figW, max(h, figH)
}

// labelStyle is the style of the text beside and inside the bars.
func labelStyle(size vg.Length) draw.TextStyle {
	sty := plot.New().X.Tick.Label
	sty.Font.Size = size
	sty.XAlign, sty.YAlign = draw.XLeft, draw.YCenter
	return sty
}

func (w waterfall) draw(c draw.Canvas, title string) {
	c = drawTitle(c, title)
	var key []keyEntry
	for _, n := range w.names {
		key = append(key, keyEntry{n, swatch{w.color(n)}})
	}
	c = drawKey(c, key)

	var rows int
	for _, p := range w.panels {
		rows = max(rows, len(p.bars))
	}
	// The bars' labels sit left of the data; what is right of it is
	// measured below, for each panel's axis to end after it.
	lab := labelStyle(vg.Points(10))
	var labelW vg.Length
	for _, p := range w.panels {
		for _, b := range p.bars {
			labelW = max(labelW, lab.Width(b.label)*fontSlack)
		}
	}
	// The bars' labels are drawn left-aligned in a column of their own
	// (a gonum tick label is right-aligned, so a wider fallback font would
	// run it into the data).
	pc := draw.Crop(c, labelW+vg.Points(6), 0, 0, 0)
	dataW := pc.Size().X - vg.Points(10)
	// Panels of one scale group share their axis' end: the longest that
	// any of them needs for its labels.
	ends := map[float64]float64{}
	for _, pn := range w.panels {
		ends[pn.max] = max(ends[pn.max], w.axisEnd(pn, dataW))
	}
	var plots [][]*plot.Plot
	for _, pn := range w.panels {
		plots = append(plots, []*plot.Plot{w.panelPlot(pn, rows, ends[pn.max], dataW)})
	}
	cs := plot.Align(plots, draw.Tiles{Rows: len(plots), Cols: 1, PadY: vg.Points(6)}, pc)
	for i, pn := range w.panels {
		p := plots[i][0]
		p.Draw(cs[i][0])
		dc := p.DataCanvas(cs[i][0])
		for j, b := range pn.bars {
			y := dc.Min.Y + vg.Length(p.Y.Norm(float64(-j)))*dc.Size().Y
			c.FillText(lab, vg.Point{X: c.Min.X, Y: y}, b.label)
		}
	}
}

// axisEnd is where pn's axis must end for its bars' totals to fit after
// them at a data width of dataW.
func (w waterfall) axisEnd(pn wfPanel, dataW vg.Length) float64 {
	xmax := pn.max
	lab := labelStyle(vg.Points(9))
	for _, b := range pn.bars {
		right := lab.Width(endText(b))*fontSlack + 6
		if right < dataW/2 {
			xmax = max(xmax, b.total()*float64(dataW)/float64(dataW-right))
		}
	}
	return xmax
}

// panelPlot is one panel: its bars top to bottom, its X axis from 0 to
// xmax at a data width of dataW.
func (w waterfall) panelPlot(pn wfPanel, rows int, xmax float64, dataW vg.Length) *plot.Plot {
	p := plot.New()
	// No Y axis: the bars' labels are the figure's (draw).
	p.Y.Tick.Marker = plot.ConstantTicks(nil)
	p.Y.Tick.Length = 0
	p.Y.Padding = 0
	p.Y.LineStyle.Width = 0

	ws := &wfPlotter{w: w, bars: pn.bars}
	// The longest phase's label goes inside it where it fits, else
	// beneath the bar.
	lab := labelStyle(vg.Points(9))
	ws.outside = make([]bool, len(pn.bars))
	below := 0.0
	for i, b := range pn.bars {
		d := b.segs[b.dominant()]
		ws.outside[i] = vg.Length(d.ms/xmax)*dataW < lab.Width(ws.domText(b))*fontSlack+8
		if ws.outside[i] && i == len(pn.bars)-1 {
			below = 0.3 // room under the last bar for its label
		}
	}
	p.Add(vGrid{}, ws)
	// After Add, which widens the axes to the data.
	p.Y.Min, p.Y.Max = -float64(rows)+0.5-below, 0.5
	p.X.Min, p.X.Max = 0, xmax
	p.X.Tick.Marker = unitTicks{" ms"}
	p.X.Padding = 0
	return p
}

// wfPlotter draws a panel's bars.
type wfPlotter struct {
	w       waterfall
	bars    []wfBar
	outside []bool // the dominant phase's label is beneath the bar
}

func (ws *wfPlotter) domText(b wfBar) string {
	d := b.segs[b.dominant()]
	return fmt.Sprintf("%s %s ms (%.0f%%)", d.step, ms(d.ms), 100*d.ms/b.total())
}

func endText(b wfBar) string { return ms(b.total()) + " ms" }

func (ws *wfPlotter) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	lab := labelStyle(vg.Points(9))
	for i, b := range ws.bars {
		y := trY(float64(-i))
		x := 0.0
		dom := b.dominant()
		for j, s := range b.segs {
			x0, x1 := trX(x), trX(x+s.ms)
			col := ws.w.color(s.name)
			c.SetColor(col)
			r := vg.Rectangle{Min: vg.Point{X: x0, Y: y - wfBarHeight/2}, Max: vg.Point{X: x1, Y: y + wfBarHeight/2}}
			c.Fill(r.Path())
			switch {
			case j == dom && !ws.outside[i]:
				// Left-aligned, so that a wider fallback font grows
				// into the room fontSlack left at the right.
				in := lab
				in.Color = textOn(col)
				c.FillText(in, vg.Point{X: x0 + 4, Y: y}, ws.domText(b))
			case j == dom:
				// Beneath, from the phase's start, pulled left as far
				// as the text needs to end inside the panel.
				below := lab
				below.YAlign = draw.YTop
				tx := min(x0, c.Max.X-lab.Width(ws.domText(b))*fontSlack)
				c.FillText(below, vg.Point{X: max(tx, c.Min.X), Y: y - wfBarHeight/2 - 1}, ws.domText(b))
			}
			x += s.ms
		}
		c.FillText(lab, vg.Point{X: trX(x) + 4, Y: y}, endText(b))
	}
}

func (ws *wfPlotter) DataRange() (xmin, xmax, ymin, ymax float64) {
	for _, b := range ws.bars {
		xmax = max(xmax, b.total())
	}
	return 0, xmax, -float64(len(ws.bars)), 0
}

// textOn is black or white, whichever reads on bg.
func textOn(bg color.RGBA) color.Color {
	if 0.299*float64(bg.R)+0.587*float64(bg.G)+0.114*float64(bg.B) > 150 {
		return color.Black
	}
	return color.White
}

// swatch is a legend's filled square.
type swatch struct{ c color.Color }

func (s swatch) Thumbnail(c *draw.Canvas) {
	c.SetColor(s.c)
	h := c.Max.Y - c.Min.Y
	r := vg.Rectangle{Min: vg.Point{X: c.Min.X + 4, Y: c.Min.Y + h*0.1}, Max: vg.Point{X: c.Max.X - 4, Y: c.Max.Y - h*0.1}}
	c.Fill(r.Path())
}

// unitTicks are gonum's default ticks, labelled in as few digits as the
// value needs ("750", not "750.00"), with a unit after each label.
type unitTicks struct{ unit string }

func (u unitTicks) Ticks(min, max float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(min, max)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = strconv.FormatFloat(math.Round(ts[i].Value*1e6)/1e6, 'f', -1, 64) + u.unit
		}
	}
	return ts
}

// vGrid draws vertical grid lines at the X axis' major ticks.
type vGrid struct{}

func (vGrid) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	ls := draw.LineStyle{Color: color.Gray{200}, Width: vg.Points(0.5)}
	for _, t := range p.X.Tick.Marker.Ticks(p.X.Min, p.X.Max) {
		if t.Label == "" {
			continue
		}
		x := trX(t.Value)
		c.StrokeLine2(ls, x, c.Min.Y, x, c.Max.Y)
	}
}
