package stats

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	mstats "github.com/aclements/go-moremath/stats"
)

// The samples of golang.org/x/perf/cmd/benchstat/testdata/crc-{old,new}.txt,
// CRC32/poly=IEEE/size=15/align=0 and align=1 (ns/op), and what benchstat
// prints for them in crcOldNew.stdout:
//
//	CRC32/poly=IEEE/size=15/align=0-8   46.55n ± 9%   44.40n ± 2%   -4.62% (p=0.008 n=10)
//	CRC32/poly=IEEE/size=15/align=1-8   44.35n ± 3%   44.35n ± 1%        ~ (p=0.539 n=10)
var (
	crcOld0 = []float64{44.6, 47.3, 44.6, 46.3, 50.7, 45.8, 46.8, 44.3, 47.7, 50.6}
	crcNew0 = []float64{43.6, 45.4, 43.4, 45.3, 43.9, 46.0, 45.1, 43.8, 43.8, 44.9}
	crcOld1 = []float64{46.8, 44.0, 44.6, 44.1, 44.5, 44.0, 44.2, 45.1, 44.0, 45.8}
	crcNew1 = []float64{43.8, 44.0, 45.0, 44.1, 43.7, 43.7, 44.9, 46.3, 44.9, 44.6}
)

// pctRange is benchstat's "± N%": the interval's larger half-width
// relative to the median.
func pctRange(m Median) string {
	return fmt.Sprintf("%.0f%%", 100*math.Max(m.High/m.Value-1, 1-m.Low/m.Value))
}

func TestMedianCIMatchesBenchstat(t *testing.T) {
	tests := []struct {
		name       string
		xs         []float64
		median     float64
		pct        string
		lowOrdinal int // the interval's bounds as order statistics (1-based)
	}{
		{"crc old align=0", crcOld0, 46.55, "9%", 2},
		{"crc new align=0", crcNew0, 44.40, "2%", 2},
		{"crc old align=1", crcOld1, 44.35, "3%", 2},
		{"crc new align=1", crcNew1, 44.35, "1%", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]float64(nil), tt.xs...)
			m := MedianCI(tt.xs, 0.95)
			if math.Abs(m.Value-tt.median) > 1e-9 || pctRange(m) != tt.pct || m.N != len(tt.xs) {
				t.Errorf("MedianCI(%v) = %+v (± %s), want median %v ± %s", tt.xs, m, pctRange(m), tt.median, tt.pct)
			}
			s := append([]float64(nil), tt.xs...)
			sort.Float64s(s)
			// For n = 10 at 95% the exact interval is [x(2), x(9)], at 97.9%.
			if m.Low != s[tt.lowOrdinal-1] || m.High != s[len(s)-tt.lowOrdinal] || m.Confidence < 0.95 {
				t.Errorf("MedianCI interval = [%v, %v] at %v, want [x(%d), x(%d)] = [%v, %v]", m.Low, m.High, m.Confidence,
					tt.lowOrdinal, len(s)-tt.lowOrdinal+1, s[tt.lowOrdinal-1], s[len(s)-tt.lowOrdinal])
			}
			for i := range in {
				if in[i] != tt.xs[i] {
					t.Fatalf("MedianCI reordered its input")
				}
			}
		})
	}
}

func TestMedianCITooFew(t *testing.T) {
	for n, finite := range map[int]bool{0: false, 1: false, 5: false, 6: true, 20: true} {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = float64(i + 1)
		}
		if got := MedianCI(xs, 0.95).Finite(); got != finite {
			t.Errorf("MedianCI(%d values).Finite() = %v, want %v", n, got, finite)
		}
	}
	if got := MinRunsForInterval(0.95); got != 6 {
		t.Errorf("MinRunsForInterval(0.95) = %d, want 6", got)
	}
}

func TestCompareMatchesBenchstat(t *testing.T) {
	tests := []struct {
		name     string
		a, b     []float64
		p        string
		verdict  Verdict
		signific bool
	}{
		// benchstat compares new against old: a = new, b = old.
		{"align=0: -4.62%", crcNew0, crcOld0, "0.008", Faster, true},
		{"align=1: ~", crcNew1, crcOld1, "0.539", NoDifference, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Compare(tt.a, tt.b, 0.95)
			if got := fmt.Sprintf("%.3f", c.P); got != tt.p || c.Significant() != tt.signific || c.Verdict(LessIsFaster) != tt.verdict {
				t.Errorf("Compare: p=%s significant=%v verdict=%q, want p=%s %v %q", got, c.Significant(), c.Verdict(LessIsFaster), tt.p, tt.signific, tt.verdict)
			}
			if c.NA != 10 || c.NB != 10 {
				t.Errorf("Compare: n = %d+%d, want 10+10", c.NA, c.NB)
			}
			if !(c.RatioLow <= c.Ratio && c.Ratio <= c.RatioHigh) {
				t.Errorf("Compare: ratio %v outside its interval [%v, %v]", c.Ratio, c.RatioLow, c.RatioHigh)
			}
			// A significant difference's interval excludes 1, and an
			// insignificant one's includes it (the interval inverts the test).
			if excl := c.RatioHigh < 1 || c.RatioLow > 1; excl != tt.signific {
				t.Errorf("Compare: ratio interval [%v, %v] excludes 1 = %v, want %v", c.RatioLow, c.RatioHigh, excl, tt.signific)
			}
		})
	}
}

// The interval must be the set of shifts the U test does not reject:
// checked against the test itself (moremath's exact U test), shift by
// shift, on samples without ties.
func TestShiftIntervalInvertsTest(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 20; trial++ {
		n1, n2 := 4+r.IntN(6), 4+r.IntN(6)
		a, b := make([]float64, n1), make([]float64, n2)
		for i := range a {
			a[i] = 10 + r.NormFloat64()
		}
		for i := range b {
			b[i] = 10.5 + r.NormFloat64()
		}
		c := Compare(a, b, 0.95)
		var d []float64
		for _, x := range a {
			for _, y := range b {
				d = append(d, x-y)
			}
		}
		sort.Float64s(d)
		for i := 0; i+1 < len(d); i++ {
			delta := (d[i] + d[i+1]) / 2 // between two pairwise differences: no ties
			shifted := make([]float64, len(a))
			for j := range a {
				shifted[j] = a[j] - delta
			}
			res, err := mstats.MannWhitneyUTest(shifted, b, mstats.LocationDiffers)
			if err != nil {
				t.Fatal(err)
			}
			inside := delta > c.DiffLow && delta < c.DiffHigh
			if accepted := res.P > 0.05; accepted != inside {
				t.Fatalf("n=%d+%d shift %v: U test p=%v, interval [%v, %v] says inside=%v", n1, n2, delta, res.P, c.DiffLow, c.DiffHigh, inside)
			}
		}
	}
}

func TestCompareKnownShift(t *testing.T) {
	// b is a plus exactly 2 (and so b/a ≈ (m+2)/m): the intervals cover it.
	r := rand.New(rand.NewPCG(3, 4))
	a, b := make([]float64, 30), make([]float64, 30)
	for i := range a {
		a[i] = 10 + r.ExpFloat64()
		b[i] = 12 + r.ExpFloat64()
	}
	c := Compare(b, a, 0.95)
	if !(c.DiffLow <= 2 && 2 <= c.DiffHigh) || c.Verdict(LessIsFaster) != Slower {
		t.Errorf("Compare(a+2, a): diff %v [%v, %v], verdict %q; want an interval covering 2, slower", c.Diff, c.DiffLow, c.DiffHigh, c.Verdict(LessIsFaster))
	}
	if got := c.Verdict(MoreIsFaster); got != Faster {
		t.Errorf("Verdict(MoreIsFaster) = %q, want faster", got)
	}
	if got := c.Verdict(Neutral); got != Higher {
		t.Errorf("Verdict(Neutral) = %q, want higher", got)
	}
	if !c.Actionable(0.05) || c.Actionable(0.5) {
		t.Errorf("Actionable: ratio %v, want actionable at 5%% and not at 50%%", c.Ratio)
	}
}

func TestCompareEmptyAndNonPositive(t *testing.T) {
	c := Compare(nil, []float64{1, 2}, 0.95)
	if c.P != 1 || c.Verdict(LessIsFaster) != NoDifference || !math.IsNaN(c.Ratio) {
		t.Errorf("Compare(empty) = %+v, want p=1, no difference, NaN ratio", c)
	}
	c = Compare([]float64{0, 1, 2, 3}, []float64{5, 6, 7, 8}, 0.95)
	if !math.IsNaN(c.Ratio) || math.IsNaN(c.Diff) {
		t.Errorf("Compare(with 0) ratio %v diff %v, want NaN ratio and a difference", c.Ratio, c.Diff)
	}
}

func TestRunsToDetect(t *testing.T) {
	// Logs spread with MAD-σ ≈ 0.1: detecting 5% needs about
	// 2·(1.96+0.84)²·0.01/ln(1.05)²/(3/π) ≈ 69 runs per side.
	r := rand.New(rand.NewPCG(5, 6))
	a, b := make([]float64, 2000), make([]float64, 2000)
	for i := range a {
		a[i] = math.Exp(r.NormFloat64() * 0.1)
		b[i] = math.Exp(r.NormFloat64() * 0.1)
	}
	n5 := RunsToDetect(a, b, 0.05, 0.95, 0.8)
	if n5 < 60 || n5 > 80 {
		t.Errorf("RunsToDetect(σ=0.1, 5%%) = %d, want about 69", n5)
	}
	if n20 := RunsToDetect(a, b, 0.20, 0.95, 0.8); n20 >= n5 || n20 < minRuns(0.05) {
		t.Errorf("RunsToDetect(20%%) = %d, want fewer than %d and at least %d", n20, n5, minRuns(0.05))
	}
	if e := DetectableEffect(a, b, n5, 0.95, 0.8); e < 0.045 || e > 0.05 {
		t.Errorf("DetectableEffect(n=%d) = %v, want just under 0.05 (the inverse of RunsToDetect)", n5, e)
	}
	if got := RunsToDetect(a[:2], b, 0.05, 0.95, 0.8); got != 0 {
		t.Errorf("RunsToDetect(2 values) = %d, want 0", got)
	}
	if got := minRuns(0.05); got != 4 {
		t.Errorf("minRuns(0.05) = %d, want 4 (benchstat: need >= 4 samples)", got)
	}
}

func TestCheckConfidence(t *testing.T) {
	for _, tt := range []struct {
		c  float64
		ok bool
	}{{0.95, true}, {0.5, true}, {0, false}, {1, false}, {95, false}, {-0.1, false}, {math.NaN(), false}} {
		err := CheckConfidence(tt.c)
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrConfidence)) {
			t.Errorf("CheckConfidence(%v) = %v, want ok=%v", tt.c, err, tt.ok)
		}
	}
}
