package record

import (
	"testing"

	"github.com/coldstart-go/coldstart/internal/stats"
)

// TestNewVsBaselineInterval: with too few values to bound the ratio (2
// against 2 at 95%) there is no interval at all, rather than one from 0;
// with enough (8 against 8) there is one, around the ratio.
func TestNewVsBaselineInterval(t *testing.T) {
	for _, tt := range []struct {
		name   string
		a, b   []float64
		bounds bool
	}{
		{"2 against 2", []float64{20, 21}, []float64{10, 11}, false},
		{"1 against 1", []float64{20}, []float64{10}, false},
		{"8 against 8", []float64{20, 21, 22, 23, 24, 25, 26, 27}, []float64{10, 11, 12, 13, 14, 15, 16, 17}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := NewVsBaseline("b", tt.a, tt.b, stats.LessIsFaster, stats.DefaultConfidence, stats.DefaultMinEffect)
			if v.Ratio == nil {
				t.Fatalf("NewVsBaseline(%v, %v): no ratio", tt.a, tt.b)
			}
			got := v.CILow != nil && v.CIHigh != nil
			if got != tt.bounds || (v.CILow == nil) != (v.CIHigh == nil) {
				t.Errorf("NewVsBaseline(%v, %v) interval [%v, %v], want bounded %v", tt.a, tt.b, v.CILow, v.CIHigh, tt.bounds)
			}
			if got && (*v.CILow > *v.Ratio || *v.CIHigh < *v.Ratio || *v.CILow <= 0) {
				t.Errorf("interval [%v, %v] does not hold ratio %v", *v.CILow, *v.CIHigh, *v.Ratio)
			}
		})
	}
}

// TestCompareToBaselinePairsRuns: arms of one campaign pair by run. Each
// round here is scaled by its own factor (0.6× to 1.5×), shared by both
// arms, and upx is 5% slower in every round: unpaired, the rounds' spread
// hides it; paired by run it is slower, with a failed probe's round and
// the warm-up left out.
func TestCompareToBaselinePairsRuns(t *testing.T) {
	factors := []float64{1.0, 1.5, 0.6, 1.2, 0.8, 1.4, 0.7, 1.1, 0.9, 1.3}
	var samples []Sample
	for run, f := range factors {
		samples = append(samples,
			Sample{Arm: "default", Budget: "max", Run: run, Warmup: run == 0, FirstRPCMs: 10 * f * (1 + 0.001*float64(run))},
			Sample{Arm: "upx", Budget: "max", Run: run, Warmup: run == 0, FirstRPCMs: 10.5 * f})
	}
	samples[2*3+1].Error, samples[2*3+1].FirstRPCMs = "deadline exceeded", 0 // upx's run 3
	sums := []Summary{{Arm: "default", Budget: "max"}, {Arm: "upx", Budget: "max"}}
	CompareToBaseline(sums, samples, "", stats.DefaultConfidence, stats.DefaultMinEffect)
	v := sums[1].VsBaseline
	if v.Test != stats.PairedWilcoxon || v.Verdict != string(stats.Slower) || v.Ratio == nil || *v.Ratio < 1.03 || *v.Ratio > 1.06 {
		t.Errorf("upx against default: %+v, want paired-wilcoxon, slower, ratio about 1.05", v)
	}
	var xa, xb []float64
	for _, s := range samples {
		if !s.Warmup && s.Error == "" {
			if s.Arm == "upx" {
				xa = append(xa, s.FirstRPCMs)
			} else {
				xb = append(xb, s.FirstRPCMs)
			}
		}
	}
	if u := NewVsBaseline("default", xa, xb, stats.LessIsFaster, stats.DefaultConfidence, stats.DefaultMinEffect); u.Verdict != string(stats.NoDifference) || u.Test != stats.MannWhitney {
		t.Errorf("the same samples unpaired: %+v, want mann-whitney, no difference detected", u)
	}
}
