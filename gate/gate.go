// Package gate decides whether a change made a Go server start worse, from
// coldstart's results files, for a CI job to act on: per arm and budget,
// every watched figure the files carry (spawn to first RPC, its median and
// p90; the server's startup CPU and PSS at first RPC; idle PSS from density
// campaigns; binary size; each recorded phase, and explain's) of the new
// side is set against the base side, and a figure that got worse by more
// than Options.MaxRegression with significance is a regression.
//
// Two sides come from two sets of files measured apart (Compare: unpaired,
// Mann–Whitney with the Hodges–Lehmann ratio and its interval), or from
// one campaign whose arms base[.ARM] and new[.ARM] ran interleaved
// (ComparePaired: paired by round, Wilcoxon signed-rank on the per-round
// ratios). The p90 is compared by bootstrap (stats.CompareQuantile), size
// exactly, and the p-values of all tested figures are adjusted together
// (Holm), so that a build set against itself is flagged at most at the
// stated level however many figures are watched.
//
// Before anything is compared the inputs are checked: the same schema,
// machine class (CPU model, cores, memory, kernel, cgroup mode), tool
// version, probe, transport, page cache, arms, budgets and record kinds on
// both sides, else an *IncomparableError naming what differs; every counted
// sample a real cold start (a phase after t0, the server's answers after
// its process started, a PID no other start of the file had), else it is
// refused and counted; and each file's noise records: one whose rounds ran
// mostly on a busy host makes the result inconclusive.
package gate

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/coldstart-go/coldstart/internal/noise"
	"github.com/coldstart-go/coldstart/internal/stats"
	"github.com/coldstart-go/coldstart/report"
)

// The sides' names, as results and arms name them.
const (
	Base = "base"
	New  = "new"
)

// DefaultMaxRegression is how much worse a figure may get, significantly,
// before it is a regression: 5%, the smallest difference coldstart's
// recommendations act on (stats.DefaultMinEffect).
const DefaultMaxRegression = stats.DefaultMinEffect

// Options are how a comparison judges.
type Options struct {
	// MaxRegression is the relative worsening a significant difference
	// may reach and still pass (0.05: 5%); at least 0.
	MaxRegression float64
	// Confidence is the level of the intervals; tests are significant at
	// 1 − Confidence after Holm's adjustment (0 = 95%).
	Confidence float64
	// AllowBusy judges files whose noise records say the host was busy
	// instead of calling the result inconclusive.
	AllowBusy bool
}

func (o Options) confidence() float64 {
	if o.Confidence == 0 {
		return stats.DefaultConfidence
	}
	return o.Confidence
}

// Input is one side's results: the campaigns read from its paths.
type Input struct {
	Paths     []string
	Campaigns []*report.Campaign
	// Warnings are the lines and files that could not be used; those
	// with Schema set are files of another schema, which make the sides
	// incomparable.
	Warnings []report.Warning
}

// Load reads results files and directories of them (every *.jsonl, in
// name order), as coldstart report does.
func Load(paths ...string) (*Input, error) {
	r, err := report.Load(paths...)
	if err != nil {
		return nil, err
	}
	return &Input{Paths: paths, Campaigns: r.Campaigns, Warnings: r.Warnings}, nil
}

// IncomparableError says why two sides cannot be compared: each of Diffs
// names one thing that differs between them (or is missing), with both
// values.
type IncomparableError struct{ Diffs []string }

func (e *IncomparableError) Error() string {
	return "base and new cannot be compared: " + strings.Join(e.Diffs, "; ")
}

// Verdict is what one row concludes about new against base.
type Verdict string

// The verdicts. Every watched figure is one where more is worse.
const (
	// Regression: significantly worse, by more than MaxRegression.
	Regression Verdict = "regression"
	// Worse: significantly worse, by no more than MaxRegression.
	Worse Verdict = "worse, within tolerance"
	// Better: significantly better.
	Better   Verdict = "better"
	NoChange Verdict = "no change detected"
	// Same: an exact figure (size) that did not change.
	Same Verdict = "same"
	// TooFew: a side has too few values for the test to reach the level.
	TooFew Verdict = "too few values"
)

// The tests a Row names.
const (
	TestExact = "exact" // a figure measured once, without noise: binary size
)

// Row is one figure of one arm under one budget, new against base.
type Row struct {
	Arm, Budget string
	// Figure names what is compared ("first RPC median", "phase
	// accepting"); Unit is "ms" or "B".
	Figure, Unit string
	// Base and New are each side's figure: medians, the p90s for the
	// p90, the sizes for size (NaN when a side has no value).
	Base, New float64
	// NBase and NNew count the values behind them (pairs when paired).
	NBase, NNew int
	// Ratio is new over base (Hodges–Lehmann; for the p90 and size, the
	// ratio of the figures) with its interval at the confidence level;
	// NaN when unknown.
	Ratio, Low, High float64
	// P is the p-value after Holm's adjustment over every tested row,
	// RawP before it; NaN for an exact figure or too few values.
	P, RawP float64
	// Test is stats.MannWhitney, stats.PairedWilcoxon, stats.Bootstrap
	// or TestExact.
	Test    string
	Verdict Verdict
	// Need is the fewest values (pairs) a side needs for the row's test,
	// for a TooFew row: 10 for the p90 (stats.MinQuantileSize), else as
	// many as a median's interval takes (6 at 95%).
	Need int
}

// Side is what one side brought: where from, and its cold starts.
type Side struct {
	Name  string
	Paths []string
	// Files are the results files that held watched figures.
	Files []string
	// Counted are the cold starts (and traced starts) compared; Refused
	// those left out as not real cold starts, by reason.
	Counted int
	Refused map[string]int
}

// RefusedTotal is how many starts were refused.
func (s Side) RefusedTotal() int {
	n := 0
	for _, v := range s.Refused {
		n += v
	}
	return n
}

// BusyFile is a results file whose noise records say the host was busy
// for most of its rounds.
type BusyFile struct {
	File          string
	Busy, Windows int
}

func (b BusyFile) String() string {
	return fmt.Sprintf("%s: %d of %d rounds ran on a busy host (other work kept more than %.2f CPUs busy)", b.File, b.Busy, b.Windows, noise.BusyOtherCPUs)
}

// Result is a whole comparison.
type Result struct {
	Options Options
	// Paired: one campaign's base and new arms, paired by round.
	Paired    bool
	Base, New Side
	Rows      []Row
	// Tested counts the rows in Holm's family.
	Tested int
	// Busy are the files whose host was busy (both sides).
	Busy []BusyFile
	// Skipped name the watched figures the files do not carry, and why.
	Skipped []string
	// FirstEveryRound is the side that started first in every round of
	// a paired campaign ("" = they took turns, or unpaired): an effect
	// of going second then reads as a difference.
	FirstEveryRound string

	b, n *sideData // the values compared, for Benchstat
}

// Outcome is what a result means for the job that asked.
type Outcome int

// The outcomes.
const (
	Pass Outcome = iota
	Fail
	// Inconclusive: a file ran on a busy host (and not Options.AllowBusy).
	Inconclusive
)

// Outcome says whether the gate passes: Inconclusive when a file ran on a
// busy host and that was not allowed, whatever the rows say; else Fail
// when a row is a regression.
func (r *Result) Outcome() Outcome {
	if len(r.Busy) > 0 && !r.Options.AllowBusy {
		return Inconclusive
	}
	if len(r.Regressions()) > 0 {
		return Fail
	}
	return Pass
}

// Regressions are the rows whose verdict is Regression.
func (r *Result) Regressions() []Row {
	var out []Row
	for _, row := range r.Rows {
		if row.Verdict == Regression {
			out = append(out, row)
		}
	}
	return out
}

// judge sets each row's verdict: exact rows by their ratio, tested rows by
// their Holm-adjusted p-value and ratio.
func judge(rows []Row, o Options) int {
	var ps []float64
	var idx []int
	for i, r := range rows {
		if r.Test != TestExact && r.Verdict != TooFew {
			ps, idx = append(ps, r.RawP), append(idx, i)
		}
	}
	for j, p := range stats.HolmAdjust(ps) {
		rows[idx[j]].P = p
	}
	alpha := 1 - o.confidence()
	for i := range rows {
		r := &rows[i]
		switch {
		case r.Verdict == TooFew:
		case r.Test == TestExact:
			switch {
			case r.Ratio-1 > o.MaxRegression:
				r.Verdict = Regression
			case r.Ratio > 1:
				r.Verdict = Worse
			case r.Ratio < 1:
				r.Verdict = Better
			default:
				r.Verdict = Same
			}
		case !(r.P < alpha) || math.IsNaN(r.Ratio):
			r.Verdict = NoChange
		case r.Ratio > 1 && r.Ratio-1 > o.MaxRegression:
			r.Verdict = Regression
		case r.Ratio > 1:
			r.Verdict = Worse
		case r.Ratio < 1:
			r.Verdict = Better
		default:
			r.Verdict = NoChange
		}
	}
	return len(ps)
}

// key is one arm under one budget.
type key struct{ arm, budget string }

func (k key) String() string { return k.arm + " under " + k.budget }

// ordered keeps keys in the order first seen.
type ordered struct {
	keys []key
	seen map[key]bool
}

func (o *ordered) add(k key) {
	if o.seen == nil {
		o.seen = map[key]bool{}
	}
	if !o.seen[k] {
		o.seen[k] = true
		o.keys = append(o.keys, k)
	}
}

func (o *ordered) has(k key) bool { return o.seen[k] }

// armsOf and budgetsOf list the keys' arms and budgets, in order.
func armsOf(keys []key) []string {
	var out []string
	for _, k := range keys {
		if !slices.Contains(out, k.arm) {
			out = append(out, k.arm)
		}
	}
	return out
}

func budgetsOf(keys []key) []string {
	var out []string
	for _, k := range keys {
		if !slices.Contains(out, k.budget) {
			out = append(out, k.budget)
		}
	}
	return out
}

// minus lists what a has and b lacks.
func minus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// ratio stays NaN (unknown) when either side is not positive.
func ratio(n, b float64) float64 {
	if !(n > 0 && b > 0) {
		return math.NaN()
	}
	return n / b
}

// finite maps ±Inf to NaN: an interval bound that is no bound.
func finite(v float64) float64 {
	if math.IsInf(v, 0) {
		return math.NaN()
	}
	return v
}
