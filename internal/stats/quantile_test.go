package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestQuantileIsAnOrderStatistic(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}
	if got := Quantile(xs, 0.9); got != 9 {
		t.Errorf("Quantile(1..10, 0.9) = %v, want 9 (the 9th order statistic)", got)
	}
	if got := Quantile(xs, 0.5); got != 5 {
		t.Errorf("Quantile(1..10, 0.5) = %v, want 5", got)
	}
	if xs[0] != 5 {
		t.Error("Quantile sorted its argument")
	}
	if !math.IsNaN(Quantile(nil, 0.9)) {
		t.Error("Quantile(nil) is not NaN")
	}
}

// A tail twice as long is found, with the ratio inside its interval; the
// same sample against itself is no difference at all.
func TestCompareQuantileFindsAShift(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	a, b := make([]float64, 20), make([]float64, 20)
	for i := range a {
		b[i] = 10 + r.Float64()
		a[i] = 2 * (10 + r.Float64())
	}
	c := CompareQuantile(a, b, 0.9, 0.95)
	if c.Test != Bootstrap || !c.Significant() || c.Verdict(LessIsFaster) != Slower {
		t.Errorf("CompareQuantile(2×, 1×) = %+v, want a significant slower", c)
	}
	if !(c.RatioLow <= c.Ratio && c.Ratio <= c.RatioHigh) || c.RatioLow < 1.7 || c.RatioHigh > 2.3 {
		t.Errorf("ratio %v [%v, %v], want about 2 inside its interval", c.Ratio, c.RatioLow, c.RatioHigh)
	}
	if c.P > 3.0/(BootstrapResamples+1) {
		t.Errorf("P = %v for fully separated samples, want the smallest the bootstrap gives", c.P)
	}
	// Seeded: the same values give the same answer.
	if d := CompareQuantile(a, b, 0.9, 0.95); d != c {
		t.Errorf("second call %+v differs from the first %+v", d, c)
	}
	s := CompareQuantile(b, b, 0.9, 0.95)
	if s.Significant() || s.Ratio != 1 {
		t.Errorf("CompareQuantile(b, b) = %+v, want ratio 1, not significant", s)
	}
}

// Under the null (both sides from one distribution) the bootstrap rejects
// at about its level, not far more often: a gate built on it must not
// flag a build against itself.
// It holds at the smallest sample it tests, where the p90 is the second
// largest value.
func TestCompareQuantileLevel(t *testing.T) {
	for _, n := range []int{MinQuantileSize(0.9), 20} {
		r := rand.New(rand.NewPCG(3, uint64(n)))
		const trials = 100
		rejected := 0
		for range trials {
			a, b := make([]float64, n), make([]float64, n)
			for i := range a {
				a[i], b[i] = math.Exp(r.NormFloat64()*0.3), math.Exp(r.NormFloat64()*0.3)
			}
			if CompareQuantile(a, b, 0.9, 0.95).Significant() {
				rejected++
			}
		}
		t.Logf("%d values: rejected %d of %d null comparisons", n, rejected, trials)
		if rate := float64(rejected) / trials; rate > 0.12 {
			t.Errorf("%d values: rejected %d of %d null comparisons (%.0f%%), want about 5%% and at most 12%%", n, rejected, trials, 100*rate)
		}
	}
}

// Paired resampling keeps a round's shared noise shared: a 10% longer tail
// under noise that scales whole rounds (log-normal, σ 0.5) is found paired, not
// unpaired.
func TestCompareQuantilePairedCancelsRoundNoise(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	a, b := Rounds{}, Rounds{}
	for i := 1; i <= 30; i++ {
		round := math.Exp(0.5 * r.NormFloat64()) // shared by both sides of the round
		b[i] = round * 10 * (1 + 0.01*r.Float64())
		a[i] = round * 11 * (1 + 0.01*r.Float64())
	}
	p := CompareQuantileRounds(a, b, 0.9, 0.95)
	if !p.Significant() || p.Ratio < 1.05 || p.Ratio > 1.15 {
		t.Errorf("paired = %+v, want about 1.1, significant", p)
	}
	u := CompareQuantile(a.Values(), b.Values(), 0.9, 0.95)
	if u.Significant() {
		t.Errorf("unpaired = %+v: significant under round noise, want not", u)
	}
}

// Below MinQuantileSize the p90 is a sample's largest value: not tested,
// however far apart the samples.
func TestCompareQuantileTooFew(t *testing.T) {
	if got := MinQuantileSize(0.9); got != 10 {
		t.Errorf("MinQuantileSize(0.9) = %d, want 10 (the p90 of 9 values is their largest)", got)
	}
	a, b := make([]float64, 9), make([]float64, 9)
	for i := range a {
		a[i], b[i] = float64(100+i), float64(1+i)
	}
	if c := CompareQuantile(a, b, 0.9, 0.95); c.P != 1 || !math.IsNaN(c.Ratio) {
		t.Errorf("9 values: %+v, want P 1 and no ratio", c)
	}
	if c := CompareQuantilePaired(a, b, 0.9, 0.95); c.P != 1 {
		t.Errorf("9 pairs: %+v, want P 1", c)
	}
}

// R: p.adjust(c(0.01, 0.04, 0.03, 0.02, 0.05), "holm") is
// 0.05 0.08 0.09 0.09 0.09 in the input's order.
func TestHolmAdjustMatchesR(t *testing.T) {
	got := HolmAdjust([]float64{0.01, 0.04, 0.03, 0.02, 0.05})
	want := []float64{0.05, 0.09, 0.09, 0.08, 0.09}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12 {
			t.Fatalf("HolmAdjust = %v, want %v (R's p.adjust)", got, want)
		}
	}
	if got := HolmAdjust([]float64{0.5, 0.9}); got[0] != 1 || got[1] != 1 {
		t.Errorf("HolmAdjust(0.5, 0.9) = %v, want capped at 1", got)
	}
	if len(HolmAdjust(nil)) != 0 {
		t.Error("HolmAdjust(nil) not empty")
	}
}
