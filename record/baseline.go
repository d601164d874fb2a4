package record

import (
	"math"

	"github.com/coldstart-go/coldstart/internal/stats"
)

// VerdictBaseline marks the baseline's own row: it is what the others are
// compared against.
const VerdictBaseline = "baseline"

// VsBaseline is one row's figure set against the baseline arm's under the
// same budget: the ratio row/baseline (Hodges–Lehmann) with its interval,
// the two-sided p-value of Test and the verdict (faster, slower, "no
// difference detected", or "baseline" on the baseline's own row). All nil
// or empty when there was nothing to compare.
type VsBaseline struct {
	Baseline string   `json:"baseline,omitempty" render:"-"`
	Ratio    *float64 `json:"vs_baseline_ratio,omitempty"`
	CILow    *float64 `json:"vs_baseline_ci_low,omitempty"`
	CIHigh   *float64 `json:"vs_baseline_ci_high,omitempty"`
	P        *float64 `json:"vs_baseline_p,omitempty"`
	Verdict  string   `json:"vs_baseline_verdict,omitempty"`
	// Test is the test behind P and the interval: stats.PairedWilcoxon
	// on per-round ratios when the two arms ran in the same rounds, else
	// stats.MannWhitney ("" when nothing was compared).
	Test string `json:"vs_baseline_test,omitempty" render:"-"`
	// RunsToDetect estimates the runs per arm that would detect a
	// stats.DefaultMinEffect difference at the spread seen (0 = unknown),
	// for rows where none was detected.
	RunsToDetect int `json:"vs_baseline_runs_to_detect,omitempty" render:"-"`
}

// Compared reports whether the row was compared with a baseline other
// than itself.
func (v VsBaseline) Compared() bool { return v.Verdict != "" && v.Verdict != VerdictBaseline }

// NewVsBaseline compares a row's values xa against the baseline's xb
// (stats.Compare, unpaired) for a figure of the given sense.
func NewVsBaseline(baseline string, xa, xb []float64, s stats.Sense, confidence, minEffect float64) VsBaseline {
	return vsBaseline(baseline, stats.Compare(xa, xb, confidence), s, minEffect, func() int {
		return stats.RunsToDetect(xa, xb, minEffect, confidence, 0.8)
	})
}

// NewVsBaselineRounds is NewVsBaseline for values keyed by the round they
// were measured in: paired where the rounds pair (stats.CompareRounds),
// which cancels noise that hit a whole round.
func NewVsBaselineRounds(baseline string, xa, xb stats.Rounds, s stats.Sense, confidence, minEffect float64) VsBaseline {
	return vsBaseline(baseline, stats.CompareRounds(xa, xb, confidence), s, minEffect, func() int {
		return stats.RunsToDetectRounds(xa, xb, minEffect, confidence, 0.8)
	})
}

// vsBaseline reads comparison c; runsToDetect is called only for a row
// with nothing actionable.
func vsBaseline(baseline string, c stats.Comparison, s stats.Sense, minEffect float64, runsToDetect func() int) VsBaseline {
	v := VsBaseline{Baseline: baseline, Verdict: string(c.Verdict(s)), Test: c.Test}
	v.Ratio, v.CILow, v.CIHigh = finite(c.Ratio), finite(c.RatioLow), finite(c.RatioHigh)
	if v.CILow == nil || v.CIHigh == nil || *v.CILow <= 0 {
		// Too few values to bound the ratio: its interval is (0, ∞),
		// exp(−∞) and exp(∞), which is no interval.
		v.CILow, v.CIHigh = nil, nil
	}
	if c.NA > 0 && c.NB > 0 {
		p := c.P
		v.P = &p
	}
	if !c.Actionable(minEffect) {
		v.RunsToDetect = runsToDetect()
	}
	return v
}

// ChooseBaseline picks the baseline among arms, in their order: want
// where it is one of them, else "default" (what `go build` ships), else
// the first arm. "" when there are no arms.
func ChooseBaseline(arms []string, want string) string {
	if len(arms) == 0 {
		return ""
	}
	for _, w := range []string{want, "default"} {
		for _, a := range arms {
			if w != "" && a == w {
				return w
			}
		}
	}
	return arms[0]
}

// CompareToBaseline fills each summary's VsBaseline on spawn → first RPC:
// per budget, every arm's counted samples against the baseline's
// (ChooseBaseline over the arms summarized, in order), a variant's
// against its own arm's (Baselines), paired by run: the arms of a
// campaign run interleaved, one start each per round
// (NewVsBaselineRounds). samples are the
// campaign's raw samples, warm-up and failed ones included (they are left
// out here, as in Summarize). It returns the baseline chosen.
func CompareToBaseline(sums []Summary, samples []Sample, want string, confidence, minEffect float64) string {
	var arms []string
	of := map[string]string{}
	for _, s := range sums {
		if _, ok := of[s.Arm]; !ok {
			arms = append(arms, s.Arm)
		}
		of[s.Arm] = s.Variant.Of
	}
	bl := NewBaselines(arms, want, func(a string) string { return of[a] })
	times := map[[2]string]stats.Rounds{}
	for _, s := range samples {
		if s.Warmup || s.Error != "" || s.FirstRPCMs <= 0 {
			continue
		}
		k := [2]string{s.Arm, s.Budget}
		if times[k] == nil {
			times[k] = stats.Rounds{}
		}
		times[k][s.Run] = s.FirstRPCMs
	}
	for i := range sums {
		s := &sums[i]
		base := bl.For(s.Arm)
		if s.Arm == base {
			s.VsBaseline = VsBaseline{Baseline: base, Verdict: VerdictBaseline}
			continue
		}
		xa, xb := times[[2]string{s.Arm, s.Budget}], times[[2]string{base, s.Budget}]
		if len(xa) == 0 || len(xb) == 0 {
			s.VsBaseline = VsBaseline{}
			continue
		}
		s.VsBaseline = NewVsBaselineRounds(base, xa, xb, stats.LessIsFaster, confidence, minEffect)
	}
	return bl.Base
}

// finite is x, or nil when it is infinite (an unbounded interval; JSON
// has no infinities).
func finite(x float64) *float64 {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return nil
	}
	return &x
}
