package record

import (
	"testing"

	"github.com/coldstart-go/coldstart/internal/stats"
)

// TestCompareToBaselineVariants: a variant is set against its own arm,
// paired by run, and never taken for the baseline; plain arms are set
// against the baseline as before. Here static.fast is 20% faster than
// static in every round and static 10% slower than default: the variant
// is faster (against static), static slower (against default).
func TestCompareToBaselineVariants(t *testing.T) {
	factors := []float64{1.0, 1.5, 0.6, 1.2, 0.8, 1.4, 0.7, 1.1, 0.9, 1.3}
	var samples []Sample
	for run, f := range factors {
		w := run == 0
		samples = append(samples,
			Sample{Arm: "static.fast", Budget: "max", Run: run, Warmup: w, FirstRPCMs: 8.8 * f},
			Sample{Arm: "default", Budget: "max", Run: run, Warmup: w, FirstRPCMs: 10 * f * (1 + 0.001*float64(run))},
			Sample{Arm: "static", Budget: "max", Run: run, Warmup: w, FirstRPCMs: 11 * f * (1 + 0.002*float64(run))})
	}
	v := Variant{Of: "static", Env: []string{"GOGC=50"}}
	// The variant first: order does not make it the baseline.
	sums := []Summary{{Arm: "static.fast", Budget: "max", Variant: v}, {Arm: "default", Budget: "max"}, {Arm: "static", Budget: "max"}}
	if base := CompareToBaseline(sums, samples, "", stats.DefaultConfidence, stats.DefaultMinEffect); base != "default" {
		t.Errorf("baseline %q, want default", base)
	}
	if got := sums[0].VsBaseline; got.Baseline != "static" || got.Verdict != string(stats.Faster) || got.Test != stats.PairedWilcoxon {
		t.Errorf("static.fast: %+v, want faster than static, paired", got)
	}
	if got := sums[1].VsBaseline; got.Verdict != VerdictBaseline {
		t.Errorf("default: %+v, want the baseline", got)
	}
	if got := sums[2].VsBaseline; got.Baseline != "default" || got.Verdict != string(stats.Slower) {
		t.Errorf("static: %+v, want slower than default", got)
	}
	// --baseline static: the variant's own arm is the baseline too.
	CompareToBaseline(sums, samples, "static", stats.DefaultConfidence, stats.DefaultMinEffect)
	if got := sums[0].VsBaseline; got.Baseline != "static" || got.Verdict != string(stats.Faster) {
		t.Errorf("static.fast with --baseline static: %+v, want faster than static", got)
	}
}

func TestVariantText(t *testing.T) {
	v := Variant{Of: "static", Env: []string{"GOGC=50"}, Args: []string{"--num-stream-workers=2"}}
	if got, want := v.Text(), "of static: env.GOGC=50, arg.--num-stream-workers=2"; got != want {
		t.Errorf("Text() = %q, want %q", got, want)
	}
	if (Variant{}).Text() != "" || (Variant{}).IsVariant() {
		t.Error("the zero Variant is a variant")
	}
}
