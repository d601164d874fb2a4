package report

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/coldstart-go/coldstart/internal/stats"
)

// A lever is one variant's settings (GOGC=50, --num-stream-workers=2) on
// one arm, under one budget: every comparison of a variant with those
// settings against that arm (kind "variants"), over all the campaigns
// that measured it. Settings worth setting reads nothing else, so that its
// verdicts are the Comparisons table's.
type lever struct {
	settings, of, budget string
	rows                 []ComparisonRow
}

// settingsMetrics name the figures a lever is looked at on, in the order
// they are listed: cold start, memory, then steady state.
var settingsMetrics = []struct{ name, label string }{
	{"first_rpc_ms", "cold start (first RPC)"},
	{"startup_cpu_ms", "startup CPU"},
	{"idle_pss_bytes", "idle PSS"},
	{"calls_per_s", "calls/s"},
	{"p50_us", "p50"},
	{"p99_us", "p99"},
	{"server_cpu_us_per_call", "CPU per call"},
	{"gc_cpu_us_per_call", "GC CPU per call"},
	{"pss_bytes", "PSS under load"},
}

func settingsLabel(metric string) string {
	for _, m := range settingsMetrics {
		if m.name == metric {
			return m.label
		}
	}
	return metric
}

func settingsOrder(metric string) int {
	return slices.IndexFunc(settingsMetrics, func(m struct{ name, label string }) bool { return m.name == metric })
}

// better: the row's verdict is an improvement of a over b (faster, or a
// lower cost: CPU, memory); worse its opposite.
func better(c ComparisonRow) bool {
	return c.Verdict == string(stats.Faster) || c.Verdict == string(stats.Lower)
}

func worse(c ComparisonRow) bool {
	return c.Verdict == string(stats.Slower) || c.Verdict == string(stats.Higher)
}

// worth: some effect of l is an improvement that is significant and at
// least the report's minimum effect (ComparisonRow.Actionable).
func (l *lever) worth() bool {
	return slices.ContainsFunc(l.rows, func(c ComparisonRow) bool { return c.Actionable && better(c) })
}

// costly: some effect of l is a worsening as large.
func (l *lever) costly() bool {
	return slices.ContainsFunc(l.rows, func(c ComparisonRow) bool { return c.Actionable && worse(c) })
}

// levers groups the variants' comparisons by settings, arm and budget, in
// the order first met.
func (r *Report) levers() []*lever {
	byLabel := map[string]*Campaign{}
	for _, c := range r.Campaigns {
		byLabel[c.Label] = c
	}
	var out []*lever
	idx := map[[3]string]*lever{}
	for _, row := range r.Comparisons() {
		if row.Kind != KindVariants {
			continue
		}
		c := byLabel[row.Campaign]
		if c == nil {
			continue
		}
		v, ok := c.Variants()[row.A]
		if !ok || v.Control {
			continue
		}
		settings := strings.Join(slices.Concat(v.Env, v.Args, v.Platform), " ")
		if settings == "" {
			settings = "(nothing set)"
		}
		budget, _ := splitScope(row.Scope)
		k := [3]string{settings, v.Of, budget}
		l := idx[k]
		if l == nil {
			l = &lever{settings: settings, of: v.Of, budget: budget}
			idx[k] = l
			out = append(out, l)
		}
		l.rows = append(l.rows, row)
	}
	for _, l := range out {
		slices.SortStableFunc(l.rows, func(a, b ComparisonRow) int { return settingsOrder(a.Metric) - settingsOrder(b.Metric) })
	}
	return out
}

// A control is a control variant (--variant NAME:control) in one
// campaign: its arm under another name, with every comparison against
// the arm. It must come out "no difference"; where it does not, the
// campaign's levers on that arm and budget are doubtful, and marked.
type control struct {
	name, of, campaign string
	rows               []ComparisonRow
}

// differs are c's rows with a significant verdict, in scope (a budget,
// and the steady step: "" = any).
func (c *control) differs(scope string) []ComparisonRow {
	var out []ComparisonRow
	for _, row := range c.rows {
		if (scope == "" || row.Scope == scope) && row.Verdict != string(stats.NoDifference) {
			out = append(out, row)
		}
	}
	return out
}

// controls are the files' control variants, in the order first met.
func (r *Report) controls() []*control {
	byLabel := map[string]*Campaign{}
	for _, c := range r.Campaigns {
		byLabel[c.Label] = c
	}
	var out []*control
	idx := map[[2]string]*control{}
	for _, row := range r.Comparisons() {
		c := byLabel[row.Campaign]
		if row.Kind != KindVariants || c == nil {
			continue
		}
		v, ok := c.Variants()[row.A]
		if !ok || !v.Control {
			continue
		}
		k := [2]string{row.Campaign, row.A}
		ct := idx[k]
		if ct == nil {
			ct = &control{name: row.A, of: v.Of, campaign: row.Campaign}
			idx[k] = ct
			out = append(out, ct)
		}
		ct.rows = append(ct.rows, row)
	}
	return out
}

// doubted reports whether row, a lever's, comes from a campaign whose
// control of the same arm differed in the row's scope: the same budget,
// and for steady state the same step (a cold start's control says
// nothing of steady figures).
func doubted(cs []*control, of string, row ComparisonRow) bool {
	return slices.ContainsFunc(cs, func(c *control) bool {
		return c.campaign == row.Campaign && c.of == of && len(c.differs(row.Scope)) > 0
	})
}

// splitScope splits a comparison's scope, "budget=cores=1 grpc throughput
// 8B c32", into the budget and the rest (the steady step; "" for cold
// start and density).
func splitScope(scope string) (budget, step string) {
	s := strings.TrimPrefix(scope, "budget=")
	budget, step, _ = strings.Cut(s, " ")
	return budget, step
}

// leverFigure names a row's figure, with its steady step when it has one.
func leverFigure(c ComparisonRow) string {
	if _, step := splitScope(c.Scope); step != "" {
		return settingsLabel(c.Metric) + " (" + step + ")"
	}
	return settingsLabel(c.Metric)
}

// valueText renders a median in the metric's unit.
func valueText(metric string, v *float64) string {
	if v == nil {
		return "–"
	}
	switch {
	case strings.HasSuffix(metric, "_bytes"):
		return mib(int64(*v))
	case strings.HasSuffix(metric, "_ms"):
		return ms(*v) + " ms"
	case strings.HasSuffix(metric, "_us") || strings.HasSuffix(metric, "_us_per_call"):
		return us(*v) + " µs"
	case metric == "calls_per_s":
		return fmt.Sprintf("%.0f/s", *v)
	}
	return ms(*v)
}

// effectText is one effect, verdict first: "calls/s (grpc throughput 8B
// c32) faster, 1.43× [1.10, 1.80]".
func effectText(c ComparisonRow) string {
	return fmt.Sprintf("%s %s, %s", leverFigure(c), c.Verdict, ratioText(c))
}

// settingsSection writes "Settings worth setting" when the files hold
// variants: verdict first, the levers worth setting (an improvement
// significant and at least the minimum effect) with every figure measured
// beside it, its costs included; the levers that cost as much; then one
// "no effect detected" line per other lever, naming its budgets and the
// figures looked at.
func (r *Report) settingsSection(m *mdw) {
	ls, cs := r.levers(), r.controls()
	if len(ls) == 0 && len(cs) == 0 {
		return
	}
	conf, minEff := r.confidence(), r.minEffect()
	var worth, costly []*lever
	type quiet struct {
		settings, of string
		budgets      []string
		rows         []ComparisonRow
	}
	var quiets []*quiet
	qidx := map[[2]string]*quiet{}
	for _, l := range ls {
		switch {
		case l.worth():
			worth = append(worth, l)
		case l.costly():
			costly = append(costly, l)
		default:
			k := [2]string{l.settings, l.of}
			q := qidx[k]
			if q == nil {
				q = &quiet{settings: l.settings, of: l.of}
				qidx[k] = q
				quiets = append(quiets, q)
			}
			q.budgets = appendUnique(q.budgets, l.budget)
			q.rows = append(q.rows, l.rows...)
		}
	}
	name := func(settings, of string) string {
		return "`" + strings.ReplaceAll(settings, "`", "'") + "` on " + of
	}

	distinct := map[[2]string]bool{}
	for _, l := range ls {
		distinct[[2]string{l.settings, l.of}] = true
	}
	m.p("## Settings worth setting\n\n")
	switch {
	case len(ls) == 0:
		m.p("No lever was measured: the files hold controls only.")
	case len(worth) == 0:
		m.p("**None of the %d lever(s) measured is worth setting** under any budget: no improvement was both significant and at least %.0f%% in size.", len(distinct), 100*minEff)
	default:
		var names []string
		for _, l := range worth {
			var best []string
			for _, c := range l.rows {
				if c.Actionable && better(c) {
					best = append(best, effectText(c))
				}
			}
			if len(best) > 1 {
				best = append(best[:1], fmt.Sprintf("%d more in the table", len(best)-1))
			}
			var costs []string
			for _, c := range l.rows {
				if c.Actionable && worse(c) {
					costs = appendUnique(costs, settingsLabel(c.Metric)+" "+c.Verdict)
				}
			}
			cost := ""
			if len(costs) > 0 {
				cost = "; at a cost: " + strings.Join(costs, ", ")
			}
			mark := ""
			if slices.ContainsFunc(l.rows, func(c ComparisonRow) bool { return c.Actionable && better(c) && doubted(cs, l.of, c) }) {
				mark = " †"
			}
			names = append(names, fmt.Sprintf("%s at %s (%s%s)%s", name(l.settings, l.of), l.budget, strings.Join(best, "; "), cost, mark))
		}
		m.p("**Worth setting**: %s.", strings.Join(names, "; "))
	}
	if len(costly) > 0 {
		m.p(" Under %d lever-budget pair(s) a lever costs at least that much and gains nothing as large.", len(costly))
	}
	if len(quiets) > 0 && len(worth)+len(costly) > 0 {
		m.p(" No effect detected for the other %d lever(s) or budgets (below).", len(quiets))
	}
	m.p("\n\n")
	m.p("A lever is a variant's settings (`--variant`, `--sweep`): its arm's binary started with them, set against the arm as it is "+
		"(the `variants` rows of Comparisons: paired by round where both ran in the same rounds). It is worth setting under a budget when an effect "+
		"is an improvement (faster, or lower CPU or memory) significant at p < %.2f and at least %.0f%% in size; its other figures stand beside it, "+
		"costs included.", 1-conf, 100*minEff)
	n := 0
	for _, l := range ls {
		n += len(l.rows)
	}
	if exp := float64(n) * (1 - conf); exp >= 1 {
		m.p(" These are %d comparisons: at p < %.2f about %.0f of them would come out significant by chance alone, "+
			"so a lone verdict, one figure of one step, may be one of those (a control, `--variant NAME:control`, shows what the host alone gives).", n, 1-conf, exp)
	}
	m.p("\n\n")

	table := func(ls []*lever) {
		var rows [][]string
		for _, l := range ls {
			for _, c := range l.rows {
				v := c.Verdict
				if c.Verdict != string(stats.NoDifference) && !c.Actionable {
					v += fmt.Sprintf(" (< %.0f%%)", 100*c.MinEffect)
				}
				if c.Actionable {
					v = "**" + v + "**"
				}
				if doubted(cs, l.of, c) {
					v += " †"
				}
				rows = append(rows, []string{name(l.settings, l.of), l.budget, leverFigure(c), valueText(c.Metric, c.MedianB), valueText(c.Metric, c.MedianA),
					ratioText(c), pText(c.PValue), v, fmt.Sprintf("%d+%d", c.NA, c.NB), "`" + c.Campaign + "`"})
			}
		}
		m.table([]string{"lever", "budget", "figure", "arm", "with lever", fmt.Sprintf("lever/arm [%.0f%% CI]", 100*conf), "p", "verdict", "n", "file"}, rows)
	}
	if len(worth) > 0 {
		table(worth)
	}
	r.controlsText(m, cs, conf)
	if len(costly) > 0 {
		m.p("**Not worth setting: it costs**\n\n")
		for _, l := range costly {
			var bad []string
			for _, c := range l.rows {
				if c.Actionable && worse(c) {
					bad = append(bad, effectText(c))
				}
			}
			m.p("- %s at %s: %s (%s).\n", name(l.settings, l.of), l.budget, strings.Join(bad, "; "), filesOf(l.rows))
		}
		m.p("\n")
	}
	if len(quiets) > 0 {
		m.p("**No effect detected** (none significant and at least %.0f%%):\n\n", 100*minEff)
		for _, q := range quiets {
			var figs, steps, small []string
			for _, c := range q.rows {
				figs = appendUnique(figs, settingsLabel(c.Metric))
				if _, step := splitScope(c.Scope); step != "" {
					steps = appendUnique(steps, step)
				}
				if c.Verdict != string(stats.NoDifference) {
					small = append(small, fmt.Sprintf("%s at %s %s", leverFigure(c), strings.TrimPrefix(strings.SplitN(c.Scope, " ", 2)[0], "budget="), ratioText(c)))
				}
			}
			slices.SortStableFunc(figs, func(a, b string) int { return labelOrder(a) - labelOrder(b) })
			where := filesOf(q.rows)
			if len(steps) > 0 {
				where = strings.Join(steps, "; ") + "; " + where
			}
			line := fmt.Sprintf("- %s at %s: no effect detected on %s (%s)", name(q.settings, q.of), strings.Join(q.budgets, ", "), strings.Join(figs, ", "), where)
			if len(small) > 0 {
				line += fmt.Sprintf("; significant but under %.0f%%: %s", 100*minEff, strings.Join(small, "; "))
			}
			m.p("%s.\n", line)
		}
		m.p("\n")
	}
}

func labelOrder(label string) int {
	return slices.IndexFunc(settingsMetrics, func(m struct{ name, label string }) bool { return m.label == label })
}

// filesOf names the results files rows come from, as code.
func filesOf(rows []ComparisonRow) string {
	var fs []string
	for _, c := range rows {
		fs = appendUnique(fs, "`"+filepath.Base(c.Campaign)+"`")
	}
	return strings.Join(fs, ", ")
}

// controlsText says what each control came to: "no difference", as it
// must, or the figures where it differed, with what that means for the
// levers set against the same arm in the same file (marked †).
func (r *Report) controlsText(m *mdw, cs []*control, conf float64) {
	if len(cs) == 0 {
		return
	}
	m.p("**Controls** (a variant that sets nothing its arm does not have: the same start under another name, which must come out as its arm):\n\n")
	for _, c := range cs {
		d := c.differs("")
		if len(d) == 0 {
			m.p("- `%s` against %s: no difference detected on any of its %d figure(s), as it must (`%s`).\n", c.name, c.of, len(c.rows), filepath.Base(c.campaign))
			continue
		}
		var what []string
		for _, row := range d {
			b, _ := splitScope(row.Scope)
			what = append(what, fmt.Sprintf("%s at %s %s, %s", leverFigure(row), b, row.Verdict, ratioText(row)))
		}
		m.p("- **`%s` differed from %s**, the same start under another name, on %d of its %d figure(s): %s (`%s`). "+
			"In that file, the levers on %s under those budgets (and steady steps) are marked †: a difference of that size there is the host's, not the lever's "+
			"(at p < %.2f, %d figure(s) would give about %.1f such verdicts by chance alone).\n",
			c.name, c.of, len(d), len(c.rows), strings.Join(what, "; "), filepath.Base(c.campaign), c.of, 1-conf, len(c.rows), float64(len(c.rows))*(1-conf))
	}
	m.p("\n")
}
