package report

import (
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/coldstart-go/coldstart/internal/stats"
	"github.com/coldstart-go/coldstart/record"
)

// maxProse is the most characters a Recommendation's Text holds: the
// verdict and the figures it needs, read at a glance. Rows, files and
// doubts go to its footnote.
const maxProse = 240

// Recommendation is one conclusion drawn from the figures, its verdict
// first and set against the baseline arm (BaselineOf), with the rows it
// rests on ("coldstart#1 static/cpus=0", "density#1 upx/max"), those of
// them that are doubted, and the results files they come from.
type Recommendation struct {
	// Text is the verdict and its figures, at most maxProse characters,
	// without citations: the Markdown report cites Rows, Doubted and
	// Files in a footnote.
	Text    string
	Rows    []string
	Doubted []string
	// Files are the base names of the results files Rows come from.
	Files []string
}

// String renders the recommendation as plain text, citations inline: the
// text, its rows and, when some are doubted, a warning.
func (r Recommendation) String() string {
	s := strings.TrimSuffix(r.Text, ".") + " (rows: " + strings.Join(r.Rows, ", ") + ")."
	if len(r.Doubted) > 0 {
		s += " " + doubtNote(r.Doubted)
	}
	return s
}

func doubtNote(rows []string) string {
	return "Rests on doubted rows (" + strings.Join(rows, ", ") + "): rerun on a quiet host before acting on it."
}

// ref names a campaign's kind in citations: "coldstart", or "coldstart#2"
// when the report holds more than one cold-start campaign.
func (r *Report) ref(c *Campaign, kind string) string {
	var of []*Campaign
	for _, x := range r.Campaigns {
		switch {
		case kind == "coldstart" && len(x.Summaries) > 0,
			kind == "density" && len(x.Density) > 0,
			kind == "steady" && len(x.Steady) > 0:
			of = append(of, x)
		}
	}
	if len(of) <= 1 {
		return kind
	}
	for i, x := range of {
		if x == c {
			return fmt.Sprintf("%s#%d", kind, i+1)
		}
	}
	return kind
}

type cite struct {
	rows, doubted, files []string
}

func (c *cite) add(ref, doubt string) {
	for _, r := range c.rows {
		if r == ref {
			return
		}
	}
	c.rows = append(c.rows, ref)
	if doubt != "" {
		c.doubted = append(c.doubted, ref)
	}
}

// from records the results files of cs.
func (c *cite) from(cs ...*Campaign) {
	for _, x := range cs {
		if x.File != "" {
			c.files = appendUnique(c.files, filepath.Base(x.File))
		}
	}
}

func (c *cite) rec(text string) Recommendation {
	return Recommendation{Text: text, Rows: append([]string(nil), c.rows...),
		Doubted: append([]string(nil), c.doubted...), Files: append([]string(nil), c.files...)}
}

// held is a comparison a rule looked at and did not act on, and why:
// the report lists these in one table under the recommendations.
type held struct {
	ref string // the campaign's citation name ("coldstart#1")
	row ComparisonRow
	why string
}

// Why a comparison is not acted on.
const (
	whyNoDifference = "no difference detected"
	whyTooFew       = "too few runs for an interval"
	whyNoSamples    = "no samples in the file to test"
	whyNoRatio      = "no ratio: a value is not positive"
)

// judge says why a comparison is not acted on ("" when it is), and
// whether it is settled: both sides hold the runs a median interval needs
// (stats.MinRunsForInterval) and the ratio's interval is bounded. Only a
// settled comparison is acted on, and only when significant and at least
// the minimum effect in size; a settled one that is not says the two
// sides start (or spend) alike.
func (r *Report) judge(cr ComparisonRow) (why string, settled bool) {
	min := stats.MinRunsForInterval(r.confidence())
	switch {
	case cr.NA == 0 || cr.NB == 0:
		return whyNoSamples, false
	case cr.Ratio == nil:
		return whyNoRatio, false
	case cr.NA < min || cr.NB < min || cr.RatioCILow == nil || cr.RatioCIHigh == nil || *cr.RatioCILow <= 0:
		return whyTooFew, false
	case cr.Actionable:
		return "", true
	case cr.Verdict == string(stats.NoDifference):
		return whyNoDifference, true
	}
	return fmt.Sprintf("difference under %.0f%%", 100*r.minEffect()), true
}

// alike: a settled comparison that is not acted on.
func (r *Report) alike(cr ComparisonRow) bool {
	why, settled := r.judge(cr)
	return settled && why != ""
}

// factor renders a ratio: "1.18×", "12.8×".
func factor(x float64) string { return fig(x) + "×" }

func fig(x float64) string {
	if x >= 9.995 {
		return fmt.Sprintf("%.1f", x)
	}
	return fmt.Sprintf("%.2f", x)
}

// ratioOf is a settled comparison's ratio and interval, "[1.13, 1.27]",
// inverted (b over a) when invert: the factor by which a is faster.
func ratioOf(cr ComparisonRow, invert bool) (float64, string) {
	x, lo, hi := *cr.Ratio, *cr.RatioCILow, *cr.RatioCIHigh
	if invert {
		x, lo, hi = 1/x, 1/hi, 1/lo
	}
	return x, "[" + fig(lo) + ", " + fig(hi) + "]"
}

// pEq renders "p<0.001" or "p=0.026".
func pEq(p float64) string {
	if t := pText(p); strings.HasPrefix(t, "<") {
		return "p" + t
	}
	return "p=" + pText(p)
}

// prose ends a verdict with as many of its clauses as fit in maxProse
// characters, in their order, each after "; ", and a full stop.
func prose(verdict string, clauses ...string) string {
	s := verdict
	for _, c := range clauses {
		if c != "" && utf8.RuneCountInString(s+"; "+c+".") <= maxProse {
			s += "; " + c
		}
	}
	return s + "."
}

func capFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// within names c in prose (" in coldstart#2") when the report holds
// several campaigns of its kind, "" when one.
func (r *Report) within(c *Campaign, kind string) string {
	if ref := r.ref(c, kind); ref != kind {
		return " in " + ref
	}
	return ""
}

func mibPair(a, b int64) string {
	return fmt.Sprintf("%.1f vs %.1f MiB", float64(a)/(1<<20), float64(b)/(1<<20))
}

// recommendationsSection writes the recommendations under their heading.
func (r *Report) recommendationsSection(m *mdw) {
	m.p("## Recommendations\n\n")
	r.recommendationsBody(m)
}

// recommendationsBody writes one bullet per recommendation, each with a
// footnote citing its rows and files, then the comparisons the rules did
// not act on in one table, then the footnotes. Footnote labels are
// "r1", "r2", … so that other sections can hold footnotes of their own.
func (r *Report) recommendationsBody(m *mdw) {
	recs, hs := r.recommend()
	switch {
	case len(recs) == 0 && len(hs) == 0:
		m.p("None: no budget, density or steady step has two arms to compare.\n\n")
	case len(recs) == 0:
		m.p("None: no comparison against the baseline shows a difference worth acting on (below).\n\n")
	}
	for i, rec := range recs {
		mark := ""
		if len(rec.Doubted) > 0 {
			mark = "†"
		}
		m.p("- %s%s[^r%d]\n", rec.Text, mark, i+1)
	}
	if len(recs) > 0 {
		m.p("\n")
	}
	if len(hs) > 0 {
		m.p("**Not acted on**: the comparisons the rules above looked at and did not recommend on, each for the reason given: "+
			"%s, a difference under %.0f%%, or %s (fewer than %d a side, or an unbounded interval). "+
			"\"runs to detect\" estimates the runs per side a %.0f%% difference would need at the spread seen.\n\n",
			whyNoDifference, 100*r.minEffect(), whyTooFew, stats.MinRunsForInterval(r.confidence()), 100*r.minEffect())
		var rows [][]string
		for _, h := range hs {
			c := h.row
			p, n, need := "–", "–", ""
			if c.NA > 0 || c.PValue > 0 {
				p = pText(c.PValue)
			}
			if c.NA > 0 && c.NB > 0 {
				n = fmt.Sprintf("%d+%d", c.NA, c.NB)
			}
			if c.RunsToDetect > 0 {
				need = fmt.Sprint(c.RunsToDetect)
			}
			ratio := ratioText(c)
			if c.Ratio == nil && c.MedianA != nil && c.MedianB != nil && *c.MedianB > 0 {
				ratio = fmt.Sprintf("%.3f× (medians)", *c.MedianA / *c.MedianB)
			}
			rows = append(rows, []string{strings.TrimSpace(h.ref + " " + c.Scope), c.Metric, c.A + " vs " + c.B, ratio, p, n, need, h.why})
		}
		m.table([]string{"scope", "metric", "a vs b", fmt.Sprintf("a/b [%.0f%% CI]", 100*r.confidence()), "p", "n",
			fmt.Sprintf("runs to detect %.0f%%", 100*r.minEffect()), "why"}, rows)
	}
	for i, rec := range recs {
		m.p("[^r%d]: %s", i+1, strings.Join(rec.Rows, ", "))
		if len(rec.Files) > 0 {
			m.p(" (`%s`)", strings.Join(rec.Files, "`, `"))
		}
		m.p(".")
		if len(rec.Doubted) > 0 {
			m.p(" † %s", doubtNote(rec.Doubted))
		}
		m.p("\n")
	}
	if len(recs) > 0 {
		m.p("\n")
	}
}

// Recommendations derives conclusions from the campaigns, each arm set
// against the baseline: under each budget of each cold-start campaign the
// arm to ship and the arms to avoid (coldRecs), whether that arm changes
// with the budget (budgetRecs), the arms that take less or more idle
// memory (densityRecs), whether one arm wins both start and density
// (tradeoffRecs), server CPU per call, calls per second, HTTP against gRPC
// and load (steadyRecs), and image pulls (pullRecs). Each rests only on
// comparisons with enough runs for an interval, a significant difference
// and at least the minimum effect; nothing is said that the data does not
// show. The comparisons are made as the comparisons table makes them
// (coldRow, densityRow, steadyRow), paired by round where the rounds pair,
// so a recommendation never contradicts the row it rests on.
func (r *Report) Recommendations() []Recommendation {
	recs, _ := r.recommend()
	return recs
}

// recommend runs every rule: the recommendations, and the comparisons
// looked at and not acted on.
func (r *Report) recommend() ([]Recommendation, []held) {
	var out []Recommendation
	var hs []held
	add := func(rs []Recommendation, h []held) {
		out = append(out, rs...)
		hs = append(hs, h...)
	}
	picks := map[*Campaign][]StartPick{}
	for _, p := range r.StartPicks() {
		picks[p.Campaign] = append(picks[p.Campaign], p)
	}
	for _, c := range r.Campaigns {
		add(r.coldRecs(c, picks[c]))
		out = append(out, r.budgetRecs(c, picks[c])...)
	}
	for _, c := range r.Campaigns {
		add(r.densityRecs(c))
	}
	for _, c := range r.Campaigns {
		out = append(out, r.tradeoffRecs(c, picks[c])...)
	}
	for _, c := range r.Campaigns {
		add(r.steadyRecs(c))
	}
	add(r.pullRecs())
	return out, hs
}

// StartPick is the verdict on one budget of one cold-start campaign: the
// arm to ship for the first RPC after a scale from zero, set against the
// baseline.
type StartPick struct {
	Campaign *Campaign
	Budget   string
	// Baseline is the arm the others are compared against (BaselineOf).
	Baseline string
	// Arm is the arm to ship: of the arms that start faster than Baseline
	// on a settled comparison (enough runs for an interval) by at least
	// the minimum effect, the fastest, or, among it and those no test
	// tells apart from it, the one that costs least to ship (shipAmong);
	// Baseline when none does.
	Arm string
	// Start is Arm's first_rpc_ms against Baseline's; the zero row when
	// Arm is Baseline.
	Start ComparisonRow
	// Tied are the other arms of Faster that start alike with the
	// fastest (shipAmong), each against Baseline: Arm was preferred to
	// them on cost, or they cost no less.
	Tied []ComparisonRow
	// Alike are the arms that start alike with Arm (settled, no
	// difference worth acting on), Arm first.
	Alike []string
	// Compared holds every other arm's first_rpc_ms against Baseline's;
	// Faster and Slower those acted on, fastest and slowest first.
	Compared, Faster, Slower []ComparisonRow
	// Settled: every comparison in Compared rests on enough runs for an
	// interval. When false, Arm is the fastest of only those that do.
	Settled bool

	summaries map[string]Summary
}

// StartPicks are the StartPick of every budget of every cold-start
// campaign where two arms or more have a median, in the report's order.
func (r *Report) StartPicks() []StartPick {
	var out []StartPick
	for _, c := range r.Campaigns {
		for _, b := range budgetsOf(c.Summaries, func(s Summary) string { return s.Budget }) {
			if p, ok := r.startPick(c, b); ok {
				out = append(out, p)
			}
		}
	}
	return out
}

func (r *Report) startPick(c *Campaign, b string) (StartPick, bool) {
	var arms []string
	by := map[string]Summary{}
	variants := c.Variants() // settings, not builds to pick among
	for _, s := range c.Summaries {
		if _, v := variants[s.Arm]; s.Budget == b && s.Runs > 0 && s.MedianMs > 0 && !contains(arms, s.Arm) && !v {
			arms = append(arms, s.Arm)
			by[s.Arm] = s
		}
	}
	if len(arms) < 2 {
		return StartPick{}, false
	}
	p := StartPick{Campaign: c, Budget: b, Baseline: r.BaselineOf(arms), summaries: by}
	p.Arm, p.Settled = p.Baseline, true
	cmp := func(a, base string) ComparisonRow {
		cr := r.coldRow(c, b, "first_rpc_ms", a, base)
		if cr.NA == 0 || cr.NB == 0 { // no samples: the summaries' medians, untested
			ma, mb := by[a].MedianMs, by[base].MedianMs
			cr.MedianA, cr.MedianB, cr.PValue = &ma, &mb, 0
		}
		return cr
	}
	for _, a := range arms {
		if a == p.Baseline {
			continue
		}
		cr := cmp(a, p.Baseline)
		p.Compared = append(p.Compared, cr)
		why, settled := r.judge(cr)
		p.Settled = p.Settled && settled
		switch {
		case why != "":
		case *cr.Ratio < 1:
			p.Faster = append(p.Faster, cr)
		default:
			p.Slower = append(p.Slower, cr)
		}
	}
	sort.SliceStable(p.Faster, func(i, j int) bool { return *p.Faster[i].Ratio < *p.Faster[j].Ratio })
	sort.SliceStable(p.Slower, func(i, j int) bool { return *p.Slower[i].Ratio > *p.Slower[j].Ratio })
	if len(p.Faster) > 0 {
		p.Start, p.Tied = r.shipAmong(c, b, p.Faster)
		p.Arm = p.Start.A
	}
	p.Alike = []string{p.Arm}
	for _, a := range arms {
		if a != p.Arm && r.alike(cmp(a, p.Arm)) {
			p.Alike = append(p.Alike, a)
		}
	}
	return p, true
}

// shipAmong picks the arm to ship under budget of cold-start campaign c
// from faster, the arms acted on as starting faster than the baseline,
// fastest first. An arm that no test tells apart from the fastest
// (coldRow: "no difference detected") is as fast as the runs can show,
// so of the fastest and those the one that costs least to ship wins
// (costCompare), the fastest when none costs less. ship is its row
// against the baseline; tied are the rows of the others alike with the
// fastest, the fastest among them when it is not ship.
func (r *Report) shipAmong(c *Campaign, budget string, faster []ComparisonRow) (ship ComparisonRow, tied []ComparisonRow) {
	if len(faster) == 0 {
		return ComparisonRow{}, nil
	}
	first := faster[0]
	candidates := []ComparisonRow{first}
	for _, cr := range faster[1:] {
		if r.coldRow(c, budget, "first_rpc_ms", cr.A, first.A).Verdict == string(stats.NoDifference) {
			candidates = append(candidates, cr)
		}
	}
	ship = first
	for _, cr := range candidates[1:] {
		if n, _ := r.costCompare(c, budget, cr.A, ship.A); n < 0 {
			ship = cr
		}
	}
	for _, cr := range candidates {
		if cr.A != ship.A {
			tied = append(tied, cr)
		}
	}
	return ship, tied
}

// costCompare ranks what arms a and b of cold-start campaign c cost to
// ship under budget, for arms that start alike: -1 when a costs less, 1
// when b does, 0 when nothing here tells them apart; more says how the
// costlier one costs more ("is a start arm", "idles in more PSS"). In order,
// the first that differs decides: a build arm costs less than a start arm
// (record.IsStartArm), which needs the platform to start it its own way;
// then less idle PSS (densityRow, of a density campaign of the same
// binaries) and less startup CPU (coldRow), each only when acted on
// (judge); then a smaller binary.
func (r *Report) costCompare(c *Campaign, budget, a, b string) (n int, more string) {
	if sa, sb := record.IsStartArm(a), record.IsStartArm(b); sa != sb {
		if sa {
			return 1, "is a start arm"
		}
		return -1, "is a start arm"
	}
	lowerOrHigher := func(cr ComparisonRow) int {
		if why, _ := r.judge(cr); why != "" {
			return 0
		}
		switch cr.Verdict {
		case string(stats.Lower):
			return -1
		case string(stats.Higher):
			return 1
		}
		return 0
	}
	if dca, da, ok := r.densityFor(c, a, budget); ok {
		if dcb, db, ok := r.densityFor(c, b, budget); ok && dca == dcb && da.Budget == db.Budget {
			if n := lowerOrHigher(r.densityRow(dca, da.Budget, a, b)); n != 0 {
				return n, "idles in more PSS"
			}
		}
	}
	if n := lowerOrHigher(r.coldRow(c, budget, "startup_cpu_ms", a, b)); n != 0 {
		return n, "takes more startup CPU"
	}
	var za, zb int64
	for _, s := range c.Summaries {
		switch {
		case s.Budget != budget:
		case s.Arm == a:
			za = s.SizeBytes
		case s.Arm == b:
			zb = s.SizeBytes
		}
	}
	switch {
	case za <= 0 || zb <= 0 || za == zb:
		return 0, ""
	case za < zb:
		return -1, "is a larger binary"
	}
	return 1, "is a larger binary"
}

// held lists the comparisons against the baseline that were not acted on.
func (p StartPick) held(r *Report) []held {
	var out []held
	for _, cr := range p.Compared {
		if why, _ := r.judge(cr); why != "" {
			out = append(out, held{ref: r.ref(p.Campaign, "coldstart"), row: cr, why: why})
		}
	}
	return out
}

// under scopes a cold-start verdict: "Under cpus=0", "Under cpus=0 in
// coldstart#2".
func (r *Report) under(c *Campaign, budget string) string {
	return "Under " + budget + r.within(c, "coldstart")
}

// coldRecs: per budget, the arm to ship when one starts faster than the
// baseline; per arm, the budgets under which it starts slower (avoid it).
func (r *Report) coldRecs(c *Campaign, picks []StartPick) ([]Recommendation, []held) {
	var out []Recommendation
	var hs []held
	type slow struct {
		p  StartPick
		cr ComparisonRow
	}
	var order []string
	slower := map[string][]slow{}
	for _, p := range picks {
		hs = append(hs, p.held(r)...)
		if p.Arm != p.Baseline {
			out = append(out, r.shipRec(p))
		}
		for _, cr := range p.Slower {
			k := cr.A + "\x00" + cr.B
			if _, ok := slower[k]; !ok {
				order = append(order, k)
			}
			slower[k] = append(slower[k], slow{p, cr})
		}
	}
	cs := r.ref(c, "coldstart")
	for _, k := range order {
		ss := slower[k]
		arm, base := ss[0].cr.A, ss[0].cr.B
		var ct cite
		ct.from(c)
		var each []string
		lo, hi, pmax := math.Inf(1), 0.0, 0.0
		for _, s := range ss {
			ct.add(cs+" "+arm+"/"+s.p.Budget, s.p.summaries[arm].Doubt())
			ct.add(cs+" "+base+"/"+s.p.Budget, s.p.summaries[base].Doubt())
			x, ci := ratioOf(s.cr, false)
			each = append(each, fmt.Sprintf("%s %s %s", s.p.Budget, factor(x), ci))
			lo, hi, pmax = math.Min(lo, x), math.Max(hi, x), math.Max(pmax, s.cr.PValue)
		}
		var text string
		if len(ss) == 1 {
			x, ci := ratioOf(ss[0].cr, false)
			text = fmt.Sprintf("%s, avoid %s: it starts %s slower than %s %s, %s", r.under(c, ss[0].p.Budget), arm, factor(x), base, ci, pEq(pmax))
		} else {
			which := "under every budget"
			if len(ss) < len(picks) {
				var bs []string
				for _, s := range ss {
					bs = append(bs, s.p.Budget)
				}
				which = "under " + strings.Join(bs, ", ")
			}
			avoid := "Avoid"
			if r.within(c, "coldstart") != "" {
				avoid = "In " + cs + ", avoid"
			}
			ps := pEq(pmax) + " each"
			if pmax >= 0.001 {
				ps = "p≤" + pText(pmax)
			}
			text = fmt.Sprintf("%s %s: it starts slower than %s %s (%s), %s", avoid, arm, base, which, strings.Join(each, ", "), ps)
			if utf8.RuneCountInString(text) > maxProse {
				text = fmt.Sprintf("%s %s: it starts %s–%s slower than %s %s, %s", avoid, arm, fig(lo), factor(hi), base, which, ps)
			}
		}
		out = append(out, ct.rec(prose(text)))
	}
	return out, hs
}

// shipRec says which arm to ship under a budget, against the baseline,
// with what it costs in memory and binary size.
func (r *Report) shipRec(p StartPick) Recommendation {
	c, b, a, base := p.Campaign, p.Budget, p.Arm, p.Baseline
	cs := r.ref(c, "coldstart")
	var ct cite
	ct.from(c)
	ct.add(cs+" "+a+"/"+b, p.summaries[a].Doubt())
	ct.add(cs+" "+base+"/"+b, p.summaries[base].Doubt())
	x, ci := ratioOf(p.Start, true)
	verdict := fmt.Sprintf("%s, ship %s: it starts %s faster than %s %s, %s", r.under(c, b), a, factor(x), base, ci, pEq(p.Start.PValue))
	var idle, size, also, cpu string
	if dca, da, ok := r.densityFor(c, a, b); ok {
		if dcb, db, ok := r.densityFor(c, base, b); ok {
			ct.from(dca, dcb)
			ct.add(r.ref(dca, "density")+" "+a+"/"+da.Budget, dca.densityDoubt(da))
			ct.add(r.ref(dcb, "density")+" "+base+"/"+db.Budget, dcb.densityDoubt(db))
			idle = mibPair(da.PSSBytes, db.PSSBytes) + " idle PSS"
		}
	}
	if sa, sb := p.summaries[a].SizeBytes, p.summaries[base].SizeBytes; sa > 0 && sb > 0 && sa != sb {
		size = mibPair(sa, sb) + " binary"
	}
	var tied []string
	isTied := map[string]bool{}
	for _, cr := range p.Tied {
		isTied[cr.A] = true
		y, _ := ratioOf(cr, true)
		t := fmt.Sprintf("%s (%s) is not told apart from %s", cr.A, factor(y), a)
		if n, more := r.costCompare(c, b, a, cr.A); n < 0 {
			t += " but " + more
		}
		tied = append(tied, t)
	}
	var others []string
	for _, cr := range p.Faster {
		if cr.A == a || isTied[cr.A] {
			continue
		}
		y, _ := ratioOf(cr, true)
		others = append(others, fmt.Sprintf("%s %s", cr.A, factor(y)))
	}
	if len(others) > 0 {
		also = "also faster than " + base + ": " + strings.Join(others, ", ")
	}
	if cr := r.coldRow(c, b, "startup_cpu_ms", a, base); cr.NA > 0 && cr.NB > 0 {
		if why, _ := r.judge(cr); why == "" {
			y, yci := ratioOf(cr, false)
			cpu = fmt.Sprintf("%s %s's startup CPU %s", factor(y), base, yci)
		}
	}
	return ct.rec(prose(verdict, append(tied, idle, size, also, cpu)...))
}

// budgetRecs: within one campaign (one server, one set of arms), whether
// the arm to ship changes with the budget. A budget where several arms
// start alike agrees with any of them.
func (r *Report) budgetRecs(c *Campaign, picks []StartPick) []Recommendation {
	if len(picks) < 2 {
		return nil
	}
	count := map[string]int{}
	for _, p := range picks {
		for _, a := range p.Alike {
			count[a]++
		}
	}
	for _, n := range count {
		if n == len(picks) {
			return nil
		}
	}
	cs := r.ref(c, "coldstart")
	var ct cite
	ct.from(c)
	var parts []string
	for _, p := range picks {
		parts = append(parts, strings.Join(p.Alike, " or ")+" under "+p.Budget)
		for _, a := range p.Alike {
			ct.add(cs+" "+a+"/"+p.Budget, p.summaries[a].Doubt())
		}
	}
	return []Recommendation{ct.rec(prose(fmt.Sprintf("Build for the budget your pods get: the arm to ship%s changes with it, %s",
		r.within(c, "coldstart"), strings.Join(parts, ", "))))}
}

// densityFor finds the density row of arm measured on the same binary as
// in cold-start campaign cc, preferring one measured under budget. Arm
// names alone do not match: "default" of a JVM campaign is not "default"
// of the sample server's.
func (r *Report) densityFor(cc *Campaign, arm, budget string) (*Campaign, DensityRow, bool) {
	var fc *Campaign
	var found DensityRow
	for _, c := range r.Campaigns {
		if !sameBinary(cc, c, arm) {
			continue
		}
		for _, d := range c.Density {
			if d.Arm != arm {
				continue
			}
			if d.Budget == budget {
				return c, d, true
			}
			if fc == nil {
				fc, found = c, d
			}
		}
	}
	return fc, found, fc != nil
}

// armSHA is the sha256 of arm's binary in c, "" when c records none.
func armSHA(c *Campaign, arm string) string {
	for _, a := range c.Artifacts {
		if a.Arm == arm {
			return a.SHA256
		}
	}
	return ""
}

// sameServer reports whether two campaigns measured the same server: some
// arm built to the same binary in both. Campaigns that record no binaries
// (older files) are taken to match, except a cluster's with a local one:
// the cluster ran images deployed apart, its pods' memory is not what a
// local density campaign read.
func sameServer(a, b *Campaign) bool {
	if a == b {
		return true
	}
	if a.Knative() != b.Knative() {
		return false
	}
	if len(a.Artifacts) == 0 || len(b.Artifacts) == 0 {
		return true
	}
	for _, x := range a.Artifacts {
		if x.SHA256 != "" && armSHA(b, x.Arm) == x.SHA256 {
			return true
		}
	}
	return false
}

// sameBinary reports whether arm ran the same binary in a and b: by its
// sha256 when both record it, else by sameServer.
func sameBinary(a, b *Campaign, arm string) bool {
	if x, y := armSHA(a, arm), armSHA(b, arm); x != "" && y != "" {
		return x == y
	}
	return sameServer(a, b)
}

// densityPick is the verdict on one budget of one density campaign: the
// arm taking the least idle PSS against the baseline.
type densityPick struct {
	c              *Campaign
	budget         string
	base, arm      string // arm = base when no arm takes less
	rows           map[string]DensityRow
	compared       []ComparisonRow // every other arm against base
	settled        bool            // every one of compared is
	lower, higher  []ComparisonRow // acted on, furthest first
	alike          []string        // alike with arm, arm first
	lowest, widest DensityRow      // the least and most PSS per instance
}

// densityPick compares the idle PSS of c's arms (those in arms; all when
// nil) under budget with the baseline's, over the instances' samples.
func (r *Report) densityPick(c *Campaign, budget string, arms map[string]bool) (densityPick, bool) {
	p := densityPick{c: c, budget: budget, rows: map[string]DensityRow{}}
	var order []string
	variants := c.Variants() // settings, not builds to pick among
	for _, d := range c.Density {
		if _, v := variants[d.Arm]; d.Budget == budget && d.PSSBytes > 0 && (arms == nil || arms[d.Arm]) && !contains(order, d.Arm) && !v {
			order = append(order, d.Arm)
			p.rows[d.Arm] = d
			if p.lowest.Arm == "" || d.PSSBytes < p.lowest.PSSBytes {
				p.lowest = d
			}
			if d.PSSBytes > p.widest.PSSBytes {
				p.widest = d
			}
		}
	}
	if len(order) < 2 {
		return p, false
	}
	cmp := func(a, base string) ComparisonRow {
		cr := r.densityRow(c, budget, a, base)
		if cr.NA == 0 || cr.NB == 0 {
			ma, mb := float64(p.rows[a].PSSBytes), float64(p.rows[base].PSSBytes)
			cr.MedianA, cr.MedianB, cr.PValue = &ma, &mb, 0
		}
		return cr
	}
	p.base = r.BaselineOf(order)
	p.arm, p.settled = p.base, true
	for _, a := range order {
		if a == p.base {
			continue
		}
		cr := cmp(a, p.base)
		p.compared = append(p.compared, cr)
		why, settled := r.judge(cr)
		p.settled = p.settled && settled
		switch {
		case why != "":
		case *cr.Ratio < 1:
			p.lower = append(p.lower, cr)
		default:
			p.higher = append(p.higher, cr)
		}
	}
	sort.SliceStable(p.lower, func(i, j int) bool { return *p.lower[i].Ratio < *p.lower[j].Ratio })
	sort.SliceStable(p.higher, func(i, j int) bool { return *p.higher[i].Ratio > *p.higher[j].Ratio })
	if len(p.lower) > 0 {
		p.arm = p.lower[0].A
	}
	p.alike = []string{p.arm}
	for _, a := range order {
		if a != p.arm && r.alike(cmp(a, p.arm)) {
			p.alike = append(p.alike, a)
		}
	}
	return p, true
}

// forMemory scopes a density verdict: "For idle memory", "For idle memory
// under max in density#2".
func (r *Report) forMemory(p densityPick) string {
	s := "For idle memory"
	if len(budgetsOf(p.c.Density, func(d DensityRow) string { return d.Budget })) > 1 {
		s += " under " + p.budget
	}
	return s + r.within(p.c, "density")
}

// densityRecs: per density campaign and budget, the arm that takes less
// idle PSS than the baseline (prefer it) and those that take more (avoid
// them).
func (r *Report) densityRecs(c *Campaign) ([]Recommendation, []held) {
	var out []Recommendation
	var hs []held
	ds := r.ref(c, "density")
	for _, b := range budgetsOf(c.Density, func(d DensityRow) string { return d.Budget }) {
		p, ok := r.densityPick(c, b, nil)
		if !ok {
			continue
		}
		for _, cr := range p.compared {
			if why, _ := r.judge(cr); why != "" {
				hs = append(hs, held{ref: ds, row: cr, why: why})
			}
		}
		one := func(cr ComparisonRow, verb string, extra ...string) Recommendation {
			a, base := p.rows[cr.A], p.rows[cr.B]
			var ct cite
			ct.from(c)
			ct.add(ds+" "+a.Arm+"/"+b, c.densityDoubt(a))
			ct.add(ds+" "+base.Arm+"/"+b, c.densityDoubt(base))
			x, ci := ratioOf(cr, false)
			verdict := fmt.Sprintf("%s, %s %s: it takes %s %s's PSS per idle instance %s, %s", r.forMemory(p), verb, a.Arm, factor(x), base.Arm, ci, pEq(cr.PValue))
			clauses := []string{mibPair(a.PSSBytes, base.PSSBytes)}
			clauses = append(clauses, extra...)
			if (a.RSSBytes-base.RSSBytes)*(a.PSSBytes-base.PSSBytes) < 0 {
				clauses = append(clauses, fmt.Sprintf("RSS ranks them the other way (%s): it counts shared pages in full for every instance, PSS divides them", mibPair(a.RSSBytes, base.RSSBytes)))
			}
			return ct.rec(prose(verdict, clauses...))
		}
		if p.arm != p.base {
			a, base := p.rows[p.arm], p.rows[p.base]
			hold := fmt.Sprintf("1 GiB holds about %d idle instances against %d", (1<<30)/a.PSSBytes, (1<<30)/base.PSSBytes)
			as := ""
			if len(p.alike) > 1 {
				as = strings.Join(p.alike[1:], ", ") + " is as small (not told apart)"
			}
			out = append(out, one(p.lower[0], "prefer", as, hold))
		}
		for _, cr := range p.higher {
			out = append(out, one(cr, "avoid"))
		}
	}
	return out, hs
}

// tradeoffRecs sets start against density, per cold-start campaign: the
// density campaign of the same server that shares the most arms with it,
// and only the arms both measured. No trade-off when one arm starts
// fastest (or alike) under every budget and packs densest (or alike);
// the verdict names that arm, and the arms that pack as densely but start
// slower than the baseline.
func (r *Report) tradeoffRecs(c *Campaign, picks []StartPick) []Recommendation {
	if len(picks) == 0 {
		return nil
	}
	arms := map[string]bool{}
	for _, s := range c.Summaries {
		arms[s.Arm] = true
	}
	var dc *Campaign
	best := 1
	for _, x := range r.Campaigns {
		n := 0
		for _, d := range x.Density {
			if arms[d.Arm] && sameBinary(c, x, d.Arm) {
				n++
			}
		}
		if n > best {
			dc, best = x, n
		}
	}
	if dc == nil {
		return nil
	}
	common := map[string]bool{}
	for _, d := range dc.Density {
		if arms[d.Arm] && sameBinary(c, dc, d.Arm) {
			common[d.Arm] = true
		}
	}
	var dp densityPick
	ok := false
	for _, b := range budgetsOf(dc.Density, func(d DensityRow) string { return d.Budget }) {
		if dp, ok = r.densityPick(dc, b, common); ok {
			break
		}
	}
	// Either side resting on a comparison without an interval leaves the
	// question open.
	if !ok || !dp.settled {
		return nil
	}
	for _, p := range picks {
		if !p.Settled {
			return nil
		}
	}
	cs, ds := r.ref(c, "coldstart"), r.ref(dc, "density")
	var ct cite
	ct.from(c, dc)
	startsBest := func(a string) bool {
		for _, p := range picks {
			if !contains(p.Alike, a) {
				return false
			}
		}
		return true
	}
	// slowerText: "starts 5.43–5.61× slower than default", when a starts
	// slower than the baseline under every budget.
	slowerText := func(a string) string {
		lo, hi := math.Inf(1), 0.0
		base := ""
		for _, p := range picks {
			found := false
			for _, cr := range p.Slower {
				if cr.A == a {
					x, _ := ratioOf(cr, false)
					lo, hi, base, found = math.Min(lo, x), math.Max(hi, x), cr.B, true
				}
			}
			if !found {
				return ""
			}
		}
		if lo == hi {
			return fmt.Sprintf("starts %s slower than %s", factor(hi), base)
		}
		return fmt.Sprintf("starts %s–%s slower than %s", fig(lo), factor(hi), base)
	}
	scope := ""
	if cs != "coldstart" || ds != "density" {
		scope = " in " + cs + " and " + ds
	}
	idle := func(a string) string {
		if a == dp.base {
			return ""
		}
		return fmt.Sprintf("%s idle PSS against %s", mibPair(dp.rows[a].PSSBytes, dp.rows[dp.base].PSSBytes), dp.base)
	}
	for _, a := range dp.alike {
		if !startsBest(a) {
			continue
		}
		for _, p := range picks {
			ct.add(cs+" "+a+"/"+p.Budget, p.summaries[a].Doubt())
		}
		ct.add(ds+" "+a+"/"+dp.budget, dc.densityDoubt(dp.rows[a]))
		ct.add(ds+" "+dp.base+"/"+dp.budget, dc.densityDoubt(dp.rows[dp.base]))
		var slow []string
		for _, x := range dp.alike {
			if t := slowerText(x); t != "" && x != a {
				slow = append(slow, x+" packs as densely but "+t)
				for _, p := range picks {
					ct.add(cs+" "+x+"/"+p.Budget, p.summaries[x].Doubt())
					ct.add(cs+" "+p.Baseline+"/"+p.Budget, p.summaries[p.Baseline].Doubt())
				}
			}
		}
		verdict := fmt.Sprintf("No trade-off%s: %s starts fastest or alike under every budget and packs densest or alike", scope, a)
		return []Recommendation{ct.rec(prose(verdict, append([]string{idle(a)}, slow...)...))}
	}
	// A trade-off: which arms start fastest under the budgets where none
	// of the densest does.
	ct.add(ds+" "+dp.arm+"/"+dp.budget, dc.densityDoubt(dp.rows[dp.arm]))
	ct.add(ds+" "+dp.base+"/"+dp.budget, dc.densityDoubt(dp.rows[dp.base]))
	var order []string
	under := map[string][]string{}
	for _, p := range picks {
		agree := false
		for _, a := range dp.alike {
			agree = agree || contains(p.Alike, a)
		}
		if agree {
			continue
		}
		if _, ok := under[p.Arm]; !ok {
			order = append(order, p.Arm)
		}
		under[p.Arm] = append(under[p.Arm], p.Budget)
		ct.add(cs+" "+p.Arm+"/"+p.Budget, p.summaries[p.Arm].Doubt())
	}
	var fastest []string
	for _, a := range order {
		fastest = append(fastest, a+" starts fastest under "+joinAnd(under[a]))
	}
	verdict := fmt.Sprintf("Trade-off%s: %s packs densest, but %s; choose by what costs you more, first-request latency after a scale from zero or idle memory",
		scope, dp.arm, strings.Join(fastest, ", "))
	slow := slowerText(dp.arm)
	if slow != "" {
		slow = dp.arm + " " + slow
	}
	return []Recommendation{ct.rec(prose(verdict, idle(dp.arm), slow))}
}

// joinAnd joins "a, b and c".
func joinAnd(xs []string) string {
	if len(xs) < 2 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}

// budgetsOf lists the budgets of rows in first-seen order.
func budgetsOf[T any](rows []T, budget func(T) string) []string {
	var out []string
	seen := map[string]bool{}
	for _, x := range rows {
		if b := budget(x); !seen[b] {
			seen[b] = true
			out = append(out, b)
		}
	}
	return out
}

// steadyVerdict tests a steady comparison set up by the caller (rows a
// and b on metric, shown with scope, a and b in the held table): a
// recommendation from rec when acted on, else a held row.
func (r *Report) steadyVerdict(c *Campaign, a, b SteadyRow, metric, scope, nameA, nameB string, get func(SteadyRow) float64,
	rec func(ComparisonRow) string) (string, held) {
	st := r.ref(c, "steady")
	cr, tested := r.steadyTest(c, a, b, metric)
	if !tested {
		va, vb := get(a), get(b)
		cr = ComparisonRow{Kind: "arms", Campaign: c.Label, Metric: metric, MedianA: &va, MedianB: &vb}
	}
	cr.Scope, cr.A, cr.B = scope, nameA, nameB
	if !tested {
		return "", held{ref: st, row: cr, why: fmt.Sprintf("one window each, not tested (`steady run --rounds %d` can)", stats.MinRunsForInterval(r.confidence()))}
	}
	if cr.LoadBound != "" {
		// A server that did not set the pace says nothing of its
		// capacity: no recommendation rests on the loop's limit.
		return "", held{ref: st, row: cr, why: "load-bound, " + cr.LoadBound + " (server CPU per call compares the servers)"}
	}
	if why, _ := r.judge(cr); why != "" {
		return "", held{ref: st, row: cr, why: why}
	}
	return rec(cr), held{}
}

func (r *Report) steadyRef(c *Campaign, s SteadyRow) string {
	return fmt.Sprintf("%s %s/%s/%s/%s", r.ref(c, "steady"), s.Arm, s.Budget, s.Protocol, shapeOf(s))
}

// steadyRecs: per budget and protocol, every arm against the baseline on
// server CPU per call at the first step all arms ran, and on calls per
// second at the closed-loop step with the most calls in flight; then
// protocolRecs and loadRecs.
func (r *Report) steadyRecs(c *Campaign) ([]Recommendation, []held) {
	if len(c.Steady) == 0 {
		return nil, nil
	}
	var out []Recommendation
	var hs []held
	keep := func(text string, h held, ct *cite) {
		if text != "" {
			out = append(out, ct.rec(text))
		} else {
			hs = append(hs, h)
		}
	}
	type bp struct{ budget, proto string }
	var groups []bp
	seen := map[bp]bool{}
	for _, s := range c.Steady {
		k := bp{s.Budget, string(s.Protocol)}
		if !seen[k] {
			seen[k] = true
			groups = append(groups, k)
		}
	}
	for _, g := range groups {
		byArm := map[string]map[shape]SteadyRow{}
		var arms []string
		for _, s := range c.Steady {
			if s.Budget != g.budget || string(s.Protocol) != g.proto || s.CallsPerS <= 0 {
				continue
			}
			if byArm[s.Arm] == nil {
				byArm[s.Arm] = map[shape]SteadyRow{}
				arms = append(arms, s.Arm)
			}
			byArm[s.Arm][shapeOf(s)] = s
		}
		if len(arms) < 2 {
			continue
		}
		var common []shape
		for sh := range byArm[arms[0]] {
			all := true
			for _, a := range arms[1:] {
				if _, ok := byArm[a][sh]; !ok {
					all = false
				}
			}
			if all {
				common = append(common, sh)
			}
		}
		if len(common) == 0 {
			continue
		}
		sort.Slice(common, func(i, j int) bool { return common[i].String() < common[j].String() })
		base := r.BaselineOf(arms)
		under := fmt.Sprintf("Under %s over %s%s", g.budget, g.proto, r.within(c, "steady"))
		pair := func(a, b SteadyRow) *cite {
			var ct cite
			ct.from(c)
			ct.add(r.steadyRef(c, a), steadyDoubt(a))
			ct.add(r.steadyRef(c, b), steadyDoubt(b))
			return &ct
		}

		// Server CPU per call at the first common step, where every arm's
		// was read.
		sh := common[0]
		metered := true
		for _, a := range arms {
			if valF(byArm[a][sh].ServerCPUUsPerCall) <= 0 {
				metered = false
			}
		}
		cpu := func(s SteadyRow) float64 { return valF(s.ServerCPUUsPerCall) }
		for _, a := range arms {
			if a == base || !metered {
				continue
			}
			x, y := byArm[a][sh], byArm[base][sh]
			text, h := r.steadyVerdict(c, x, y, "server_cpu_us_per_call", fmt.Sprintf("budget=%s %s %s", g.budget, g.proto, sh), a, base, cpu,
				func(cr ComparisonRow) string {
					f, ci := ratioOf(cr, false)
					verb := "saves"
					if f > 1 {
						verb = "costs more"
					}
					return prose(fmt.Sprintf("%s, %s %s server CPU: %s %s's per call at %s %s, %s", under, a, verb, factor(f), base, sh, ci, pEq(cr.PValue)),
						fmt.Sprintf("%s vs %s µs", numText(cr.MedianA), numText(cr.MedianB)))
				})
			keep(text, h, pair(x, y))
		}

		// Throughput: the common closed-loop step with the most calls in flight.
		var top *shape
		for i, sh := range common {
			if sh.scenario != "throughput" && sh.scenario != "stream" {
				continue
			}
			if top == nil || sh.conc > top.conc || (sh.conc == top.conc && sh.scenario == "throughput") {
				top = &common[i]
			}
		}
		if top == nil {
			continue
		}
		calls := func(s SteadyRow) float64 { return s.CallsPerS }
		for _, a := range arms {
			if a == base {
				continue
			}
			x, y := byArm[a][*top], byArm[base][*top]
			p99 := ""
			if x.P99Us > 0 && y.P99Us > 0 {
				p99 = fmt.Sprintf("p99 %s vs %s µs", us(x.P99Us), us(y.P99Us))
			}
			text, h := r.steadyVerdict(c, x, y, "calls_per_s", fmt.Sprintf("budget=%s %s %s", g.budget, g.proto, top), a, base, calls,
				func(cr ComparisonRow) string {
					f, ci := ratioOf(cr, false)
					verb := "serves more"
					if f < 1 {
						verb = "serves less"
					}
					return prose(fmt.Sprintf("%s at %d in flight, %s %s: %s %s's calls/s %s, %s", under, top.conc, a, verb, factor(f), base, ci, pEq(cr.PValue)),
						fmt.Sprintf("%s vs %s calls/s", numText(cr.MedianA), numText(cr.MedianB)), p99)
				})
			keep(text, h, pair(x, y))
		}
	}
	add := func(rs []Recommendation, h []held) {
		out = append(out, rs...)
		hs = append(hs, h...)
	}
	add(r.protocolRecs(c))
	add(r.loadRecs(c))
	return out, hs
}

// loadRecs says, for the baseline arm of each protocol, how server CPU per
// call changes with the calls in flight, and how calls/s change with the
// budget: what sizing a budget has to know.
func (r *Report) loadRecs(c *Campaign) ([]Recommendation, []held) {
	var out []Recommendation
	var hs []held
	budgets := budgetsOf(c.Steady, func(s SteadyRow) string { return s.Budget })
	for _, proto := range budgetsOf(c.Steady, func(s SteadyRow) string { return string(s.Protocol) }) {
		var arms []string
		for _, s := range c.Steady {
			if string(s.Protocol) == proto {
				arms = appendUnique(arms, s.Arm)
			}
		}
		arm := r.BaselineOf(arms)
		in := r.within(c, "steady")
		// Concurrency: closed-loop unary steps in the first budget.
		var lo, hi *SteadyRow
		for i, s := range c.Steady {
			if s.Arm != arm || string(s.Protocol) != proto || s.Budget != budgets[0] || valF(s.ServerCPUUsPerCall) <= 0 ||
				(s.Scenario != "sequential" && s.Scenario != "throughput") {
				continue
			}
			if lo == nil || s.Concurrency < lo.Concurrency {
				lo = &c.Steady[i]
			}
			if hi == nil || s.Concurrency > hi.Concurrency {
				hi = &c.Steady[i]
			}
		}
		if lo != nil && hi != nil && hi.Concurrency > lo.Concurrency {
			l, h := *lo, *hi
			text, hd := r.steadyVerdict(c, h, l, "server_cpu_us_per_call", fmt.Sprintf("arm=%s budget=%s %s", arm, budgets[0], proto),
				shapeOf(h).String(), shapeOf(l).String(), func(s SteadyRow) float64 { return valF(s.ServerCPUUsPerCall) },
				func(cr ComparisonRow) string {
					f, ci := ratioOf(cr, false)
					fact := fmt.Sprintf("a call at %d in flight costs %s the server CPU of one at %d %s, %s", h.Concurrency, factor(f), l.Concurrency, ci, pEq(cr.PValue))
					figures := []string{fmt.Sprintf("%s vs %s µs", numText(cr.MedianA), numText(cr.MedianB)), fmt.Sprintf("p50 %s → %s µs", us(l.P50Us), us(h.P50Us))}
					if f >= 1.5 || f <= 1/1.5 {
						return prose(fmt.Sprintf("Size CPU budgets from the load's real concurrency: for %s over %s under %s%s, %s", arm, proto, budgets[0], in, fact), figures...)
					}
					return prose(fmt.Sprintf("For %s over %s under %s%s, %s", arm, proto, budgets[0], in, fact), figures...)
				})
			if text != "" {
				var ct cite
				ct.from(c)
				ct.add(r.steadyRef(c, l), steadyDoubt(l))
				ct.add(r.steadyRef(c, h), steadyDoubt(h))
				out = append(out, ct.rec(text))
			} else {
				hs = append(hs, hd)
			}
		}
		// Budgets: the most-in-flight throughput step measured under every
		// budget, the last budget against the first.
		if len(budgets) < 2 {
			continue
		}
		by := map[string]SteadyRow{}
		for _, s := range c.Steady {
			if s.Arm != arm || string(s.Protocol) != proto || s.Scenario != "throughput" {
				continue
			}
			if cur, ok := by[s.Budget]; !ok || s.Concurrency > cur.Concurrency {
				by[s.Budget] = s
			}
		}
		var ct cite
		ct.from(c)
		var middle []string
		conc, all := -1, true
		for i, b := range budgets {
			s, ok := by[b]
			if !ok || (conc >= 0 && s.Concurrency != conc) {
				all = false
				break
			}
			conc = s.Concurrency
			ct.add(r.steadyRef(c, s), steadyDoubt(s))
			if i > 0 && i < len(budgets)-1 {
				middle = append(middle, fmt.Sprintf("%s %.0f", b, s.CallsPerS))
			}
		}
		if !all {
			continue
		}
		first, last := by[budgets[0]], by[budgets[len(budgets)-1]]
		text, hd := r.steadyVerdict(c, last, first, "calls_per_s", fmt.Sprintf("arm=%s %s %s", arm, proto, shapeOf(first)),
			last.Budget, first.Budget, func(s SteadyRow) float64 { return s.CallsPerS },
			func(cr ComparisonRow) string {
				f, ci := ratioOf(cr, false)
				mid := ""
				if len(middle) > 0 {
					mid = strings.Join(middle, ", ") + " calls/s"
				}
				return prose(fmt.Sprintf("For %s over %s at %d in flight%s, %s serves %s the calls/s of %s %s, %s", arm, proto, conc, in, last.Budget, factor(f), first.Budget, ci, pEq(cr.PValue)),
					fmt.Sprintf("%s vs %s calls/s", numText(cr.MedianA), numText(cr.MedianB)), mid)
			})
		if text != "" {
			out = append(out, ct.rec(text))
		} else {
			hs = append(hs, hd)
		}
	}
	return out, hs
}

// protocolRecs compares each HTTP protocol with gRPC on matching steps of
// the baseline arm, at p50.
func (r *Report) protocolRecs(c *Campaign) ([]Recommendation, []held) {
	var out []Recommendation
	var hs []held
	var arms []string
	for _, s := range c.Steady {
		arms = appendUnique(arms, s.Arm)
	}
	for _, p := range pairs(c, r.BaselineOf(arms)) {
		g, h := p[0], p[1]
		text, hd := r.steadyVerdict(c, h, g, "p50_us", fmt.Sprintf("arm=%s budget=%s %s", g.Arm, g.Budget, shapeOf(g)), string(h.Protocol), "grpc",
			func(s SteadyRow) float64 { return s.P50Us },
			func(cr ComparisonRow) string {
				verdict := ""
				if f, ci := ratioOf(cr, true); f > 1 {
					verdict = fmt.Sprintf("Under %s%s, %s answers %s sooner than gRPC at p50 %s, %s, for %s at %s", g.Budget, r.within(c, "steady"), h.Protocol, factor(f), ci, pEq(cr.PValue), g.Arm, shapeOf(g))
				} else {
					f, ci := ratioOf(cr, false)
					verdict = fmt.Sprintf("Under %s%s, gRPC answers %s sooner than %s at p50 %s, %s, for %s at %s", g.Budget, r.within(c, "steady"), factor(f), h.Protocol, ci, pEq(cr.PValue), g.Arm, shapeOf(g))
				}
				return prose(verdict, fmt.Sprintf("%s vs gRPC: %s vs %s µs p50, %s vs %s µs server CPU per call, %.0f vs %.0f calls/s",
					h.Protocol, numText(cr.MedianA), numText(cr.MedianB), us(valF(h.ServerCPUUsPerCall)), us(valF(g.ServerCPUUsPerCall)), h.CallsPerS, g.CallsPerS))
			})
		if text == "" {
			hs = append(hs, hd)
			continue
		}
		var ct cite
		ct.from(c)
		ct.add(r.steadyRef(c, g), steadyDoubt(g))
		ct.add(r.steadyRef(c, h), steadyDoubt(h))
		out = append(out, ct.rec(text))
	}
	return out, hs
}

// pairs matches each gRPC row of arm with the other protocols' rows of the
// same arm, budget, scenario, payload and concurrency; only the sequential
// step (or the first step) per budget, to keep the list short.
func pairs(c *Campaign, arm string) [][2]SteadyRow {
	var out [][2]SteadyRow
	done := map[string]bool{}
	for _, pref := range []string{"sequential", ""} {
		for _, g := range c.Steady {
			if g.Protocol != "grpc" || g.Arm != arm || (pref != "" && string(g.Scenario) != pref) || done[g.Budget] {
				continue
			}
			found := false
			for _, h := range c.Steady {
				if h.Protocol == "grpc" || h.Arm != g.Arm || h.Budget != g.Budget || h.Scenario != g.Scenario ||
					h.PayloadBytes != g.PayloadBytes || h.Concurrency != g.Concurrency || g.P50Us <= 0 || h.P50Us <= 0 {
					continue
				}
				out = append(out, [2]SteadyRow{g, h})
				found = true
			}
			if found {
				done[g.Budget] = true
			}
		}
	}
	return out
}

type shape struct {
	scenario             string
	payload, conc, conns int
	depth                int
	rate                 float64
}

func shapeOf(s SteadyRow) shape {
	return shape{string(s.Scenario), s.PayloadBytes, s.Concurrency, s.Conns, s.Depth, s.RateReq}
}

func (s shape) String() string {
	out := fmt.Sprintf("%s %dB c%d", s.scenario, s.payload, s.conc)
	if s.conns > 1 {
		out += fmt.Sprintf(" conns%d", s.conns)
	}
	if s.rate > 0 {
		out += fmt.Sprintf(" %.0f/s", s.rate)
	}
	return out
}

// steadyTest compares two steady rows of one campaign on a metric over
// their rounds (steadyRow, as the comparisons table does); false when the
// campaign has no rounds for them.
func (r *Report) steadyTest(c *Campaign, a, b SteadyRow, metric string) (ComparisonRow, bool) {
	var xa, xb []SteadyRound
	for _, s := range c.SteadyRounds {
		switch {
		case sameStep(s.SteadyRow, a):
			xa = append(xa, s)
		case sameStep(s.SteadyRow, b):
			xb = append(xb, s)
		}
	}
	for _, m := range steadyMetrics {
		if m.name != metric {
			continue
		}
		if len(roundValues(xa, m.get)) == 0 || len(roundValues(xb, m.get)) == 0 {
			return ComparisonRow{}, false
		}
		return r.steadyRow("arms", c.Label, "", metric, a.Arm, b.Arm, xa, xb), true
	}
	return ComparisonRow{}, false
}

func sameStep(x, y SteadyRow) bool {
	return x.Arm == y.Arm && x.Budget == y.Budget && x.Protocol == y.Protocol && shapeOf(x) == shapeOf(y)
}

func ms(v float64) string {
	switch {
	case v < 10:
		return fmt.Sprintf("%.2f", v)
	case v < 100:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

func us(v float64) string { return ms(v) }

func mib(b int64) string {
	return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
}
