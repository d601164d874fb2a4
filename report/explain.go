package report

import (
	"fmt"
	"strings"

	"github.com/coldstart-go/coldstart/explain"
	"github.com/coldstart-go/coldstart/internal/stats"
	"github.com/coldstart-go/coldstart/record"
)

// The record kinds `coldstart explain` writes: one "explain_modules" per
// arm (its build info), one "trace" per traced start.
const (
	TraceKind          = "trace"
	ExplainModulesKind = "explain_modules"
)

// ExplainModules is one arm's build info, as coldstart explain records it.
type ExplainModules struct {
	Arm string `json:"arm"`
	record.Modules
}

// explainTop is how many packages the report lists per arm.
const explainTop = 8

// explainReport analyzes a campaign's traces as coldstart explain does.
func (c *Campaign) explainReport() explain.Report {
	mods := map[string]record.Modules{}
	var arms []string
	for _, m := range c.ExplainModules {
		mods[m.Arm] = m.Modules
		arms = append(arms, m.Arm)
	}
	return explain.Analyze(c.Traces, explain.Options{Top: explainTop, Arms: arms, Modules: mods})
}

func optMs(v *float64) string {
	if v == nil {
		return ""
	}
	return ms(*v)
}

// explainSection writes, per explain campaign: the phase split per arm,
// the top packages per arm with their modules, the modules' sums, the
// significant differences between arms, and what could not be attributed.
func (r *Report) explainSection(m *mdw, plots func(*Campaign, string)) {
	if !r.has(func(c *Campaign) bool { return len(c.Traces) > 0 }) {
		return
	}
	m.p("## Start-up attribution: where the time goes\n\n")
	m.p("From `coldstart explain`: each arm started with `GODEBUG=inittrace=1`, apart from the timed runs (tracing " +
		"costs time: its first RPC is later than the cold-start table's). Phases are medians of times from spawn; " +
		"\"exec → runtime\" is fork, exec, loading and the Go runtime's set-up (and a UPX stub's unpacking), estimated " +
		"from when the init lines arrived; \"inits\" runs from runtime.main to the last package init, including the " +
		"trace's own printing; \"main until listen\" is main.main until the listener accepts. Each slice is the " +
		"median of its length per run, so their sum is near the median first RPC, not equal to it.\n\n")
	for _, c := range r.Campaigns {
		if len(c.Traces) == 0 {
			continue
		}
		er := c.explainReport()
		var rows [][]string
		for _, p := range er.Phases {
			rows = append(rows, []string{p.Arm, p.Budget, fmt.Sprintf("%d (%d traced)", p.Runs, p.TracedRuns),
				optMs(p.ExecToRuntimeMs), optMs(p.InitsMs), optMs(p.MainUntilListenMs), ms(p.ListenToFirstRPCMs),
				ms(p.FirstRPCMs), optMs(p.InitTotalMs), fmt.Sprintf("%.2f MiB", float64(p.InitBytes)/(1<<20)), fmt.Sprint(p.InitAllocs), fmt.Sprint(p.Packages)})
		}
		m.table([]string{"arm", "budget", "runs", "exec → runtime ms", "inits ms", "main until listen ms", "listen → first RPC ms",
			"first RPC ms", "init functions ms", "init heap", "init allocs", "packages"}, rows)
		m.p("%s \"init functions\" is the sum of the packages' own init times (the \"inits\" phase less the gaps between them).\n\n", provenanceLine(c))
		plots(c, "waterfall")

		for _, p := range er.Phases {
			var prow [][]string
			for _, k := range er.Packages {
				if k.Arm != p.Arm || k.Budget != p.Budget {
					continue
				}
				ci := ""
				if k.CILoMs != nil && k.CIHiMs != nil {
					ci = ms(*k.CILoMs) + "–" + ms(*k.CIHiMs)
				}
				prow = append(prow, []string{fmt.Sprint(k.Rank), "`" + k.Package + "`", k.Module, ms(k.MedianMs), ci,
					fmt.Sprintf("%.1f%%", k.SharePct), fmt.Sprint(k.Bytes), fmt.Sprint(k.Allocs)})
			}
			if len(prow) == 0 {
				continue
			}
			m.p("**%s** (%s): top packages by median init time\n\n", p.Arm, p.Budget)
			m.table([]string{"rank", "package", "module", "median ms", "95% CI ms", "share of init", "heap bytes", "allocs"}, prow)
		}
		var mrows [][]string
		for _, mo := range er.Modules {
			mrows = append(mrows, []string{mo.Arm, mo.Budget, mo.Module, mo.Version, fmt.Sprint(mo.Packages), ms(mo.MedianMs), fmt.Sprintf("%.1f%%", mo.SharePct), fmt.Sprint(mo.Bytes)})
		}
		if len(mrows) > 0 {
			m.p("**Modules**: the sum of their packages' inits, median over runs\n\n")
			m.table([]string{"arm", "budget", "module", "version", "packages", "median ms", "share of init", "heap bytes"}, mrows)
		}
		var crows [][]string
		for _, cr := range er.Compare {
			if strings.HasPrefix(cr.Verdict, "no difference") && strings.HasPrefix(cr.What, "init ") {
				continue // packages only when they differ; phases always
			}
			diff := fmt.Sprintf("%+.3g", cr.DiffMs)
			if cr.DiffLoMs != nil && cr.DiffHiMs != nil {
				diff += fmt.Sprintf(" [%.3g, %.3g]", *cr.DiffLoMs, *cr.DiffHiMs)
			}
			test := cr.Test
			if test == "" {
				test = stats.MannWhitney // files from before explain paired by run
			}
			crows = append(crows, []string{cr.Budget, cr.What, cr.Base, cr.Arm, ms(cr.BaseMs), ms(cr.ArmMs), diff, fmt.Sprintf("%.3f", cr.P), cr.N, test, cr.Verdict})
		}
		if len(crows) > 0 {
			m.p("**Arms against %s**: at %g, the Wilcoxon signed-rank test on the runs both arms traced in the same round (%s), or Mann-Whitney U where too few pair (%s); "+
				"difference (Hodges-Lehmann) with its 95%% interval; packages shown only where they differ; p not corrected for the number of rows.\n\n",
				er.Compare[0].Base, explain.Alpha, stats.PairedWilcoxon, stats.MannWhitney)
			m.table([]string{"budget", "what", "base", "arm", "base ms", "arm ms", "arm − base ms [95% CI]", "p", "n", "test", "verdict"}, crows)
		}
		if len(er.Notes) > 0 {
			m.p("Not attributed or not measured:\n\n")
			for _, n := range er.Notes {
				m.p("- %s\n", strings.ReplaceAll(n, "\n", " "))
			}
			m.p("\n")
		}
	}
}

// pollSection writes what a polling platform would have seen, for the
// cold-start campaigns run with --poll-interval.
func (r *Report) pollSection(m *mdw) {
	if !r.has(func(c *Campaign) bool {
		for _, s := range c.Summaries {
			if len(s.Polls) > 0 {
				return true
			}
		}
		return false
	}) {
		return
	}
	m.p("## Readiness polling: what the platform sees\n\n")
	m.p("A platform that polls readiness every interval from spawn sees a start at the end of its first poll that " +
		"began once the server was ready (the prober's successful RPC began then; a poll takes as long as that RPC took). " +
		"Delay = seen − true; share = delay / seen. Medians.\n\n")
	for _, c := range r.Campaigns {
		var sums []record.Summary
		for _, s := range c.Summaries {
			sums = append(sums, s.Summary)
		}
		prs := record.PollRows(sums)
		if len(prs) == 0 {
			continue
		}
		var rows [][]string
		for _, p := range prs {
			rows = append(rows, []string{p.Arm, p.Budget, fmt.Sprint(p.Runs), p.Name, ms(p.IntervalMs), ms(p.PollMs), ms(p.TrueMs), ms(p.SeenMs), ms(p.DelayMs), fmt.Sprintf("%.0f%%", p.SharePct)})
		}
		m.table([]string{"arm", "budget", "runs", "poll", "interval ms", "one poll ms", "true ms", "seen ms", "delay ms", "share"}, rows)
		m.p("%s\n\n", provenanceLine(c))
	}
}

// explainPlot is the waterfall of explain's phases per arm (and budget):
// exec → runtime, inits, main until listen, listen → first RPC, each the
// median of its length per run (so a bar's end is near the median first
// RPC, not at it). Arms of a similar length share an axis; an arm that
// dwarfs them (upx's unpacking) is drawn on its own.
func explainPlot(c *Campaign) (waterfall, bool, error) {
	er := c.explainReport()
	names := []string{"exec → runtime", "inits", "main until listen", "listen → first RPC"}
	var bars []wfBar
	for _, p := range er.Phases {
		if p.ExecToRuntimeMs == nil || p.InitsMs == nil || p.MainUntilListenMs == nil {
			continue
		}
		n := p.Arm
		if p.Budget != "max" {
			n += ", " + p.Budget
		}
		b := wfBar{label: n}
		for i, v := range []float64{*p.ExecToRuntimeMs, *p.InitsMs, *p.MainUntilListenMs, p.ListenToFirstRPCMs} {
			b.segs = append(b.segs, wfSeg{name: names[i], step: names[i], ms: max(v, 0)})
		}
		bars = append(bars, b)
	}
	if len(bars) == 0 {
		return waterfall{}, false, nil
	}
	return waterfall{panels: panelsByScale(bars), names: names}, true, nil
}
