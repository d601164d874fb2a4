package record

import (
	"testing"

	"github.com/coldstart-go/coldstart/internal/stats"
)

// densitySamples are n instances of arm, each with PSS pss+i bytes (a
// little spread, no ties).
func densitySamples(arm string, n int, pss int64) []DensitySample {
	var ss []DensitySample
	for i := 0; i < n; i++ {
		ss = append(ss, DensitySample{Arm: arm, Budget: "max", Instance: i + 1, PSSBytes: pss + int64(i)*1000})
	}
	return ss
}

// TestCompareDensity: PSS per instance against the baseline's, read as
// lower or higher. An arm with ten times the baseline's PSS over eight
// instances each is higher beyond doubt; one with the same instances is
// no different; the baseline's own row says so.
func TestCompareDensity(t *testing.T) {
	rows := []DensityRow{{Arm: "static", Budget: "max"}, {Arm: "default", Budget: "max"}, {Arm: "upx", Budget: "max"}, {Arm: "pgo", Budget: "max"}}
	var ss []DensitySample
	ss = append(ss, densitySamples("static", 8, 4<<20)...)
	ss = append(ss, densitySamples("default", 8, 4<<20)...)
	ss = append(ss, densitySamples("upx", 8, 40<<20)...)
	// pgo has no samples: nothing to compare.
	base := CompareDensity(rows, ss, "", stats.DefaultConfidence, stats.DefaultMinEffect)
	if base != "default" {
		t.Errorf("CompareDensity chose baseline %q, want default (measured, not first)", base)
	}
	def, static, upx, pgo := rows[1].VsBaseline, rows[0].VsBaseline, rows[2].VsBaseline, rows[3].VsBaseline
	if def.Verdict != VerdictBaseline || def.Ratio != nil {
		t.Errorf("default's own row: %+v, want verdict baseline and no ratio", def)
	}
	if upx.Verdict != string(stats.Higher) || upx.Ratio == nil || *upx.Ratio < 9 || *upx.Ratio > 11 {
		t.Errorf("upx (10× the PSS): %+v, want higher, ratio near 10", upx)
	}
	if upx.P == nil || *upx.P >= 0.001 {
		t.Errorf("upx: p = %v, want < 0.001 (8 against 8, fully apart)", upx.P)
	}
	if upx.CILow == nil || upx.CIHigh == nil || *upx.CILow > *upx.Ratio || *upx.CIHigh < *upx.Ratio {
		t.Errorf("upx: interval [%v, %v] does not hold its ratio %v", upx.CILow, upx.CIHigh, upx.Ratio)
	}
	if static.Verdict != string(stats.NoDifference) || static.Ratio == nil || *static.Ratio != 1 || static.Baseline != "default" {
		t.Errorf("static (same instances): %+v, want no difference detected, ratio 1, baseline default", static)
	}
	if pgo.Verdict != "" || pgo.Ratio != nil {
		t.Errorf("pgo (no instances read): %+v, want nothing compared", pgo)
	}

	// --baseline picks another arm: now default is the one set against it.
	CompareDensity(rows, ss, "upx", stats.DefaultConfidence, stats.DefaultMinEffect)
	if v := rows[1].VsBaseline; v.Verdict != string(stats.Lower) || v.Baseline != "upx" {
		t.Errorf("default against upx: %+v, want lower", v)
	}
}
