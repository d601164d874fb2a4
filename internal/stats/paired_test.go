package stats

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

// Hollander & Wolfe (1973, p. 29f), the example of R's ?wilcox.test:
// Hamilton depression scale factor of 9 patients at the first (x) and
// second (y) visit after a tranquilizer was given.
var (
	hwX = []float64{1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30}
	hwY = []float64{0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29}
)

// TestSignedRankCountsEnumerated checks the null distribution against
// brute force: every one of the 2^n sign assignments to ranks 1..n.
func TestSignedRankCountsEnumerated(t *testing.T) {
	for n := 1; n <= 14; n++ {
		want := make([]float64, n*(n+1)/2+1)
		for mask := 0; mask < 1<<n; mask++ {
			v := 0
			for r := 1; r <= n; r++ {
				if mask&(1<<(r-1)) != 0 {
					v += r
				}
			}
			want[v]++
		}
		got := signedRankCounts(n)
		for v := range want {
			if got[v] != want[v] {
				t.Fatalf("signedRankCounts(%d)[%d] = %v, want %v (enumerated)", n, v, got[v], want[v])
			}
		}
	}
}

// TestCriticalSignedRankTable checks the critical values against the
// published table of the two-sided 5% test (e.g. Hollander & Wolfe, Table
// A.4; Siegel, Table G): the largest T with P(V ≤ T) ≤ 0.025, which is
// criticalSignedRank − 1.
func TestCriticalSignedRankTable(t *testing.T) {
	table := map[int]int{6: 0, 7: 2, 8: 3, 9: 5, 10: 8, 11: 10, 12: 13, 13: 17, 14: 21, 15: 25,
		16: 29, 17: 34, 18: 40, 19: 46, 20: 52, 25: 89, 30: 137}
	for n, crit := range table {
		if got := criticalSignedRank(n, 0.05); got-1 != crit {
			t.Errorf("criticalSignedRank(%d, 0.05) − 1 = %d, want %d (published)", n, got-1, crit)
		}
	}
	if got := criticalSignedRank(5, 0.05); got != 0 {
		t.Errorf("criticalSignedRank(5, 0.05) = %d, want 0: 5 pairs cannot reach 5%% two-sided", got)
	}
	// Past the exact range the normal approximation takes over; it must
	// join the exact values smoothly (n = 49 exact against 50 normal).
	if k49, k50 := criticalSignedRank(49, 0.05), criticalSignedRank(50, 0.05); k50 < k49 || k50 > k49+30 {
		t.Errorf("criticalSignedRank 49 → 50 = %d → %d, want a small step up", k49, k50)
	}
}

func TestSignedRankDepressionData(t *testing.T) {
	d := make([]float64, len(hwX))
	for i := range d {
		d[i] = hwX[i] - hwY[i]
	}
	// Ranks of |d|: 0.01 (1), 0.08 (2, negative), 0.147 (3, negative),
	// then 4..9 positive: V = 45 − 2 − 3 = 40. P(V ≥ 40) = P(V ≤ 5) =
	// 10/512 (the subsets of 1..9 summing to at most 5: {}, 1, 2, 3, 12,
	// 4, 13, 5, 14, 23), two-sided 20/512 = 0.0390625, as R prints.
	if v, ties := signedRank(d); v != 40 || ties {
		t.Errorf("signedRank = %v (ties %v), want 40 without ties", v, ties)
	}
	if p := SignedRankP(d); math.Abs(p-20.0/512) > 1e-12 {
		t.Errorf("SignedRankP = %v, want 20/512 = 0.0390625", p)
	}
	// The pseudo-median is the 23rd of the 45 Walsh averages,
	// (0.43 + 0.49)/2 = 0.46. At 95%, P(V ≤ 5) = 10/512 ≤ 0.025 <
	// P(V ≤ 6) = 14/512, so the bounds are the 6th smallest and 6th
	// largest Walsh averages: 0.01 (d itself) and (0.952 + 0.62)/2 =
	// 0.786, at 1 − 20/512 = 96.1% (R: qsignrank(0.025, 9) = 6).
	est, lo, hi := signedRankShift(d, 0.95)
	if math.Abs(est-0.46) > 1e-9 || math.Abs(lo-0.01) > 1e-9 || math.Abs(hi-0.786) > 1e-9 {
		t.Errorf("signedRankShift = %v [%v, %v], want 0.46 [0.01, 0.786]", est, lo, hi)
	}
	c := ComparePaired(hwX, hwY, 0.95)
	if math.Abs(c.Diff-0.46) > 1e-9 || math.Abs(c.DiffLow-0.01) > 1e-9 || math.Abs(c.DiffHigh-0.786) > 1e-9 ||
		c.Test != PairedWilcoxon || c.NA != 9 || c.NB != 9 {
		t.Errorf("ComparePaired diff = %v [%v, %v], test %q, n %d+%d; want 0.46 [0.01, 0.786], %s, 9+9",
			c.Diff, c.DiffLow, c.DiffHigh, c.Test, c.NA, c.NB, PairedWilcoxon)
	}
	// The test itself is on the log ratios, whose ranks differ: log(0.50/
	// 0.647) = −0.258 ranks 4th of |log ratio| and log(3.06/3.14) = −0.026
	// 2nd, so V = 45 − 6 = 39, P(V ≥ 39) = P(V ≤ 6) = 14/512, two-sided
	// 28/512 = 0.0547: not significant at 5%, and the ratio's interval
	// holds 1.
	if math.Abs(c.P-28.0/512) > 1e-12 || c.Significant() || !(c.RatioLow < 1 && c.RatioHigh > 1) {
		t.Errorf("ComparePaired = p %v ratio %v [%v, %v], want p = 28/512, an interval holding 1", c.P, c.Ratio, c.RatioLow, c.RatioHigh)
	}
}

func TestSignedRankNormalWithTiesAndZeros(t *testing.T) {
	// The zero is dropped: n = 5, |d| ranks 1.5 1.5 3.5 3.5 5, V = 1.5 +
	// 3.5 + 3.5 + 5 = 13.5 against a mean of 7.5; variance 5·6·11/24 −
	// (2·(2³−2))/48 = 13.5; continuity-corrected z = (6 − 0.5)/√13.5, as
	// R's wilcox.test(c(1, -1, 2, 2, 3, 0)) (V = 13.5, p = 0.1343).
	d := []float64{1, -1, 2, 2, 3, 0}
	z := 5.5 / math.Sqrt(13.5)
	want := math.Erfc(z / math.Sqrt2)
	if got := SignedRankP(d); math.Abs(got-want) > 1e-12 || math.Abs(got-0.1343) > 5e-4 {
		t.Errorf("SignedRankP(%v) = %v, want %v", d, got, want)
	}
	if got := SignedRankP([]float64{0, 0}); got != 1 {
		t.Errorf("SignedRankP(zeros) = %v, want 1", got)
	}
	// Without ties, 60 pairs (normal) and the exact 49 agree on a
	// symmetric sample's p within the approximation's error.
	r := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{49, 60} {
		d := make([]float64, n)
		for i := range d {
			d[i] = r.NormFloat64() + 0.3
		}
		if p := SignedRankP(d); !(p > 0 && p < 1) {
			t.Errorf("SignedRankP(%d normal values) = %v, want within (0, 1)", n, p)
		}
	}
}

// TestSignedRankIntervalInvertsTest: a shift inside the interval is one
// the test would not reject, one outside is rejected.
func TestSignedRankIntervalInvertsTest(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, n := range []int{6, 9, 15, 30} {
		d := make([]float64, n)
		for i := range d {
			d[i] = r.NormFloat64()
		}
		_, lo, hi := signedRankShift(d, 0.95)
		for _, delta := range []float64{lo - 0.01, lo + 0.01, hi - 0.01, hi + 0.01} {
			s := make([]float64, n)
			for i := range d {
				s[i] = d[i] - delta
			}
			inside := lo <= delta && delta <= hi
			if accepted := SignedRankP(s) >= 0.05; accepted != inside {
				t.Errorf("n=%d shift %v: p=%v but interval [%v, %v] says inside=%v", n, delta, SignedRankP(s), lo, hi, inside)
			}
		}
	}
}

// roundNoise simulates one campaign of n rounds: each round's times are
// scaled by a factor both arms share (a burst of steal hits the whole
// round, σ = roundSigma in logs), on top of each start's own noise
// (σ = 0.02); a is effect slower than b.
func roundNoise(r *rand.Rand, n int, effect, roundSigma float64) (a, b []float64) {
	for range n {
		f := math.Exp(r.NormFloat64() * roundSigma)
		a = append(a, 10*(1+effect)*f*math.Exp(r.NormFloat64()*0.02))
		b = append(b, 10*f*math.Exp(r.NormFloat64()*0.02))
	}
	return a, b
}

// TestPairedSeesThroughRoundNoise: noise shared by a round hides a 5%
// effect from Mann–Whitney, which sees only the pooled spread, but not
// from the paired test; with no effect, the paired test keeps its level.
func TestPairedSeesThroughRoundNoise(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	const campaigns = 200
	var mw, paired, aaPaired, aaMW int
	for range campaigns {
		a, b := roundNoise(r, 20, 0.05, 0.25)
		if Compare(a, b, 0.95).Significant() {
			mw++
		}
		if c := ComparePaired(a, b, 0.95); c.Significant() && c.Ratio > 1 {
			paired++
		}
		a, b = roundNoise(r, 20, 0, 0.25)
		if ComparePaired(a, b, 0.95).Significant() {
			aaPaired++
		}
		if Compare(a, b, 0.95).Significant() {
			aaMW++
		}
	}
	if mw > campaigns*3/10 {
		t.Errorf("Mann–Whitney detected the 5%% effect in %d/%d campaigns, want at most 30%%: round noise should hide it", mw, campaigns)
	}
	if paired < campaigns*95/100 {
		t.Errorf("paired test detected the 5%% effect in %d/%d campaigns, want at least 95%%", paired, campaigns)
	}
	if aaPaired > campaigns/10 || aaMW > campaigns/10 {
		t.Errorf("with no effect: paired %d/%d, Mann–Whitney %d/%d significant, want at most 10%% each (5%% level)", aaPaired, campaigns, aaMW, campaigns)
	}
	a, b := roundNoise(r, 2000, 0, 0.25)
	unp, pai := DetectableEffect(a, b, 20, 0.95, 0.8), DetectableEffectPaired(a, b, 20, 0.95, 0.8)
	// σ of the log ratio is 0.02·√2 ≈ 0.028: (1.96+0.84)·0.028/√(20·3/π)
	// ≈ 1.8%; unpaired, the round noise counts: ≈ 23%.
	if !(pai > 0.015 && pai < 0.022) || !(unp > 0.15) {
		t.Errorf("detectable at 20 runs: paired %v, unpaired %v; want about 0.018 and above 0.15", pai, unp)
	}
	if n := RunsToDetectPaired(a, b, pai, 0.95, 0.8); n < 19 || n > 21 {
		t.Errorf("RunsToDetectPaired(%v) = %d, want 20 (the inverse of DetectableEffectPaired)", pai, n)
	}
	if n := RunsToDetectPaired(a, b, 0.5, 0.95, 0.8); n != 6 {
		t.Errorf("RunsToDetectPaired(50%%) = %d, want the floor of 6 pairs", n)
	}
	if n := RunsToDetectPaired(a[:2], b[:2], 0.05, 0.95, 0.8); n != 0 {
		t.Errorf("RunsToDetectPaired(2 pairs) = %d, want 0", n)
	}
}

func TestPairAndCompareRounds(t *testing.T) {
	full := func(n int, v float64) Rounds {
		r := Rounds{}
		for i := 1; i <= n; i++ {
			r[i] = v * (1 + 0.1*float64(i%5))
		}
		return r
	}
	tests := []struct {
		name     string
		a, b     Rounds
		wantTest string
		wantN    int
	}{
		{"same rounds", full(10, 11), full(10, 10), PairedWilcoxon, 10},
		{"one failed round dropped", func() Rounds { r := full(10, 11); delete(r, 4); return r }(), full(10, 10), PairedWilcoxon, 9},
		{"fewer than half pair", Rounds{1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 6: 6}, Rounds{5: 1, 6: 2, 7: 3, 8: 4, 9: 5, 10: 6}, MannWhitney, 6},
		{"none pair", Rounds{1: 1, 2: 2}, Rounds{3: 1, 4: 2}, MannWhitney, 2},
		{"too few rounds for the paired test", full(5, 11), full(5, 10), MannWhitney, 5},
		{"just enough", full(6, 11), full(6, 10), PairedWilcoxon, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := CompareRounds(tt.a, tt.b, 0.95)
			if c.Test != tt.wantTest || c.NA != tt.wantN {
				t.Errorf("CompareRounds = %s over %d+%d, want %s over %d", c.Test, c.NA, c.NB, tt.wantTest, tt.wantN)
			}
		})
	}
	xa, xb, ok := Pair(Rounds{3: 30, 1: 10, 2: 20}, Rounds{2: 2, 3: 3, 1: 1})
	if !ok || !sort.Float64sAreSorted(xa) || xa[0] != 10 || xb[0] != 1 || xb[2] != 3 {
		t.Errorf("Pair = %v, %v, %v; want round order [10 20 30], [1 2 3], true", xa, xb, ok)
	}
}
