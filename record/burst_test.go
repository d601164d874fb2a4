package record

import (
	"strings"
	"testing"
)

// bursts makes counted bursts of arm at n over runs 1..6, whose p50 and
// time until all serve are base times a per-round jitter.
func bursts(arm string, n int, base float64) []Burst {
	jitter := []float64{1, 1.05, 0.97, 1.02, 0.99, 1.04}
	var out []Burst
	for i, j := range jitter {
		v := base * j
		out = append(out, Burst{Arm: arm, Budget: "cores=1", N: n, Run: i + 1, P50Ms: v, P99Ms: v, MaxMs: v, AllReadyMs: v})
	}
	return out
}

func TestSummarizeBurstsKnee(t *testing.T) {
	var bs []Burst
	bs = append(bs, Burst{Arm: "a", Budget: "cores=1", N: 1, Run: 0, Warmup: true, P50Ms: 99, AllReadyMs: 99})
	for _, x := range []struct {
		arm  string
		n    int
		base float64
	}{{"a", 1, 10}, {"b", 1, 10}, {"a", 2, 15}, {"b", 2, 11}, {"a", 4, 30}, {"b", 4, 16}, {"a", 8, 70}, {"b", 8, 40}} {
		bs = append(bs, bursts(x.arm, x.n, x.base)...)
	}
	sums := SummarizeBursts(bs, map[string]int64{"a": 5 << 20}, "a", 0.95, 0.05)
	knee := map[string]int{}
	for _, s := range sums {
		if s.Runs != 6 {
			t.Errorf("%s N=%d: %d runs, want 6 (warm-up left out)", s.Arm, s.N, s.Runs)
		}
		if s.Knee {
			knee[s.Arm] = s.N
		}
		if s.N > 1 && (s.VsN1.Vs().Baseline != BurstN1 || s.N1Ratio == nil) {
			t.Errorf("%s N=%d: vs N=1 %+v", s.Arm, s.N, s.VsN1)
		}
	}
	// a: 1.5× at N=2, 3× at N=4; b: 1.6× at N=4, 4× at N=8.
	if knee["a"] != 4 || knee["b"] != 8 {
		t.Errorf("knees %v, want a at N=4 and b at N=8", knee)
	}
	for _, s := range sums {
		if s.Arm == "b" && s.N == 8 && s.VsBaseline.Verdict != "faster" {
			t.Errorf("b N=8 vs a: %+v, want faster", s.VsBaseline)
		}
	}
}

func TestFitError(t *testing.T) {
	err := FitError("upx", "cores=1,mem=256Mi", 16, 256<<20, 21<<20)
	want := "a burst of 16 does not fit cores=1,mem=256Mi: one upx instance peaked at 21.0 MiB (measured in the warm-up), 16 × that is 336 MiB, over mem=256 MiB; 12 fit"
	if err.Error() != want {
		t.Errorf("FitError:\n got %s\nwant %s", err, want)
	}
	if BurstFit(0, 1) < 1<<30 || !strings.Contains(want, "12 fit") {
		t.Error("BurstFit without a limit: want no bound")
	}
}
