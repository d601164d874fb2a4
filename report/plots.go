package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/coldstart-go/coldstart/internal/stats"
)

// Plot is one image written by Report.Plots.
type Plot struct {
	// Campaign is the Label of the campaign it shows; Kind is the section
	// it belongs to: "forest", "waterfall", "coldstart", "density",
	// "burst", "steady", "pull", "breakeven" or "soak".
	Campaign, Kind string
	// File is the image's name in the plots directory; Title its caption,
	// the same words as the title drawn in the image.
	File, Title string
}

// Plots draws, as SVG files in dir, per campaign: the forest of its arms'
// ratios to the baseline ("forest": first RPC and startup CPU per budget,
// idle PSS, steady server CPU per call); where a start's time goes
// ("waterfall": explain's phases locally, and each Knative arm's phases
// above the same arm's local start); the CDF of spawn → first RPC per arm
// and budget; PSS and RSS per idle instance; the steady latency
// percentiles, calls/s and server CPU per call; the pull plots and the
// soak plots. It writes nothing else, and returns the plots in the order
// the Markdown shows them: every file it writes is one the Markdown links.
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
	save := func(f figure, c *Campaign, kind, name, title string) error {
		file := fileName(c.Label + "_" + name + "." + format)
		if err := writeFigure(f, title, filepath.Join(dir, file), format); err != nil {
			return fmt.Errorf("write plot %s: %w", file, err)
		}
		out = append(out, Plot{Campaign: c.Label, Kind: kind, File: file, Title: title})
		return nil
	}
	local := r.localCampaigns()
	for _, c := range r.Campaigns {
		if f, title, ok := r.forestPlot(c); ok {
			if err := save(f, c, "forest", "forest", title); err != nil {
				return out, err
			}
		}
		if len(c.Traces) > 0 {
			p, ok, err := explainPlot(c)
			if err != nil {
				return out, err
			}
			if ok {
				if err := save(p, c, "waterfall", "waterfall", "where a local start's spawn → first RPC goes, phase medians"+c.about("runs", explainRuns(c))); err != nil {
					return out, err
				}
			}
		}
		if c.Knative() {
			if f, ok := knativeWaterfall(c, local); ok {
				if err := save(f, c, "waterfall", "waterfall", "where a scale from zero goes on Knative, the same arm locally below"+c.about("runs", coldRuns(c))); err != nil {
					return out, err
				}
			}
		}
		for _, b := range budgetsOf(c.Samples, func(s Sample) string { return s.Budget }) {
			p, ok, err := cdfPlot(c, b, r.confidence())
			if err != nil {
				return out, err
			}
			if ok {
				if err := save(p, c, "coldstart", "cdf_"+b, coldWhat(c, b)+c.about("runs", coldRuns(c, b))); err != nil {
					return out, err
				}
			}
		}
		if len(c.Density) > 0 {
			p, err := densityPlot(c, r.confidence())
			if err != nil {
				return out, err
			}
			if err := save(p, c, "density", "density", "memory per idle instance"+c.about("instances", densityRuns(c))); err != nil {
				return out, err
			}
		}
		if len(c.Bursts) > 0 || len(c.BurstSummaries) > 0 {
			ps, err := r.burstPlots(c)
			if err != nil {
				return out, err
			}
			for _, bp := range ps {
				if err := save(framed{p: bp.p}, c, "burst", bp.name, bp.title+c.about("", nil)); err != nil {
					return out, err
				}
			}
		}
		if len(c.Pull) > 0 {
			ps, err := pullPlots(c, r.confidence())
			if err != nil {
				return out, err
			}
			for _, pp := range ps {
				if err := save(framed{p: pp.p}, c, pp.name, pp.name, pp.title+c.about("", nil)); err != nil {
					return out, err
				}
			}
		}
		if len(c.Cost) > 0 {
			ps, err := costPlots(c)
			if err != nil {
				return out, err
			}
			for _, pp := range ps {
				if err := save(framed{p: pp.p}, c, "cost", pp.name, pp.title+c.about("", nil)); err != nil {
					return out, err
				}
			}
		}
		if pp, ok, err := replayPlot(c); err != nil {
			return out, err
		} else if ok {
			if err := save(framed{p: pp.p}, c, "replay", pp.name, pp.title+c.about("", nil)); err != nil {
				return out, err
			}
		}
		if len(c.Soak) > 0 {
			ps, err := soakPlots(c)
			if err != nil {
				return out, err
			}
			for _, sp := range ps {
				if err := save(framed{p: sp.p}, c, "soak", sp.name, sp.title+c.about("", nil)); err != nil {
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
				if err := save(framed{p: sp.p}, c, "steady", sp.name, sp.title+c.about("", nil)); err != nil {
					return out, err
				}
			}
		}
	}
	return out, nil
}

// PruneStale removes the image files (.svg, .png) in dir that keep does
// not name: what an earlier report wrote and this one no longer links.
// Other files stay. A missing dir is nothing to prune.
func PruneStale(dir string, keep []Plot) error {
	want := map[string]bool{}
	for _, p := range keep {
		want[p.File] = true
	}
	des, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("prune plots: %w", err)
	}
	for _, de := range des {
		n := de.Name()
		if de.IsDir() || want[n] || (filepath.Ext(n) != ".svg" && filepath.Ext(n) != ".png") {
			continue
		}
		if err := os.Remove(filepath.Join(dir, n)); err != nil {
			return fmt.Errorf("prune plots: %w", err)
		}
	}
	return nil
}

// localCampaigns are the cold-start campaigns not run on Knative.
func (r *Report) localCampaigns() []*Campaign {
	var out []*Campaign
	for _, c := range r.Campaigns {
		if len(c.Samples) > 0 && !c.Knative() {
			out = append(out, c)
		}
	}
	return out
}

// coldWhat says what a cold-start CDF times: from spawn under a budget, or
// from the activator's t0 on Knative.
func coldWhat(c *Campaign, budget string) string {
	switch {
	case c.Knative():
		return "t0 → first RPC on Knative (scale from zero)"
	case budget == "max" || budget == "":
		return "spawn → first RPC without a budget"
	}
	return "spawn → first RPC under " + budget
}

// about ends a title with how much was measured and when: ", 20 runs per
// arm, 2026-12-01" (a range when the arms differ, no count for nil).
func (c *Campaign) about(unit string, counts []int) string {
	var s string
	if len(counts) > 0 {
		lo, hi := counts[0], counts[0]
		for _, n := range counts {
			lo, hi = min(lo, n), max(hi, n)
		}
		if lo == hi {
			s = fmt.Sprintf(", %d %s per arm", lo, unit)
		} else {
			s = fmt.Sprintf(", %d–%d %s per arm", lo, hi, unit)
		}
	}
	if t := c.Provenance.StartedAt; !t.IsZero() {
		s += ", " + t.UTC().Format("2006-01-02")
	}
	return s
}

// coldRuns counts the counted cold starts per arm (and budget, under the
// budgets given; all when none).
func coldRuns(c *Campaign, budgets ...string) []int {
	var out []int
	for k, xs := range coldSamples(c) {
		if len(budgets) == 0 || contains(budgets, k[1]) {
			out = append(out, len(xs))
		}
	}
	return out
}

func densityRuns(c *Campaign) []int {
	n := map[string]int{}
	for _, d := range c.DensitySamples {
		n[d.Arm]++
	}
	var out []int
	for _, v := range n {
		out = append(out, v)
	}
	return out
}

func explainRuns(c *Campaign) []int {
	var out []int
	for _, p := range c.explainReport().Phases {
		out = append(out, p.Runs)
	}
	return out
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

// figure is what one image holds: a gonum plot (drawn by framed), or
// panels laid out together (forest, waterfall).
type figure interface {
	// draw draws the figure, its title included, on c.
	draw(c draw.Canvas, title string)
	// size is the image's width and height.
	size() (w, h vg.Length)
}

// The images' layout. Text is measured with the Liberation fonts
// gonum/plot embeds and names in the SVG; a reader without them gets a
// fallback (DejaVu Serif on Debian), up to fontSlack times as wide, so
// room left for text beside data is its measured width times fontSlack,
// and every figure keeps a blank edge of its own. An SVG text grows to the
// right of where gonum starts it, so text centred on a point needs
// (2·fontSlack − 1) times its width there.
const (
	figW      = 18 * vg.Centimeter
	figH      = 10 * vg.Centimeter
	edge      = vg.Length(8)
	fontSlack = 1.3
)

// writeFigure draws f with its title into file. An SVG names the
// Liberation family first and then the metric-compatible ones
// (Times New Roman, Arial) before the generic family, so that a reader
// without Liberation gets the same widths where the system has them.
func writeFigure(f figure, title, file, format string) error {
	w, h := f.size()
	cw, err := draw.NewFormattedCanvas(w, h, format)
	if err != nil {
		return err
	}
	dc := draw.New(cw)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	f.draw(draw.Crop(dc, edge, -edge, edge, -edge), title)
	var b bytes.Buffer
	if _, err := cw.WriteTo(&b); err != nil {
		return err
	}
	out := b.Bytes()
	if format == "svg" {
		out = bytes.ReplaceAll(out, []byte("font-family:Liberation Serif;"), []byte("font-family:'Liberation Serif','Times New Roman',Times,serif;"))
		out = bytes.ReplaceAll(out, []byte("font-family:Liberation Sans;"), []byte("font-family:'Liberation Sans',Arial,Helvetica,sans-serif;"))
	}
	return os.WriteFile(file, out, 0o644)
}

// framed draws a gonum plot with its legend, if any, in a column of its
// own to the right of the plot (never over the data), as wide as the
// legend's measured text, and the title wrapped to the width it has.
type framed struct {
	p    *plot.Plot
	w, h vg.Length // 0 = figW, figH
}

func (f framed) size() (vg.Length, vg.Length) {
	if f.w == 0 {
		return figW, figH
	}
	return f.w, f.h
}

func (f framed) draw(c draw.Canvas, title string) {
	p := f.p
	c = drawTitle(c, title)
	if lw := legendWidth(p.Legend); lw > 0 {
		l := p.Legend
		l.Top, l.Left = true, true
		l.Padding = vg.Points(3)
		l.XOffs, l.YOffs = 0, 0
		p.Legend = plot.NewLegend()
		lc := draw.Crop(c, c.Size().X-lw, 0, 0, 0)
		// Level with the top of the data area: below the plot's own
		// top padding.
		lc.Max.Y -= 4
		l.Draw(lc)
		c = draw.Crop(c, 0, -lw-vg.Points(6), 0, 0)
	}
	p.Title.Text = ""
	// Axis labels are centred on their axis: wrap them to fit its length.
	centred := func(n vg.Length) vg.Length { return n * fontSlack / (2*fontSlack - 1) }
	p.X.Label.Text = wrapText(p.X.Label.TextStyle, p.X.Label.Text, centred(c.Size().X-vg.Points(60)))
	p.Y.Label.Text = wrapText(p.Y.Label.TextStyle, p.Y.Label.Text, centred(c.Size().Y-vg.Points(40)))
	p.Draw(c)
}

// legendWidth is the room a legend takes beside a plot, with slack for a
// wider fallback font; 0 for a legend without entries.
func legendWidth(l plot.Legend) vg.Length {
	r := l.Rectangle(draw.Canvas{})
	w := r.Max.X - r.Min.X
	if w <= 0 {
		return 0
	}
	return l.ThumbnailWidth + (w-l.ThumbnailWidth)*fontSlack + 4
}

// keyEntry is one entry of a key drawn beneath a figure.
type keyEntry struct {
	name  string
	thumb plot.Thumbnailer
}

// drawKey draws entries at the bottom of c in as many columns as fit (each
// as wide as the widest entry, fontSlack included), and returns c above
// them.
func drawKey(c draw.Canvas, entries []keyEntry) draw.Canvas {
	if len(entries) == 0 {
		return c
	}
	mk := func(e keyEntry) plot.Legend {
		l := plot.NewLegend()
		l.TextStyle.Font.Size = vg.Points(10)
		l.Top, l.Left = true, true
		l.Add(e.name, e.thumb)
		return l
	}
	var colW vg.Length
	for _, e := range entries {
		colW = max(colW, legendWidth(mk(e))+vg.Points(10))
	}
	cols := max(1, int(c.Size().X/colW))
	rows := (len(entries) + cols - 1) / cols
	rowH := vg.Points(14)
	for i, e := range entries {
		r, col := i/cols, i%cols
		kc := c
		kc.Min.X = c.Min.X + vg.Length(col)*colW
		kc.Max.X = kc.Min.X + colW
		kc.Max.Y = c.Min.Y + vg.Length(rows-r)*rowH
		kc.Min.Y = kc.Max.Y - rowH
		l := mk(e)
		l.Draw(kc)
	}
	c.Min.Y += vg.Length(rows)*rowH + vg.Points(6)
	return c
}

// titleStyle is the style of a figure's title.
func titleStyle() text.Style {
	p := plot.New()
	return p.Title.TextStyle
}

// drawTitle draws title at the top left of c, wrapped at ", " to fit c's
// width (fontSlack included), and returns the canvas below it.
func drawTitle(c draw.Canvas, title string) draw.Canvas {
	if title == "" {
		return c
	}
	sty := titleStyle()
	title = wrapText(sty, title, c.Size().X)
	r := sty.Rectangle(title)
	sty.XAlign, sty.YAlign = draw.XLeft, draw.YTop
	c.FillText(sty, vg.Point{X: c.Min.X, Y: c.Max.Y}, title)
	c.Max.Y -= r.Size().Y + vg.Points(6)
	return c
}

// wrapText breaks s after ", " (else at a space) into lines that fit width
// at sty, fontSlack included.
func wrapText(sty text.Style, s string, width vg.Length) string {
	fits := func(line string) bool { return sty.Width(line)*fontSlack <= width }
	if fits(s) {
		return s
	}
	var lines []string
	line := ""
	for _, sep := range []string{", ", " "} {
		if !strings.Contains(s, sep) {
			continue
		}
		lines, line = nil, ""
		for i, w := range strings.Split(s, sep) {
			piece := w
			if i > 0 {
				piece = sep + w
			}
			if line != "" && !fits(line+strings.TrimRight(piece, " ")) {
				lines = append(lines, strings.TrimRight(line+strings.TrimSpace(sep), " "))
				line = w
				continue
			}
			line += piece
		}
		lines = append(lines, line)
		ok := true
		for _, l := range lines {
			ok = ok && fits(l)
		}
		if ok {
			break
		}
	}
	return strings.Join(lines, "\n")
}

// medianWhiskers draws, per point, a median and its interval as a
// horizontal (or vertical) whisker with a dot in the middle.
type medianWhiskers struct {
	pts        []whisker
	horizontal bool
	color      color.Color
	shape      draw.GlyphDrawer
}

// whisker is a median (X, Y) with its interval along one axis; Lo and Hi
// are NaN when unknown.
type whisker struct{ X, Y, Lo, Hi float64 }

func (m *medianWhiskers) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	ls := draw.LineStyle{Color: m.color, Width: vg.Points(1.5)}
	cap := vg.Points(3)
	for _, w := range m.pts {
		x, y := trX(w.X), trY(w.Y)
		if !math.IsNaN(w.Lo) && !math.IsNaN(w.Hi) {
			if m.horizontal {
				lo, hi := trX(w.Lo), trX(w.Hi)
				c.StrokeLine2(ls, lo, y, hi, y)
				c.StrokeLine2(ls, lo, y-cap, lo, y+cap)
				c.StrokeLine2(ls, hi, y-cap, hi, y+cap)
			} else {
				lo, hi := trY(w.Lo), trY(w.Hi)
				c.StrokeLine2(ls, x, lo, x, hi)
				c.StrokeLine2(ls, x-cap, lo, x+cap, lo)
				c.StrokeLine2(ls, x-cap, hi, x+cap, hi)
			}
		}
		c.DrawGlyph(draw.GlyphStyle{Color: m.color, Radius: vg.Points(3), Shape: m.shape}, vg.Point{X: x, Y: y})
	}
}

func (m *medianWhiskers) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, ymin = math.Inf(1), math.Inf(1)
	xmax, ymax = math.Inf(-1), math.Inf(-1)
	for _, w := range m.pts {
		xs, ys := []float64{w.X}, []float64{w.Y}
		if !math.IsNaN(w.Lo) && !math.IsNaN(w.Hi) {
			if m.horizontal {
				xs = append(xs, w.Lo, w.Hi)
			} else {
				ys = append(ys, w.Lo, w.Hi)
			}
		}
		for _, x := range xs {
			xmin, xmax = math.Min(xmin, x), math.Max(xmax, x)
		}
		for _, y := range ys {
			ymin, ymax = math.Min(ymin, y), math.Max(ymax, y)
		}
	}
	return
}

// Thumbnail draws the dot with a short whisker.
func (m *medianWhiskers) Thumbnail(c *draw.Canvas) {
	ls := draw.LineStyle{Color: m.color, Width: vg.Points(1.5)}
	mid := vg.Point{X: (c.Min.X + c.Max.X) / 2, Y: (c.Min.Y + c.Max.Y) / 2}
	c.StrokeLine2(ls, c.Min.X+2, mid.Y, c.Max.X-2, mid.Y)
	c.DrawGlyph(draw.GlyphStyle{Color: m.color, Radius: vg.Points(3), Shape: m.shape}, mid)
}

// ciOf is xs's median with its interval as a whisker at (median, y), or
// nil for no values.
func ciOf(xs []float64, y, conf float64) *whisker {
	if len(xs) == 0 {
		return nil
	}
	m := stats.MedianCI(xs, conf)
	w := &whisker{X: m.Value, Y: y, Lo: math.NaN(), Hi: math.NaN()}
	if m.Finite() {
		w.Lo, w.Hi = m.Low, m.High
	}
	return w
}

// cdfPlot draws each arm's cold starts under budget as an empirical CDF
// (its steps), with the median at 0.5 marked by a dot and its interval at
// confidence as a whisker; a log X axis when the slowest arm is more than
// ten times the fastest.
func cdfPlot(c *Campaign, budget string, conf float64) (framed, bool, error) {
	p := plot.New()
	p.X.Label.Text = "spawn → first RPC (ms)"
	if c.Knative() {
		p.X.Label.Text = "t0 → first RPC (ms)"
	}
	p.Y.Label.Text = "fraction of cold starts"
	arms := budgetsOf(c.Samples, func(s Sample) string { return s.Arm })
	cs := coldSamples(c)
	n := 0
	for i, arm := range arms {
		xs := append([]float64(nil), cs[[2]string{arm, budget}]...)
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
			return framed{}, false, fmt.Errorf("plot %s %s: %w", arm, budget, err)
		}
		l.Color = plotutil.Color(i)
		l.Width = vg.Points(1.5)
		p.Add(l)
		// Each arm's median a little above or below 0.5, so that
		// overlapping intervals stay apart.
		mw := &medianWhiskers{pts: []whisker{*ciOf(xs, 0.5+(float64(i)-float64(len(arms)-1)/2)*0.035, conf)}, horizontal: true, color: plotutil.Color(i), shape: draw.CircleGlyph{}}
		p.Add(mw)
		p.Legend.Add(arm, l, mw)
		n++
	}
	p.Add(plotter.NewGrid())
	p.Y.Min, p.Y.Max = 0, 1
	if p.X.Min > 0 && p.X.Max > 10*p.X.Min {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = logTicks{}
		p.X.Label.Text = strings.TrimSuffix(p.X.Label.Text, ")") + ", log)"
		// Whole 1-2-5 ticks on both sides of the data.
		p.X.Min, p.X.Max = tickFloor(p.X.Min), tickCeil(p.X.Max)
	} else {
		p.X.Tick.Marker = unitTicks{""}
		p.X.Min, p.X.Max = niceRange(p.X.Min, p.X.Max)
	}
	p.Legend.Add(fmt.Sprintf("median, %.0f%% interval", 100*conf), &medianWhiskers{color: color.Black, shape: draw.CircleGlyph{}})
	return framed{p: p}, n > 0, nil
}

// niceRange widens [lo, hi] to the major ticks of gonum's default marker
// just outside it, so that no step ends on the frame.
func niceRange(lo, hi float64) (float64, float64) {
	ts := plot.DefaultTicks{}.Ticks(lo, hi)
	var step float64
	var prev = math.NaN()
	for _, t := range ts {
		if t.Label == "" {
			continue
		}
		if !math.IsNaN(prev) {
			step = t.Value - prev
			break
		}
		prev = t.Value
	}
	if step <= 0 {
		return lo, hi
	}
	return math.Floor(lo/step) * step, math.Ceil(hi/step) * step
}

// tickFloor and tickCeil round v down and up to 1, 2 or 5 times a power
// of ten: a log axis that ends on a labelled tick.
func tickFloor(v float64) float64 {
	e := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{5, 2, 1} {
		if m*e <= v {
			return m * e
		}
	}
	return e
}

func tickCeil(v float64) float64 {
	e := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*e >= v {
			return m * e
		}
	}
	return 10 * e
}

// densityPlot draws PSS and RSS per idle instance per arm as bars side by
// side, each the median over the instances with its interval as a
// whisker.
func densityPlot(c *Campaign, conf float64) (framed, error) {
	p := plot.New()
	p.Y.Label.Text = "MiB per idle instance"
	var names []string
	pss := make(plotter.Values, len(c.Density))
	rss := make(plotter.Values, len(c.Density))
	var pw, rw []whisker
	w := vg.Points(16)
	for i, d := range c.Density {
		names = append(names, d.Arm)
		pss[i] = float64(d.PSSBytes) / (1 << 20)
		rss[i] = float64(d.RSSBytes) / (1 << 20)
		var xp, xr []float64
		for _, s := range c.DensitySamples {
			if s.Arm == d.Arm && s.Budget == d.Budget {
				xp = append(xp, float64(s.PSSBytes)/(1<<20))
				xr = append(xr, float64(s.RSSBytes)/(1<<20))
			}
		}
		for _, x := range []struct {
			xs  []float64
			out *[]whisker
			v   float64
		}{{xp, &pw, pss[i]}, {xr, &rw, rss[i]}} {
			wk := ciOf(x.xs, 0, conf)
			if wk == nil {
				wk = &whisker{Lo: math.NaN(), Hi: math.NaN()}
			}
			// The bar is the recorded median; the whisker its interval.
			*x.out = append(*x.out, whisker{X: float64(i), Y: x.v, Lo: wk.Lo, Hi: wk.Hi})
		}
	}
	bp, err := plotter.NewBarChart(pss, w)
	if err != nil {
		return framed{}, fmt.Errorf("plot density: %w", err)
	}
	br, err := plotter.NewBarChart(rss, w)
	if err != nil {
		return framed{}, fmt.Errorf("plot density: %w", err)
	}
	bp.Color, br.Color = plotutil.Color(0), plotutil.Color(1)
	bp.LineStyle.Width, br.LineStyle.Width = 0, 0
	bp.Offset, br.Offset = -w/2, w/2
	p.Add(plotter.NewGrid(), bp, br)
	p.Add(&offsetWhiskers{medianWhiskers{pts: pw, color: color.Black, shape: nilGlyph{}}, -w / 2})
	p.Add(&offsetWhiskers{medianWhiskers{pts: rw, color: color.Black, shape: nilGlyph{}}, w / 2})
	p.Legend.Add("PSS", bp)
	p.Legend.Add("RSS", br)
	p.Legend.Add(fmt.Sprintf("%.0f%% interval", 100*conf), &medianWhiskers{color: color.Black, shape: nilGlyph{}})
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.6, float64(len(names))-0.4
	p.X.Tick.Label.Font.Size = vg.Points(11)
	p.Y.Min = 0
	p.Y.Max *= 1.06 // the tallest whisker clear of the frame
	return framed{p: p}, nil
}

// offsetWhiskers are vertical whiskers shifted sideways by dx, onto a
// dodged bar.
type offsetWhiskers struct {
	medianWhiskers
	dx vg.Length
}

func (o *offsetWhiskers) Plot(c draw.Canvas, p *plot.Plot) {
	c.Min.X += o.dx
	c.Max.X += o.dx
	o.medianWhiskers.Plot(c, p)
}

// nilGlyph draws nothing: a whisker without its dot, on a bar.
type nilGlyph struct{}

func (nilGlyph) DrawGlyph(*draw.Canvas, draw.GlyphStyle, vg.Point) {}

type namedPlot struct {
	p           *plot.Plot
	name, title string
}

// steadyPlots draws, per budget, the latency percentiles per arm and
// protocol of the sequential step (else the first), with the p50's and
// p99's intervals over rounds as whiskers; and, across budgets, calls/s
// and server CPU per call at the most calls in flight, with their
// intervals.
func steadyPlots(c *Campaign) ([]namedPlot, error) {
	var out []namedPlot
	for _, b := range budgetsOf(c.Steady, func(s SteadyRow) string { return s.Budget }) {
		var rows []SteadyRow
		seen := map[string]bool{}
		for _, pref := range []string{"sequential", ""} {
			for _, s := range c.Steady {
				k := s.Arm + "/" + string(s.Protocol)
				if s.Budget == b && (pref == "" || string(s.Scenario) == pref) && !seen[k] && s.P50Us > 0 {
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
		p.X.Min, p.X.Max = -0.3, 4.3
		// The legend names the step only where the rows' steps differ.
		one := true
		for _, s := range rows {
			one = one && fmt.Sprint(shapeOf(s)) == fmt.Sprint(shapeOf(rows[0]))
		}
		for i, s := range rows {
			pts := plotter.XYs{{X: 0, Y: s.P50Us}, {X: 1, Y: s.P90Us}, {X: 2, Y: s.P99Us}, {X: 3, Y: s.P999Us}, {X: 4, Y: s.MaxUs}}
			for j := range pts {
				pts[j].Y = max(pts[j].Y, 0.1) // a log scale has no zero
			}
			// Each arm a little to the side, so that whiskers do not hide
			// one another.
			dx := (float64(i) - float64(len(rows)-1)/2) * 0.06
			for j := range pts {
				pts[j].X += dx
			}
			l, sc, err := plotter.NewLinePoints(pts)
			if err != nil {
				return nil, fmt.Errorf("plot %s latency: %w", s.Arm, err)
			}
			l.Color, sc.Color = plotutil.Color(i), plotutil.Color(i)
			sc.Shape = plotutil.Shape(i)
			p.Add(l, sc)
			mw := &medianWhiskers{color: plotutil.Color(i), shape: nilGlyph{}}
			for j, ci := range []*Interval{s.P50UsCI, nil, s.P99UsCI} {
				if w, ok := ciWhisker(pts[j].X, pts[j].Y, ci); ok {
					mw.pts = append(mw.pts, w)
				}
			}
			p.Add(mw)
			name := s.Arm + " " + string(s.Protocol)
			if !one {
				name += " " + fmt.Sprint(shapeOf(s))
			}
			p.Legend.Add(name, l, sc)
		}
		p.Add(plotter.NewGrid())
		step := string(rows[0].Scenario) + " step"
		if one {
			step = fmt.Sprint(shapeOf(rows[0]))
		}
		out = append(out, namedPlot{p, "latency_" + b, "latency percentiles under " + b + ", " + step + ", p50 and p99 with their intervals"})
	}
	budgets := budgetsOf(c.Steady, func(s SteadyRow) string { return s.Budget })
	type ap struct{ arm, proto string }
	best := map[ap]map[string]SteadyRow{}
	var keys []ap
	for _, s := range c.Steady {
		if s.Scenario != "throughput" || s.CallsPerS <= 0 {
			continue
		}
		k := ap{s.Arm, string(s.Protocol)}
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
		f                  func(SteadyRow) (float64, *Interval)
	}{
		{"throughput", "calls/s per budget at the most calls in flight", "calls/s", func(s SteadyRow) (float64, *Interval) { return s.CallsPerS, s.CallsPerSCI }},
		{"cpu_per_call", "server CPU per call per budget at the most calls in flight", "server CPU per call (µs)", func(s SteadyRow) (float64, *Interval) {
			return valF(s.ServerCPUUsPerCall), s.ServerCPUUsPerCallCI
		}},
	} {
		p := plot.New()
		p.Y.Label.Text = m.label
		p.NominalX(budgets...)
		p.X.Min, p.X.Max = -0.3, float64(len(budgets))-0.7
		for i, k := range keys {
			var pts plotter.XYs
			mw := &medianWhiskers{color: plotutil.Color(i), shape: nilGlyph{}}
			dx := (float64(i) - float64(len(keys)-1)/2) * 0.04
			for j, b := range budgets {
				if s, ok := best[k][b]; ok {
					v, ci := m.f(s)
					pts = append(pts, plotter.XY{X: float64(j) + dx, Y: v})
					if w, ok := ciWhisker(float64(j)+dx, v, ci); ok {
						mw.pts = append(mw.pts, w)
					}
				}
			}
			l, sc, err := plotter.NewLinePoints(pts)
			if err != nil {
				return nil, fmt.Errorf("plot %s: %w", m.name, err)
			}
			l.Color, sc.Color = plotutil.Color(i), plotutil.Color(i)
			sc.Shape = plotutil.Shape(i)
			p.Add(l, sc, mw)
			p.Legend.Add(k.arm+" "+k.proto, l, sc)
		}
		p.Add(plotter.NewGrid())
		p.Y.Min = 0
		out = append(out, namedPlot{p, m.name, m.title + ", medians over rounds with their intervals"})
	}
	return out, nil
}

// ciWhisker is a vertical whisker at (x, y) for a recorded interval, if
// both its bounds are known.
func ciWhisker(x, y float64, ci *Interval) (whisker, bool) {
	if ci == nil || ci.Low == nil || ci.High == nil {
		return whisker{}, false
	}
	return whisker{X: x, Y: y, Lo: *ci.Low, Hi: *ci.High}, true
}

// logTicks labels 1, 2 and 5 times each power of ten on a log axis.
type logTicks struct{}

func (logTicks) Ticks(min, max float64) []plot.Tick {
	var ts []plot.Tick
	for e := math.Floor(math.Log10(min)); math.Pow(10, e) <= max; e++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, e)
			if v < min*(1-1e-9) || v > max*(1+1e-9) {
				continue
			}
			ts = append(ts, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', -1, 64)})
		}
	}
	return ts
}

// headroom starts the Y axis at zero and leaves a little room above the
// highest point (legends are drawn beside the plot, not over it).
func headroom(p *plot.Plot) {
	p.Y.Min = 0
	p.Y.Max *= 1.1
}
