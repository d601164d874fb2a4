package report

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/coldstart-go/coldstart/internal/stats"
)

// Decision is the answer for one budget of one cold-start campaign: the
// arm to ship, set against the baseline, and the arms to avoid.
type Decision struct {
	Campaign *Campaign
	Budget   string
	Baseline string
	// Ship is the arm to ship: the arm that starts fastest against the
	// baseline on a comparison the recommendations act on (judge: runs
	// enough for an interval, a significant difference of at least the
	// report's MinEffect), or, of it and the faster arms no test tells
	// apart from it, the one that costs least to ship (shipAmong: a build
	// before a start arm, then less idle PSS, startup CPU, binary); else
	// one that starts alike with the baseline and idles in measurably
	// less memory; else the baseline itself.
	Ship string
	// Tied are the other faster arms that start alike with the fastest
	// (shipAmong), which Ship was chosen among.
	Tied []string
	// Why says which of those rules chose Ship.
	Why string
	// Start is Ship's first-RPC comparison with the baseline (nil when
	// Ship is the baseline).
	Start *ComparisonRow
	// ShipSum and BaseSum are the two arms' summaries.
	ShipSum, BaseSum Summary
	// ShipPSS and BasePSS are their idle PSS per instance (0 = no density
	// campaign of the same binary).
	ShipPSS, BasePSS int64
	// Avoid are the arms significantly slower than the baseline by at
	// least MinEffect, slowest first.
	Avoid []ComparisonRow
	// Alike are the arms whose start no test told apart from the
	// baseline's.
	Alike []string
	// Thin are the alike arms whose density comparison with the baseline
	// points to less idle PSS but holds too few instances to act on:
	// what to measure again before the baseline is kept.
	Thin []string
}

// Why values of a Decision.
const (
	WhyFaster   = "faster"
	WhySmaller  = "alike to start, less idle memory"
	WhyBaseline = "nothing starts measurably faster"
)

// Decisions are the answers, per cold-start campaign (local or on a
// cluster) and budget, in the campaigns' order.
func (r *Report) Decisions() []Decision {
	rows := r.Comparisons()
	var out []Decision
	for _, c := range r.Campaigns {
		if len(c.Summaries) == 0 {
			continue
		}
		// The builds and start arms; a variant is a setting, compared
		// with its own arm (kind "variants"), not a build to ship.
		arms := c.plainArms(budgetsOf(c.Samples, func(s Sample) string { return s.Arm }))
		if len(arms) < 2 {
			continue
		}
		base := r.BaselineOf(arms)
		for _, b := range budgetsOf(c.Samples, func(s Sample) string { return s.Budget }) {
			if d, ok := r.decide(c, b, base, rows); ok {
				out = append(out, d)
			}
		}
	}
	return out
}

func (r *Report) decide(c *Campaign, budget, base string, rows []ComparisonRow) (Decision, bool) {
	d := Decision{Campaign: c, Budget: budget, Baseline: base, Ship: base, Why: WhyBaseline}
	var found bool
	for _, s := range c.Summaries {
		if s.Budget == budget && s.Arm == base {
			d.BaseSum, found = s, true
		}
	}
	if !found {
		return d, false
	}
	var faster []ComparisonRow
	for _, row := range rows {
		if row.Kind != "arms" || row.Campaign != c.Label || row.Scope != "budget="+budget || row.Metric != "first_rpc_ms" || row.B != base {
			continue
		}
		why, _ := r.judge(row)
		switch {
		case why == "" && row.Verdict == string(stats.Faster):
			faster = append(faster, row)
		case why == "" && row.Verdict == string(stats.Slower):
			d.Avoid = append(d.Avoid, row)
		case row.Verdict == string(stats.NoDifference):
			d.Alike = append(d.Alike, row.A)
		}
	}
	sort.SliceStable(faster, func(i, j int) bool { return *faster[i].Ratio < *faster[j].Ratio })
	sort.SliceStable(d.Avoid, func(i, j int) bool { return *d.Avoid[i].Ratio > *d.Avoid[j].Ratio })
	_, bd, ok := r.densityFor(c, base, budget)
	if ok {
		d.BasePSS = bd.PSSBytes
	}
	switch {
	case len(faster) > 0:
		row, tied := r.shipAmong(c, budget, faster)
		d.Ship, d.Why, d.Start = row.A, WhyFaster, &row
		for _, t := range tied {
			d.Tied = append(d.Tied, t.A)
		}
	default:
		// Alike to start: the one that idles in the least memory, if a
		// density campaign of the same binaries tells it apart.
		best := int64(0)
		for _, a := range d.Alike {
			_, dd, ok := r.densityFor(c, a, budget)
			if !ok || d.BasePSS == 0 {
				continue
			}
			if less, thin := r.lessPSS(c, a, base, budget, rows); !less {
				if thin {
					d.Thin = append(d.Thin, a)
				}
				continue
			}
			if best == 0 || dd.PSSBytes < best {
				best, d.Ship, d.Why = dd.PSSBytes, a, WhySmaller
			}
		}
		if d.Ship != base {
			for _, row := range rows {
				if row.Kind == "arms" && row.Campaign == c.Label && row.Scope == "budget="+budget && row.Metric == "first_rpc_ms" && row.A == d.Ship && row.B == base {
					row := row
					d.Start = &row
				}
			}
		}
	}
	for _, s := range c.Summaries {
		if s.Budget == budget && s.Arm == d.Ship {
			d.ShipSum = s
		}
	}
	if _, sd, ok := r.densityFor(c, d.Ship, budget); ok {
		d.ShipPSS = sd.PSSBytes
	}
	return d, true
}

// lessPSS: a density comparison of the same binaries says arm a idles in
// less PSS than the baseline, by at least MinEffect, on as many instances
// as the recommendations act on (judge). thin: it points that way (a
// lower median) on too few instances to say. rows are r.Comparisons().
func (r *Report) lessPSS(cc *Campaign, a, base, budget string, rows []ComparisonRow) (less, thin bool) {
	dc, _, ok := r.densityFor(cc, a, budget)
	if !ok {
		return false, false
	}
	for _, row := range rows {
		if row.Campaign == dc.Label && row.Metric == "idle_pss_bytes" && row.A == a && row.B == base {
			why, _ := r.judge(row)
			if why == whyTooFew {
				return false, row.Ratio != nil && *row.Ratio < 1
			}
			return why == "" && row.Verdict == string(stats.Lower), false
		}
	}
	return false, false
}

// decisionSection writes the answer before anything else: per cold-start
// campaign a table with a row per budget (the arm to ship against the
// baseline, its start ratio with interval and p, startup CPU, idle PSS and
// size beside the baseline's, the arms to avoid), and per cluster campaign
// one line of what the platform costs whatever the build.
func (r *Report) decisionSection(m *mdw) {
	m.p("## Decision\n\n")
	ds := r.Decisions()
	if len(ds) == 0 {
		m.p("Nothing to decide: no cold-start campaign here measured two arms under one budget. " +
			"Measure at least two (`coldstart run --arms default,static`), then report again.\n\n")
		return
	}
	var byCampaign [][]Decision
	for _, d := range ds {
		if n := len(byCampaign); n > 0 && byCampaign[n-1][0].Campaign == d.Campaign {
			byCampaign[n-1] = append(byCampaign[n-1], d)
			continue
		}
		byCampaign = append(byCampaign, []Decision{d})
	}
	for _, group := range byCampaign {
		c := group[0].Campaign
		if c.Knative() {
			for _, d := range group {
				m.p("%s\n\n", r.platformLine(d))
			}
			continue
		}
		m.p("**%s**, %s (`%s`, %s), spawn → first RPC against `%s`:\n\n", r.ref(c, "coldstart"), serverOf(c), filepath.Base(c.File), runsPhrase(c), group[0].Baseline)
		var rows [][]string
		for _, d := range group {
			rows = append(rows, r.decisionRow(d))
		}
		m.table([]string{"budget", "ship", fmt.Sprintf("start vs %s [%.0f%% CI]", group[0].Baseline, 100*r.confidence()), "startup CPU", "idle PSS", "size", "avoid"}, rows)
	}
	m.p("A verdict needs p < %.2f and a difference of at least %.0f%%; `~` is no difference detected. ", 1-r.confidence(), 100*r.minEffect())
	for _, d := range ds {
		if len(d.Tied) > 0 {
			m.p("\"(x alike)\": x also starts faster than the baseline, and no test tells it apart from the fastest arm; " +
				"of those alike, the one that costs least to ship is shipped (a build before a start arm, then less idle PSS, " +
				"less startup CPU, a smaller binary), the fastest when none costs less. ")
			break
		}
	}
	m.p("The recommendations and the comparisons below give every figure with its rows.\n\n")
}

// serverOf names what a campaign measured, from its command line: the
// --bin binary, the PKG given, or the bundled sample server.
func serverOf(c *Campaign) string {
	args := c.Provenance.Args
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if v, ok := strings.CutPrefix(a, "--bin="); ok {
			return "server `" + filepath.Base(v) + "`"
		}
		if a == "--bin" && i+1 < len(args) && !strings.Contains(args[i+1], "=") {
			return "server `" + filepath.Base(args[i+1]) + "`"
		}
		if strings.HasPrefix(a, "./") || strings.HasPrefix(a, "../") {
			return "package `" + a + "`"
		}
	}
	return "the sample server"
}

// runsPhrase is "20 runs per arm", or the range when arms differ.
func runsPhrase(c *Campaign) string {
	lo, hi := 0, 0
	for _, s := range c.Summaries {
		if lo == 0 || s.Runs < lo {
			lo = s.Runs
		}
		hi = max(hi, s.Runs)
	}
	if lo == hi {
		return fmt.Sprintf("%d runs per arm", lo)
	}
	return fmt.Sprintf("%d–%d runs per arm", lo, hi)
}

func (r *Report) decisionRow(d Decision) []string {
	ship := "**" + d.Ship + "**"
	start := "baseline: " + d.Why
	if len(d.Thin) > 0 {
		start += fmt.Sprintf("; %s may idle in less PSS (too few density instances to say: measure at least %d)",
			strings.Join(d.Thin, ", "), stats.MinRunsForInterval(r.confidence()))
	}
	if d.Start != nil {
		start = fmt.Sprintf("%s %s, p%s", ratioText(*d.Start), shortVerdictText(d.Start.Verdict), pSuffix(d.Start.PValue))
		switch {
		case d.Why == WhySmaller:
			ship += " (alike to start, less idle PSS)"
		case len(d.Tied) > 0:
			ship += " (" + strings.Join(d.Tied, ", ") + " alike)"
		}
	}
	pair := func(a, b string) string {
		if d.Ship == d.Baseline {
			return a
		}
		return a + " vs " + b
	}
	cpu := pair(msOrDash(d.ShipSum.StartupCPUMs)+" ms", msOrDash(d.BaseSum.StartupCPUMs)+" ms")
	pss := "–"
	if d.ShipPSS > 0 && d.BasePSS > 0 {
		pss = pair(mib(d.ShipPSS), mib(d.BasePSS))
	}
	size := pair(sizeOrEmpty(d.ShipSum.SizeBytes), sizeOrEmpty(d.BaseSum.SizeBytes))
	var avoid []string
	for _, a := range d.Avoid {
		avoid = append(avoid, fmt.Sprintf("%s (%s×)", a.A, ratioShort(*a.Ratio)))
	}
	if len(avoid) == 0 {
		avoid = []string{"–"}
	}
	return []string{d.Budget, ship, start, cpu, pss, size, strings.Join(avoid, ", ")}
}

// platformLine says what a cluster's scale-from-zero costs and how much
// the build moves it: "On Knative (`…`): 807 ms [725–1165] per
// scale-from-zero with default; static ~ default, image ~ default; avoid
// upx: 1.353× [1.084, 1.500] (+290 ms). Longest step: pod_scheduled →
// sandbox_ready (466)."
func (r *Report) platformLine(d Decision) string {
	c := d.Campaign
	samples := coldSamples(c)
	base := samples[[2]string{d.Baseline, d.Budget}]
	var b strings.Builder
	fmt.Fprintf(&b, "**On %s** (`%s`, %s): %s ms per scale-from-zero with `%s`", platformName(d.Budget), filepath.Base(c.File), runsPhrase(c), r.medianText(base), d.Baseline)
	switch {
	case d.Ship != d.Baseline && d.Start != nil:
		alike := ""
		if len(d.Tied) > 0 {
			alike = " (" + strings.Join(d.Tied, ", ") + " alike)"
		}
		fmt.Fprintf(&b, "; ship %s%s: %s faster, p%s", d.Ship, alike, ratioText(*d.Start), pSuffix(d.Start.PValue))
	case len(d.Alike) > 0:
		fmt.Fprintf(&b, ", whatever the build (%s ~ %s)", strings.Join(d.Alike, ", "), d.Baseline)
	}
	for i, a := range d.Avoid {
		if i == 0 {
			b.WriteString("; avoid ")
		} else {
			b.WriteString(", ")
		}
		// The shift in ms is the row's own estimate, from the test behind
		// its ratio and verdict.
		fmt.Fprintf(&b, "%s: %s slower (%s ms)", a.A, ratioText(a), signedMs(a.cmp.Diff))
	}
	b.WriteString(".")
	if from, to, ms := longestStep(d.BaseSum.PhasesMs); to != "" {
		share := ""
		if d.BaseSum.MedianMs > 0 {
			share = fmt.Sprintf(", %.0f%% of the start", 100*ms/d.BaseSum.MedianMs)
		}
		fmt.Fprintf(&b, " Its longest step: %s → %s, %s ms%s.", from, to, msText(ms), share)
	}
	return b.String()
}

func msText(v float64) string { return ms(v) }

func platformName(budget string) string {
	if budget == "knative" {
		return "Knative"
	}
	return budget
}

func shortVerdictText(v string) string {
	if v == string(stats.NoDifference) {
		return "~"
	}
	return v
}

// pSuffix is "<0.001" or "=0.006", to follow a "p".
func pSuffix(p float64) string {
	if p < 0.001 {
		return "<0.001"
	}
	return fmt.Sprintf("=%.3f", p)
}

// ratioShort is a ratio with three significant digits: 0.855, 5.45, 12.8.
func ratioShort(x float64) string {
	switch {
	case x >= 100:
		return fmt.Sprintf("%.0f", x)
	case x >= 10:
		return fmt.Sprintf("%.1f", x)
	case x >= 1:
		return fmt.Sprintf("%.2f", x)
	}
	return fmt.Sprintf("%.3f", x)
}
