package record

import (
	"math"
	"testing"

	"github.com/coldstart-go/coldstart/internal/stats"
)

// steadyRounds are n rounds of one sequential step of arm: calls/s near
// calls and server CPU per call near cpu, a little spread (no ties), and
// the row of medians after them.
func steadyRounds(arm string, n int, calls, cpu float64) (rounds []SteadyRow, row SteadyRow) {
	step := SteadyRow{Arm: arm, Budget: "max", Protocol: "grpc", Scenario: "sequential", PayloadBytes: 8, Concurrency: 1, Conns: 1, Depth: 1}
	for i := 0; i < n; i++ {
		w := step
		w.Round, w.CallsPerS = i+1, calls+float64(i)
		c := cpu + float64(i)/100
		w.ServerCPUUsPerCall = &c
		rounds = append(rounds, w)
	}
	row = step
	row.Rounds, row.CallsPerS = n, calls
	return rounds, row
}

// TestCompareSteady: each step row's rounds against the baseline arm's.
// A tenth of the baseline's calls/s over eight rounds each is slower
// beyond doubt, and ten times its CPU per call higher; the same rounds
// are no different; one round each gives a ratio without an interval; a
// row without rounds (a ramp's) and another step's rounds compare
// nothing.
func TestCompareSteady(t *testing.T) {
	var rounds, rows []SteadyRow
	for _, a := range []struct {
		arm        string
		calls, cpu float64
	}{{"static", 10000, 50}, {"default", 10000, 50}, {"upx", 1000, 500}} {
		rs, row := steadyRounds(a.arm, 8, a.calls, a.cpu)
		rounds, rows = append(rounds, rs...), append(rows, row)
	}
	ramp := SteadyRow{Arm: "upx", Budget: "max", Protocol: "grpc", Scenario: "knee", RateReq: 2000}
	rows = append(rows, ramp)
	base := CompareSteady(rows, rounds, "", stats.DefaultConfidence, stats.DefaultMinEffect)
	if base != "default" {
		t.Errorf("CompareSteady chose baseline %q, want default (measured, not first)", base)
	}
	static, def, upx := rows[0], rows[1], rows[2]
	if def.Verdict != VerdictBaseline {
		t.Errorf("default's own row: %+v, want verdict baseline", def.VsBaseline)
	}
	// The rounds pair: eight of eight one way is the signed-rank test's
	// smallest p, 2/2^8 = 0.0078.
	if v := upx.VsBaseline; v.Verdict != string(stats.Slower) || v.Ratio == nil || *v.Ratio < 0.09 || *v.Ratio > 0.11 || v.P == nil || *v.P >= 0.008 || v.CILow == nil || v.CIHigh == nil || v.Test != stats.PairedWilcoxon {
		t.Errorf("upx (a tenth of the calls/s): %+v, want slower, ratio near 0.1 with an interval, p < 0.008, paired", v)
	}
	if c := upx.CPUVsBaseline; c.CPUVerdict != string(stats.Higher) || c.CPURatio == nil || *c.CPURatio < 9 || *c.CPURatio > 11 || c.CPUP == nil || *c.CPUP >= 0.008 {
		t.Errorf("upx (ten times the CPU per call): %+v, want higher, ratio near 10, p < 0.008", c)
	}
	if v := static.VsBaseline; v.Verdict != string(stats.NoDifference) || v.Ratio == nil || *v.Ratio != 1 || v.Baseline != "default" {
		t.Errorf("static (the same rounds): %+v, want no difference detected, ratio 1", v)
	}
	if c := static.CPUVsBaseline; c.CPUVerdict != string(stats.NoDifference) {
		t.Errorf("static CPU (the same rounds): %+v, want no difference detected", c)
	}
	if k := rows[3]; k.Verdict != "" || k.Ratio != nil || k.CPUVerdict != "" {
		t.Errorf("ramp row without rounds: %+v %+v, want nothing compared", k.VsBaseline, k.CPUVsBaseline)
	}

	// One round each: a ratio, no interval, nothing concluded.
	r1, row1 := steadyRounds("upx", 1, 1000, 500)
	b1, _ := steadyRounds("default", 1, 10000, 50)
	CompareSteadyRow(&row1, append(r1, b1...), "default", stats.DefaultConfidence, stats.DefaultMinEffect)
	if v := row1.VsBaseline; v.Ratio == nil || math.Abs(*v.Ratio-0.1) > 1e-9 || v.CILow != nil || v.CIHigh != nil || v.Verdict != string(stats.NoDifference) {
		t.Errorf("one round each: %+v, want ratio 0.1, no interval, no difference detected", v)
	}

	// Another step's rounds are not this one's.
	other, row := steadyRounds("upx", 8, 1000, 500)
	for i := range other {
		other[i].Concurrency = 32
	}
	CompareSteadyRow(&row, append(other, rounds[8:16]...), "default", stats.DefaultConfidence, stats.DefaultMinEffect)
	if row.Ratio != nil {
		t.Errorf("upx c1 against default's c1 with only upx's c32 rounds: %+v, want nothing compared", row.VsBaseline)
	}
}
