package report

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"

	"github.com/coldstart-go/coldstart/record"
)

// PullRow is one image pull, as `coldstart pull` records it (kind "pull").
type PullRow = record.PullRow

// PullKind is the record kind of pull rows.
const PullKind = "pull"

// CapTolerance is how far a capped link's measured rate may stray from the
// cap (as a fraction) before the row is doubted.
const CapTolerance = 0.10

// PullMinRuns: a pull summary of fewer runs is doubted.
const PullMinRuns = 3

// pullDoubt says why a pull summary is doubted ("" = it is not).
func pullDoubt(s record.PullSummary) string {
	var why []string
	if s.N < PullMinRuns {
		why = append(why, fmt.Sprintf("%d run(s)", s.N))
	}
	if s.BandwidthBits > 0 && s.CapRatio > 0 && math.Abs(s.CapRatio-1) > CapTolerance {
		why = append(why, fmt.Sprintf("link ran at %.2f of its cap", s.CapRatio))
	}
	return strings.Join(why, "; ")
}

// pullSummaries are c's pull rows summarized (medians per variant, deploy
// and bandwidth).
func (c *Campaign) pullSummaries() []record.PullSummary { return record.SummarizePulls(c.Pull) }

func mb(b int64) string { return fmt.Sprintf("%.2f MB", float64(b)/1e6) }

func (r *Report) pullRef(c *Campaign) string {
	n, i := 0, 0
	for _, x := range r.Campaigns {
		if len(x.Pull) > 0 {
			n++
			if x == c {
				i = n
			}
		}
	}
	if n <= 1 {
		return "pull"
	}
	return fmt.Sprintf("pull#%d", i)
}

// pullSection writes, per pull campaign: the first-deploy table (pull,
// unpack, first RPC per variant and bandwidth), the break-even table, and
// what a second deploy pulls.
func (r *Report) pullSection(m *mdw, plots func(*Campaign, string)) {
	if !r.has(func(c *Campaign) bool { return len(c.Pull) > 0 }) {
		return
	}
	m.p("## Image pull: node without the image → first RPC\n\n")
	for _, c := range r.Campaigns {
		if len(c.Pull) == 0 {
			continue
		}
		sums := c.pullSummaries()
		m.p("### %s — %s (%s)\n\n", r.pullRef(c), c.Label, where(c))
		var rows [][]string
		for _, s := range sums {
			if s.Deploy != 1 {
				continue
			}
			link := ""
			if s.CapRatio > 0 {
				link = fmt.Sprintf("%.2f", s.CapRatio)
			}
			rows = append(rows, []string{
				s.Arm + dagger(pullDoubt(s)), string(s.Compression), string(s.Layering), s.Bandwidth, fmt.Sprint(s.N),
				mb(s.ImageBytes), mb(s.WireBytes), ms(s.PullMs), ms(s.UnpackMs), ms(s.ImageReadyMs),
				msOrEmpty(s.ColdStartMs), msOrEmpty(s.WarmStartMs), msOrEmpty(s.NodeToFirstRPCMs), link, pullDoubt(s),
			})
		}
		m.table([]string{"arm", "compression", "layers", "bandwidth", "runs", "image", "wire", "pull ms", "unpack ms",
			"image ready ms", "cold start ms", "warm start ms", "node → first RPC ms", "link/cap", "doubt"}, rows)
		m.p("%s Medians. The registry runs in coldstart's process on 127.0.0.1 with the link cap as a token bucket on every "+
			"response body; pull = manifest, config and the layers the node lacks, one after another, digests verified; "+
			"unpack = decompress and untar; cold start = spawn → first RPC after the root filesystem was evicted from the "+
			"page cache (fadvise DONTNEED); node → first RPC = image ready + cold start. link/cap = layer bytes over "+
			"layer time, divided by the cap.\n\n", provenanceLine(c))
		plots(c, "pull")

		starts := record.PullArmStarts(c.Pull)
		if len(starts) > 0 {
			arms := make([]string, 0, len(starts))
			for a := range starts {
				arms = append(arms, a)
			}
			sort.Strings(arms)
			var srows [][]string
			for _, a := range arms {
				st := starts[a]
				srows = append(srows, []string{a, fmt.Sprint(st.N), ms(st.AfterPullMs), ms(st.ColdMs), ms(st.WarmMs)})
			}
			m.p("**Starts from the unpacked image**, pooled per arm over every image and bandwidth above (the files are the same): " +
				"spawn → first RPC right after the unpack, after evicting the files from the page cache, and warm. " +
				"The break-even uses these.\n\n")
			m.table([]string{"arm", "starts", "after pull ms", "cold page cache ms", "warm ms"}, srows)
		}

		be := record.PullBreakEvens(c.Pull)
		if len(be) > 0 {
			m.p("**Break-even: starts per pull** — the first start on a node costs the image and a cold start, each later " +
				"one a warm start; below the break-even the image that is faster to the first RPC wins, above it the one " +
				"with faster later starts.\n\n")
			var brows [][]string
			for _, e := range be {
				brows = append(brows, []string{
					e.Bandwidth, e.Small.String(), e.Other.String(), ms(e.SmallFirstMs), ms(e.OtherFirstMs),
					ms(e.SmallWarmMs), ms(e.OtherWarmMs), breakEvenText(e),
				})
			}
			m.table([]string{"bandwidth", "smaller image", "other", "first ms (smaller)", "first ms (other)",
				"later ms (smaller)", "later ms (other)", "who wins"}, brows)
		}

		var srows [][]string
		for _, s := range sums {
			if s.Deploy != 2 {
				continue
			}
			srows = append(srows, []string{
				s.Arm, string(s.Compression), string(s.Layering), s.Bandwidth,
				fmt.Sprintf("%d pulled, %d reused", s.LayersPulled, s.LayersReused), mb(s.WireBytes),
				ms(s.PullMs), ms(s.UnpackMs),
			})
		}
		if len(srows) > 0 {
			m.p("**Second deploy** — the node holds deploy 1; deploy 2 has a rebuilt binary (a new binary layer digest), the same base files.\n\n")
			m.table([]string{"arm", "compression", "layers", "bandwidth", "layers", "wire", "pull ms", "unpack ms"}, srows)
		}
		plots(c, "breakeven")
	}
}

// breakEvenText says who wins when, in words.
func breakEvenText(e record.PullBreakEven) string {
	small, other := e.Small.Arm, e.Other.Arm
	if small == other {
		small, other = string(e.Small.Compression), string(e.Other.Compression)
	}
	if e.NoDifference {
		return fmt.Sprintf("no difference detected (p = %.2f first start, %.2f later starts)", e.FirstP, e.WarmP)
	}
	switch e.Always {
	case "small":
		return small + " at any number of starts"
	case "other":
		return other + " at any number of starts"
	}
	if e.SmallWinsBelow {
		return fmt.Sprintf("%s below %.1f starts per pull, %s above", small, e.Starts, other)
	}
	return fmt.Sprintf("%s below %.1f starts per pull, %s above", other, e.Starts, small)
}

// pullRecs: per arm, the compression whose image reaches the first RPC
// sooner at every link measured; per pair of arms (same compression,
// single layer), up to how many starts per pull the smaller image wins,
// at the fastest link where it still does. These compare images with each
// other, not arms with the baseline. Pairs not told apart at any link go
// to the table of comparisons not acted on.
func (r *Report) pullRecs() ([]Recommendation, []held) {
	var out []Recommendation
	var hs []held
	for _, c := range r.Campaigns {
		if len(c.Pull) == 0 {
			continue
		}
		pr := r.pullRef(c)
		sums := c.pullSummaries()
		doubt := map[string]string{}
		for _, s := range sums {
			doubt[s.PullVariant.String()+"@"+s.Bandwidth] = pullDoubt(s)
		}
		cites := func(ct *cite, e record.PullBreakEven) {
			for _, v := range []record.PullVariant{e.Small, e.Other} {
				ct.add(pr+" "+v.String()+"@"+e.Bandwidth, doubt[v.String()+"@"+e.Bandwidth])
			}
		}
		// Compressions: per arm and layering, which compression reaches the
		// first RPC sooner, where it is the same at every link measured.
		type armLay struct {
			arm string
			lay record.Layering
		}
		comp := map[armLay][]record.PullBreakEven{}
		var corder []armLay
		for _, e := range record.PullBreakEvens(c.Pull) {
			if e.Small.Arm != e.Other.Arm || e.Small.Layering != record.SingleLayer {
				continue
			}
			k := armLay{e.Small.Arm, e.Small.Layering}
			if _, ok := comp[k]; !ok {
				corder = append(corder, k)
			}
			comp[k] = append(comp[k], e)
		}
		for _, k := range corder {
			es := comp[k]
			winner, loser := "", ""
			var ct cite
			ct.from(c)
			var links []string
			for _, e := range es {
				w, l, wms, lms := "", "", 0.0, 0.0
				switch e.Always {
				case "small":
					w, l, wms, lms = string(e.Small.Compression), string(e.Other.Compression), e.SmallFirstMs, e.OtherFirstMs
				case "other":
					w, l, wms, lms = string(e.Other.Compression), string(e.Small.Compression), e.OtherFirstMs, e.SmallFirstMs
				}
				if w == "" || (winner != "" && w != winner) {
					winner = "-"
					break
				}
				winner, loser = w, l
				links = append(links, fmt.Sprintf("%s %s vs %s ms", e.Bandwidth, ms(wms), ms(lms)))
				cites(&ct, e)
			}
			if winner == "" || winner == "-" {
				continue
			}
			out = append(out, ct.rec(prose(fmt.Sprintf("For %s, pull %s layers rather than %s: on a node without the image they reach the first RPC sooner at every link measured", k.arm, winner, loser),
				"image + cold start "+strings.Join(links, ", "))))
		}

		type pair struct{ small, other record.PullVariant }
		byPair := map[pair][]record.PullBreakEven{}
		var order []pair
		for _, e := range record.PullBreakEvens(c.Pull) {
			if e.Small.Arm == e.Other.Arm || e.Small.Layering != record.SingleLayer || e.BandwidthBits == 0 {
				continue
			}
			k := pair{e.Small, e.Other}
			if _, ok := byPair[k]; !ok {
				order = append(order, k)
			}
			byPair[k] = append(byPair[k], e)
		}
		for _, k := range order {
			es := byPair[k]
			sort.Slice(es, func(i, j int) bool { return es[i].BandwidthBits < es[j].BandwidthBits })
			var ct cite
			ct.from(c)
			var parts []string
			noDiff := true
			for _, e := range es {
				cites(&ct, e)
				parts = append(parts, e.Bandwidth+": "+breakEvenShort(e))
				noDiff = noDiff && e.NoDifference
			}
			if noDiff {
				for _, e := range es {
					a, b := e.SmallFirstMs, e.OtherFirstMs
					hs = append(hs, held{ref: pr, why: whyNoDifference + " (first and later starts)", row: ComparisonRow{
						Kind: "arms", Campaign: c.Label, Scope: fmt.Sprintf("%s/%s @%s", e.Small.Compression, e.Small.Layering, e.Bandwidth),
						Metric: "node_to_first_rpc_ms", A: e.Small.Arm, B: e.Other.Arm, MedianA: &a, MedianB: &b, PValue: e.FirstP, Test: e.FirstTest}})
				}
				continue
			}
			scope := fmt.Sprintf("Image pull, %s layers, on a node without the image", k.small.Compression)
			// The fastest link at which the smaller image still wins the
			// first starts, and up to how many.
			verdict := fmt.Sprintf("%s: %s does not pay at any link measured, its smaller image never making up for its slower starts", scope, k.small.Arm)
			for i := len(es) - 1; i >= 0; i-- {
				if e := es[i]; e.SmallWinsBelow && e.Always == "" && e.Starts > 1 {
					n := int(math.Ceil(e.Starts)) - 1 // the most whole starts below the break-even
					verdict = fmt.Sprintf("%s: %s wins at ≤ %s when a pull serves at most %d start(s)", scope, k.small.Arm, e.Bandwidth, n)
					break
				} else if e.Always == "small" {
					verdict = fmt.Sprintf("%s: %s wins at ≤ %s at any number of starts per pull", scope, k.small.Arm, e.Bandwidth)
					break
				}
			}
			out = append(out, ct.rec(prose(verdict, fmt.Sprintf("%s %s vs %s %s", k.small.Arm, mb(es[0].SmallBytes), k.other.Arm, mb(es[0].OtherBytes)),
				strings.Join(parts, ", "))))
		}
	}
	return out, hs
}

// breakEvenShort is breakEvenText for a list: who wins at one link.
func breakEvenShort(e record.PullBreakEven) string {
	small, other := e.Small.Arm, e.Other.Arm
	switch {
	case e.NoDifference:
		return "not told apart"
	case e.Always == "small":
		return small + " always"
	case e.Always == "other":
		return other + " always"
	case e.SmallWinsBelow:
		return fmt.Sprintf("%s below %.1f starts", small, e.Starts)
	}
	return fmt.Sprintf("%s below %.1f starts", other, e.Starts)
}

// pullPlots: node → first RPC against the link's speed per deploy-1
// variant, its median over the runs with the interval at conf as a
// whisker, and the break-even starts per pull against it per pair of arms
// (a figure derived from medians, without an interval). Uncapped ("max")
// rows have no speed to plot and are left out.
func pullPlots(c *Campaign, conf float64) ([]namedPlot, error) {
	var out []namedPlot

	runs := map[string][]float64{}
	for _, r := range c.Pull {
		if r.Deploy == 1 && r.BandwidthBits > 0 && r.NodeToFirstRPCMs > 0 {
			k := fmt.Sprintf("%s@%d", r.PullVariant, r.BandwidthBits)
			runs[k] = append(runs[k], r.NodeToFirstRPCMs)
		}
	}
	first := newSeries()
	for _, s := range c.pullSummaries() {
		if s.Deploy != 1 || s.BandwidthBits == 0 || s.NodeToFirstRPCMs <= 0 {
			continue
		}
		pt := plotter.XY{X: float64(s.BandwidthBits) / 1e6, Y: s.NodeToFirstRPCMs}
		first.add(s.PullVariant.String(), pt)
		if w := ciOf(runs[fmt.Sprintf("%s@%d", s.PullVariant, s.BandwidthBits)], 0, conf); w != nil && !math.IsNaN(w.Lo) {
			first.ci[s.PullVariant.String()] = append(first.ci[s.PullVariant.String()], whisker{X: pt.X, Y: pt.Y, Lo: w.Lo, Hi: w.Hi})
		}
	}
	p, err := first.linkPlot("node → first RPC (ms, log)", true)
	if err != nil {
		return nil, fmt.Errorf("plot pull: %w", err)
	}
	if p != nil {
		out = append(out, namedPlot{p: p, name: "pull", title: fmt.Sprintf("node without the image → first RPC per link speed, median with %.0f%% interval", 100*conf)})
	}

	be := newSeries()
	for _, e := range record.PullBreakEvens(c.Pull) {
		if e.Small.Arm == e.Other.Arm || e.BandwidthBits == 0 || e.Always != "" || e.Starts <= 0 {
			continue
		}
		n := e.Small.Arm + " vs " + e.Other.Arm + " (" + string(e.Small.Compression) + ", " + string(e.Small.Layering) + ")"
		be.add(n, plotter.XY{X: float64(e.BandwidthBits) / 1e6, Y: e.Starts})
	}
	q, err := be.linkPlot("break-even (starts per pull, log)", false)
	if err != nil {
		return nil, fmt.Errorf("plot break-even: %w", err)
	}
	if q != nil {
		out = append(out, namedPlot{p: q, name: "breakeven", title: "starts per pull below which the smaller image wins, per link speed"})
	}
	return out, nil
}

// series are named lines of points, in the order their names first came,
// with intervals (whiskers) for some of their points.
type series struct {
	names []string
	xy    map[string]plotter.XYs
	ci    map[string][]whisker
}

func newSeries() *series {
	return &series{xy: map[string]plotter.XYs{}, ci: map[string][]whisker{}}
}

func (l *series) add(name string, p plotter.XY) {
	if _, ok := l.xy[name]; !ok {
		l.names = append(l.names, name)
	}
	l.xy[name] = append(l.xy[name], p)
}

// linkPlot draws each series against the link's speed (Mbit/s), both axes
// logarithmic and ending on labelled ticks, as a line with points in its
// own colour and shape (dashed too when dashes) and its intervals as
// vertical whiskers, with a grid; nil when there is nothing to draw.
func (l *series) linkPlot(ylabel string, dashes bool) (*plot.Plot, error) {
	if len(l.names) == 0 {
		return nil, nil
	}
	p := plot.New()
	p.X.Label.Text = "link (Mbit/s, log)"
	p.Y.Label.Text = ylabel
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = logTicks{}, logTicks{}
	for i, n := range l.names {
		xy := l.xy[n]
		sort.Slice(xy, func(a, b int) bool { return xy[a].X < xy[b].X })
		ln, pts, err := plotter.NewLinePoints(xy)
		if err != nil {
			return nil, err
		}
		ln.Color, pts.Color = plotutil.Color(i), plotutil.Color(i)
		if dashes {
			ln.Dashes = plotutil.Dashes(i)
		}
		pts.Shape = plotutil.Shape(i)
		p.Add(ln, pts)
		if len(l.ci[n]) > 0 {
			p.Add(&medianWhiskers{pts: l.ci[n], color: plotutil.Color(i), shape: nilGlyph{}})
		}
		p.Legend.Add(n, ln, pts)
	}
	p.Add(plotter.NewGrid())
	p.X.Min, p.X.Max = tickFloor(p.X.Min), tickCeil(p.X.Max)
	p.Y.Min, p.Y.Max = tickFloor(p.Y.Min), tickCeil(p.Y.Max)
	return p, nil
}
