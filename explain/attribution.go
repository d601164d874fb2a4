package explain

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/coldstart-go/coldstart/internal/stats"
	"github.com/coldstart-go/coldstart/record"
)

// The analysis of traced starts: where each arm's start-up time goes
// (what `coldstart explain` prints and the report's attribution
// section shows). The statistics come from internal/stats, as the rest of
// coldstart's: the median with its distribution-free confidence interval,
// and arms compared with the Mann-Whitney U-test and a Hodges-Lehmann
// difference with its interval.

// UnattributedModule is the module shown for a package no build info places.
const UnattributedModule = "?"

// PhaseRow is where one arm's start-up time goes, under one budget: each
// slice is the median over the counted runs of that slice's length in each
// run, so on a noisy machine the slices' sum is near FirstRPCMs (the median
// of the totals) but not equal to it. A slice is absent (null) when the
// server left no init trace.
type PhaseRow struct {
	Arm        string `json:"arm"`
	Budget     string `json:"budget"`
	Runs       int    `json:"runs"`        // counted cold starts that reached first RPC
	TracedRuns int    `json:"traced_runs"` // of them, with an init trace
	// ExecToRuntimeMs is t0 → runtime.main: fork, exec, loading, the
	// runtime's own set-up (and a UPX stub's unpacking).
	ExecToRuntimeMs *float64 `json:"exec_to_runtime_ms"`
	// InitsMs is runtime.main → last package init done.
	InitsMs *float64 `json:"inits_ms"`
	// MainUntilListenMs is inits done → accepting: main.main until the
	// listener accepts, the part of start-up that is not init.
	MainUntilListenMs *float64 `json:"main_until_listen_ms"`
	// ListenToFirstRPCMs is accepting → first ready RPC.
	ListenToFirstRPCMs float64 `json:"listen_to_first_rpc_ms"`
	AcceptingMs        float64 `json:"accepting_ms"`
	FirstRPCMs         float64 `json:"first_rpc_ms"`
	// InitTotalMs, InitBytes and InitAllocs are medians of the sums over
	// all packages' inits (time spent in init functions, not the gaps).
	InitTotalMs *float64 `json:"init_total_ms"`
	InitBytes   int64    `json:"init_bytes"`
	InitAllocs  int64    `json:"init_allocs"`
	Packages    int      `json:"packages"` // packages whose init ran
	// VsBaseline sets the counted runs' spawn → first RPC against the
	// baseline arm's under the same budget: faster, slower or no
	// difference detected. A variant's is against its own arm's.
	record.VsBaseline
	// Variant is what makes the arm a variant (zero for any other).
	record.Variant
}

// PackageRow is one package's init in one arm, ranked by median time.
type PackageRow struct {
	Arm     string `json:"arm"`
	Budget  string `json:"budget"`
	Rank    int    `json:"rank"`
	Package string `json:"package"`
	// Module provides the package: "std", a module path, or "?" when the
	// binary's build info does not say.
	Module  string `json:"module"`
	Version string `json:"version,omitempty" render:"-"`
	// MedianMs is the median init wall time; CILoMs..CIHiMs its 95%
	// confidence interval (distribution-free; null when the runs are too
	// few to bound it: 6 at least); ResolutionMs how finely the runtime
	// printed it (it truncates: true values lie up to this much above).
	MedianMs     float64  `json:"median_ms"`
	CILoMs       *float64 `json:"ci_lo_ms"`
	CIHiMs       *float64 `json:"ci_hi_ms"`
	ResolutionMs float64  `json:"resolution_ms"`
	SharePct     float64  `json:"share_pct"` // of the arm's median init total
	Bytes        int64    `json:"bytes"`     // median heap bytes allocated
	Allocs       int64    `json:"allocs"`    // median heap allocations
	Runs         int      `json:"runs"`      // runs it was traced in
}

// ModuleRow sums one module's package inits in one arm: what a dependency
// costs at start-up.
type ModuleRow struct {
	Arm      string  `json:"arm"`
	Budget   string  `json:"budget"`
	Module   string  `json:"module"`
	Version  string  `json:"version,omitempty"`
	Packages int     `json:"packages"`
	MedianMs float64 `json:"median_ms"` // median over runs of the module's init sum
	SharePct float64 `json:"share_pct"`
	Bytes    int64   `json:"bytes"`
}

// CompareRow is one figure of an arm against the baseline arm
// (Options.Baseline), tested with the Mann-Whitney U-test at
// Alpha.
type CompareRow struct {
	Budget string  `json:"budget"`
	What   string  `json:"what"` // a phase slice, "init_total", or "init PKG"
	Base   string  `json:"base_arm"`
	Arm    string  `json:"arm"`
	BaseMs float64 `json:"base_median_ms"`
	ArmMs  float64 `json:"arm_median_ms"`
	// DiffMs is arm − base (Hodges-Lehmann), DiffLoMs..DiffHiMs its 95%
	// interval (null when the runs are too few to bound it).
	DiffMs   float64  `json:"diff_ms"`
	DiffLoMs *float64 `json:"diff_lo_ms"`
	DiffHiMs *float64 `json:"diff_hi_ms"`
	P        float64  `json:"p"`
	N        string   `json:"n"`
	// Test is the test behind P and the interval: stats.PairedWilcoxon on
	// the runs both arms traced in the same round (the arms run
	// interleaved, so noise that hits a round hits both), or
	// stats.MannWhitney when too few pair.
	Test    string `json:"test"`
	Verdict string `json:"verdict"`
}

// Report is what explain found.
type Report struct {
	Phases   []PhaseRow   `json:"phases"`
	Packages []PackageRow `json:"packages"`
	Modules  []ModuleRow  `json:"modules"`
	Compare  []CompareRow `json:"compare"`
	// Notes say what could not be measured or attributed, and why.
	Notes []string `json:"notes"`
}

// Options tune Analyze.
type Options struct {
	// Top is how many packages to list per arm (0 = 10).
	Top int
	// Arms is the order arms are reported in (nil = as they first
	// appear).
	Arms []string
	// Baseline is the arm the others are compared against ("" = default
	// when traced, else the first arm: record.ChooseBaseline).
	Baseline string
	// Modules is each arm's build info (missing = packages unattributed).
	Modules map[string]record.Modules
	// Variants are the arms that are variants, by name: each is compared
	// against its own arm (Variant.Of), not Baseline.
	Variants map[string]record.Variant
}

type group struct{ arm, budget string }

// Analyze reduces traced starts to where their start-up time goes.
func Analyze(traces []record.Trace, o Options) Report {
	if o.Top <= 0 {
		o.Top = 10
	}
	arms := append([]string(nil), o.Arms...)
	var budgets []string
	seenArm, seenBudget := map[string]bool{}, map[string]bool{}
	for _, a := range arms {
		seenArm[a] = true
	}
	byGroup := map[group][]record.Trace{}
	for _, t := range traces {
		if !seenArm[t.Arm] {
			seenArm[t.Arm] = true
			arms = append(arms, t.Arm)
		}
		if !seenBudget[t.Budget] {
			seenBudget[t.Budget] = true
			budgets = append(budgets, t.Budget)
		}
		g := group{t.Arm, t.Budget}
		byGroup[g] = append(byGroup[g], t)
	}
	var r Report
	bl := record.NewBaselines(arms, o.Baseline, func(a string) string { return o.Variants[a].Of })
	for _, a := range arms {
		if m, ok := o.Modules[a]; ok && m.Note != "" {
			r.Notes = append(r.Notes, fmt.Sprintf("%s arm: %s", a, m.Note))
		} else if !ok {
			r.Notes = append(r.Notes, fmt.Sprintf("%s arm: no build info read; packages cannot be attributed to modules", a))
		}
	}
	for _, b := range budgets {
		for _, a := range arms {
			ts := byGroup[group{a, b}]
			if len(ts) == 0 {
				continue
			}
			ph, notes := phaseRow(a, b, ts)
			ph.Variant = o.Variants[a]
			r.Phases = append(r.Phases, ph)
			r.Notes = append(r.Notes, notes...)
			pk, mods := packageRows(a, b, ts, o.Modules[a], o.Top)
			r.Packages = append(r.Packages, pk...)
			r.Modules = append(r.Modules, mods...)
		}
		r.Compare = append(r.Compare, compareArms(b, arms, bl, byGroup, r.Packages, o.Top)...)
	}
	for i := range r.Phases {
		r.Phases[i].VsBaseline = phaseVsBaseline(r.Phases[i], bl.For(r.Phases[i].Arm), byGroup)
	}
	return r
}

// phaseVsBaseline sets a phase row's counted first-RPC times against the
// baseline arm's under the same budget, paired by run where enough pair
// (as coldstart run's summaries are); nothing when either has none.
func phaseVsBaseline(row PhaseRow, base string, byGroup map[group][]record.Trace) record.VsBaseline {
	if row.Arm == base {
		return record.VsBaseline{Baseline: base, Verdict: record.VerdictBaseline}
	}
	first := func(arm string) stats.Rounds {
		xs := stats.Rounds{}
		for _, t := range counted(byGroup[group{arm, row.Budget}]) {
			if t.FirstRPCMs > 0 {
				xs[t.Run] = t.FirstRPCMs
			}
		}
		return xs
	}
	xa, xb := first(row.Arm), first(base)
	if len(xa) == 0 || len(xb) == 0 {
		return record.VsBaseline{}
	}
	return record.NewVsBaselineRounds(base, xa, xb, stats.LessIsFaster, explainConfidence, stats.DefaultMinEffect)
}

// counted are the runs that reached first RPC and count.
func counted(ts []record.Trace) []record.Trace {
	var out []record.Trace
	for _, t := range ts {
		if !t.Warmup && t.Error == "" {
			out = append(out, t)
		}
	}
	return out
}

// withInits are the runs whose inits count for the package ranking: the
// counted ones, and any that failed (a server that exits after its inits
// still shows them); the warm-up only when nothing else has inits.
func withInits(ts []record.Trace) []record.Trace {
	var out, warm []record.Trace
	for _, t := range ts {
		if len(t.Inits) == 0 {
			continue
		}
		if t.Warmup {
			warm = append(warm, t)
			continue
		}
		out = append(out, t)
	}
	if len(out) == 0 {
		return warm
	}
	return out
}

// metrics are the per-run figures arms are compared on, by name.
var metricNames = []string{"first_rpc", "exec_to_runtime", "inits", "main_until_listen", "listen_to_first_rpc", "init_total"}

func metrics(t record.Trace) map[string]float64 {
	m := map[string]float64{"first_rpc": t.FirstRPCMs}
	acc, okA := t.Phase(record.PhaseAccepting)
	if okA {
		m["listen_to_first_rpc"] = t.FirstRPCMs - acc
	}
	ready, okR := t.Phase(record.PhaseRuntimeReady)
	done, okD := t.Phase(record.PhaseInitsDone)
	if okR && okD {
		m["exec_to_runtime"] = ready
		m["inits"] = done - ready
		if okA {
			m["main_until_listen"] = acc - done
		}
	}
	if len(t.Inits) > 0 {
		var sum float64
		for _, in := range t.Inits {
			sum += in.ClockMs
		}
		m["init_total"] = sum
	}
	return m
}

func phaseRow(arm, budget string, ts []record.Trace) (PhaseRow, []string) {
	row := PhaseRow{Arm: arm, Budget: budget}
	var notes []string
	cs := counted(ts)
	row.Runs = len(cs)
	var ready, inits, main, listen, acc, first, total, bytes, allocs, npk []float64
	untraced := 0
	for _, t := range cs {
		first = append(first, t.FirstRPCMs)
		a, okA := t.Phase(record.PhaseAccepting)
		if okA {
			acc = append(acc, a)
			listen = append(listen, t.FirstRPCMs-a)
		}
		if len(t.Inits) == 0 {
			untraced++
			continue
		}
		row.TracedRuns++
		var s, by, al float64
		for _, in := range t.Inits {
			s += in.ClockMs
			by += float64(in.Bytes)
			al += float64(in.Allocs)
		}
		total, bytes, allocs = append(total, s), append(bytes, by), append(allocs, al)
		npk = append(npk, float64(len(t.Inits)))
		r, okR := t.Phase(record.PhaseRuntimeReady)
		d, okD := t.Phase(record.PhaseInitsDone)
		if okR && okD && okA {
			d = min(max(d, r), a)
			ready, inits, main = append(ready, r), append(inits, d-r), append(main, a-d)
		}
	}
	if untraced > 0 {
		other := ""
		for _, t := range cs {
			if len(t.Inits) == 0 && t.FirstOtherLine != "" {
				other = fmt.Sprintf(" (its stderr began: %q)", t.FirstOtherLine)
				break
			}
		}
		notes = append(notes, fmt.Sprintf("%s arm (%s): no init trace lines on stderr in %d of %d runs although GODEBUG=inittrace=1 was set: the server's own environment replaced GODEBUG (a wrapper script or entrypoint), its stderr goes elsewhere, or it is not a Go program%s; phases before accepting are not split for those runs", arm, budget, untraced, len(cs), other))
	}
	for _, t := range ts {
		if t.Error != "" {
			notes = append(notes, fmt.Sprintf("%s arm (%s): run %d failed: %s", arm, budget, t.Run, firstLines(t.Error, 6)))
			break
		}
	}
	if len(first) == 0 {
		return row, notes
	}
	row.FirstRPCMs = med(first)
	row.AcceptingMs = med(acc)
	row.ListenToFirstRPCMs = med(listen)
	if len(total) > 0 {
		row.InitTotalMs = ptr(med(total))
		row.InitBytes, row.InitAllocs = int64(med(bytes)), int64(med(allocs))
		row.Packages = int(med(npk))
	}
	if len(ready) > 0 {
		row.ExecToRuntimeMs = ptr(med(ready))
		row.InitsMs = ptr(med(inits))
		row.MainUntilListenMs = ptr(med(main))
	}
	return row, notes
}

func packageRows(arm, budget string, ts []record.Trace, mods record.Modules, top int) ([]PackageRow, []ModuleRow) {
	ts = withInits(ts)
	type acc struct {
		clock, bytes, allocs []float64
		res                  float64
	}
	per := map[string]*acc{}
	var totals []float64
	modRuns := map[string][]float64{}
	modBytes := map[string][]float64{}
	modPkgs := map[string]map[string]bool{}
	for i, t := range ts {
		var total float64
		modSum, modB := map[string]float64{}, map[string]float64{}
		for _, in := range t.Inits {
			a := per[in.Package]
			if a == nil {
				a = &acc{}
				per[in.Package] = a
			}
			a.clock = append(a.clock, in.ClockMs)
			a.bytes = append(a.bytes, float64(in.Bytes))
			a.allocs = append(a.allocs, float64(in.Allocs))
			a.res = max(a.res, in.ClockResMs)
			total += in.ClockMs
			mod := moduleOf(mods, in.Package)
			modSum[mod] += in.ClockMs
			modB[mod] += float64(in.Bytes)
			if modPkgs[mod] == nil {
				modPkgs[mod] = map[string]bool{}
			}
			modPkgs[mod][in.Package] = true
		}
		totals = append(totals, total)
		for mod := range modPkgs {
			// a module absent from this run counts 0 (kept aligned by run)
			for len(modRuns[mod]) < i {
				modRuns[mod] = append(modRuns[mod], 0)
				modBytes[mod] = append(modBytes[mod], 0)
			}
			modRuns[mod] = append(modRuns[mod], modSum[mod])
			modBytes[mod] = append(modBytes[mod], modB[mod])
		}
	}
	total := med(totals)
	var rows []PackageRow
	for pkg, a := range per {
		e := explainMedian(a.clock)
		mod := moduleOf(mods, pkg)
		rows = append(rows, PackageRow{
			Arm: arm, Budget: budget, Package: pkg, Module: mod, Version: mods.Version(mod),
			MedianMs: e.Center, CILoMs: finite(e.Lo), CIHiMs: finite(e.Hi), ResolutionMs: a.res,
			SharePct: explainPct(e.Center, total),
			Bytes:    int64(med(a.bytes)), Allocs: int64(med(a.allocs)), Runs: len(a.clock),
		})
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].MedianMs != rows[j].MedianMs {
			return rows[i].MedianMs > rows[j].MedianMs
		}
		if rows[i].Bytes != rows[j].Bytes {
			return rows[i].Bytes > rows[j].Bytes
		}
		return rows[i].Package < rows[j].Package
	})
	if len(rows) > top {
		rows = rows[:top]
	}
	for i := range rows {
		rows[i].Rank = i + 1
	}
	var mrows []ModuleRow
	for mod, xs := range modRuns {
		m := med(xs)
		mrows = append(mrows, ModuleRow{
			Arm: arm, Budget: budget, Module: mod, Version: mods.Version(mod),
			Packages: len(modPkgs[mod]), MedianMs: m, SharePct: explainPct(m, total),
			Bytes: int64(med(modBytes[mod])),
		})
	}
	sort.Slice(mrows, func(i, j int) bool {
		if mrows[i].MedianMs != mrows[j].MedianMs {
			return mrows[i].MedianMs > mrows[j].MedianMs
		}
		return mrows[i].Module < mrows[j].Module
	})
	if len(mrows) > top {
		mrows = mrows[:top]
	}
	return rows, mrows
}

func moduleOf(mods record.Modules, pkg string) string {
	if m := mods.Module(pkg); m != "" {
		return m
	}
	return UnattributedModule
}

// compareArms compares each arm with its baseline (bl: the baseline arm,
// a variant's own arm) under budget b: the phase slices, the init total,
// and the packages in any arm's top three. Nothing for an arm whose
// baseline was not traced under b.
func compareArms(b string, arms []string, bl record.Baselines, byGroup map[group][]record.Trace, pkgs []PackageRow, top int) []CompareRow {
	var present []string
	for _, a := range arms {
		if len(counted(byGroup[group{a, b}])) > 0 || len(withInits(byGroup[group{a, b}])) > 0 {
			present = append(present, a)
		}
	}
	if len(present) < 2 {
		return nil
	}
	var watch []string
	seen := map[string]bool{}
	for _, p := range pkgs {
		if p.Budget == b && p.Rank <= min(3, top) && !seen[p.Package] {
			seen[p.Package] = true
			watch = append(watch, p.Package)
		}
	}
	// values are an arm's figure per run, keyed by the run (the round).
	values := func(arm, what string) stats.Rounds {
		xs := stats.Rounds{}
		if pkg, ok := strings.CutPrefix(what, "init "); ok {
			for _, t := range withInits(byGroup[group{arm, b}]) {
				for _, in := range t.Inits {
					if in.Package == pkg {
						xs[t.Run] += in.ClockMs
					}
				}
			}
			return xs
		}
		for _, t := range counted(byGroup[group{arm, b}]) {
			if v, ok := metrics(t)[what]; ok {
				xs[t.Run] = v
			}
		}
		return xs
	}
	whats := append([]string(nil), metricNames...)
	for _, p := range watch {
		whats = append(whats, "init "+p)
	}
	var rows []CompareRow
	for _, arm := range present {
		base := bl.For(arm)
		if arm == base || !slices.Contains(present, base) {
			continue
		}
		for _, w := range whats {
			xa, xb := values(base, w), values(arm, w)
			if len(xa) == 0 || len(xb) == 0 {
				continue
			}
			c := explainCompare(xb, xa)
			row := CompareRow{
				Budget: b, What: w, Base: base, Arm: arm,
				BaseMs: med(xa.Values()), ArmMs: med(xb.Values()),
				DiffMs: round3(c.Diff), DiffLoMs: finite(round3(c.DiffLow)), DiffHiMs: finite(round3(c.DiffHigh)),
				P: round3(c.P), N: fmt.Sprintf("%d+%d", len(xa), len(xb)), Test: c.Test,
			}
			row.Verdict = verdict(arm, c)
			rows = append(rows, row)
		}
	}
	return rows
}

// minTestRuns is the fewest runs per arm with which the two-sided U-test
// can reach p < 0.05 at all (4: 2/C(8,4) = 0.029).
const minTestRuns = 4

func verdict(arm string, c stats.Comparison) string {
	v := c.Verdict(stats.LessIsFaster)
	if v == stats.NoDifference {
		if min(c.NA, c.NB) < minTestRuns {
			return fmt.Sprintf("%s (fewer than %d runs per arm: the test cannot reach p < %g)", v, minTestRuns, Alpha)
		}
		return string(v)
	}
	return arm + " " + string(v)
}

func med(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func explainPct(x, of float64) float64 {
	if of == 0 {
		return 0
	}
	return round3(100 * x / of)
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

func ptr(x float64) *float64 { return &x }

// finite is x, or nil when it is infinite (an unbounded interval; JSON
// has no infinities).
func finite(x float64) *float64 {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return nil
	}
	return &x
}

func firstLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = append(lines[:n], "…")
	}
	return strings.Join(lines, "\n")
}

// explainConfidence is the confidence level of every interval explain states; a
// difference is significant below p = 1 − explainConfidence.
const explainConfidence = stats.DefaultConfidence

// Alpha is the significance level below which two arms differ.
const Alpha = 1 - explainConfidence

// explainEstimate is a median with its confidence interval (±Inf when the runs
// are too few to bound it).
type explainEstimate struct {
	Center float64
	Lo, Hi float64
}

func explainMedian(xs []float64) explainEstimate {
	if len(xs) == 0 {
		return explainEstimate{}
	}
	m := stats.MedianCI(xs, explainConfidence)
	return explainEstimate{Center: m.Value, Lo: m.Low, Hi: m.High}
}

// explainCompare tests arm against base, paired by run where enough runs
// pair (stats.CompareRounds), else unpaired.
func explainCompare(arm, base stats.Rounds) stats.Comparison {
	return stats.CompareRounds(arm, base, explainConfidence)
}
