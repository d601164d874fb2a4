// Package stats gives coldstart's figures their uncertainty: the median of
// a sample with its exact distribution-free confidence interval, and the
// comparison of two samples (Mann–Whitney U test, ratio with an interval,
// a verdict), as benchstat computes them. The median interval and the test
// are golang.org/x/perf/benchmath's (what benchstat uses); the ratio's
// interval inverts the same test (Hodges–Lehmann, as R's
// wilcox.test(conf.int = TRUE)), with the U distribution from
// github.com/aclements/go-moremath, which benchmath itself uses. Values
// measured in the same round (arms interleaved) compare paired instead
// (ComparePaired, CompareRounds): the Wilcoxon signed-rank test on the
// per-round log ratios, with its Hodges–Lehmann interval, written here
// (neither library has it) and tested against enumeration and published
// tables. A tail quantile (the p90), which rank tests do not speak of,
// compares by the percentile bootstrap (CompareQuantile); HolmAdjust
// keeps a family of such tests at one level.
package stats

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/aclements/go-moremath/stats"
	"golang.org/x/perf/benchmath"
)

// DefaultConfidence is the confidence level of intervals, and 1 − the
// significance level of tests, unless the user asks for another.
const DefaultConfidence = 0.95

// DefaultMinEffect is the smallest relative difference a recommendation
// acts on: a significant difference smaller than this is reported but not
// recommended on.
const DefaultMinEffect = 0.05

// ErrConfidence is returned for a confidence level outside (0,1).
var ErrConfidence = errors.New("confidence level must be between 0 and 1, exclusive (e.g. 0.95)")

// CheckConfidence returns ErrConfidence, wrapped with the value, unless
// 0 < c < 1.
func CheckConfidence(c float64) error {
	if !(c > 0 && c < 1) {
		return fmt.Errorf("%v: %w", c, ErrConfidence)
	}
	return nil
}

// Median is a sample's median with its confidence interval.
type Median struct {
	// Value is the sample median (NaN for an empty sample).
	Value float64
	// Low and High bound the interval; ±Inf when the sample is too small
	// for one at the level asked (fewer than 6 values at 95%).
	Low, High float64
	// N is the sample size.
	N int
	// Confidence is the interval's real level, at least the level asked
	// (order statistics give discrete levels).
	Confidence float64
}

// Finite reports whether the interval has both bounds.
func (m Median) Finite() bool {
	return m.N > 0 && !math.IsInf(m.Low, 0) && !math.IsInf(m.High, 0) && !math.IsNaN(m.Low) && !math.IsNaN(m.High)
}

// MedianCI returns the median of xs with its exact distribution-free
// interval (order statistics of the binomial), as benchstat prints it. xs
// is not modified.
func MedianCI(xs []float64, confidence float64) Median {
	if len(xs) == 0 {
		return Median{Value: math.NaN(), Low: math.Inf(-1), High: math.Inf(1), Confidence: confidence}
	}
	s := benchmath.NewSample(append([]float64(nil), xs...), &benchmath.DefaultThresholds)
	sum := benchmath.AssumeNothing.Summary(s, confidence)
	return Median{Value: sum.Center, Low: sum.Lo, High: sum.Hi, N: len(xs), Confidence: sum.Confidence}
}

// Verdict is what a comparison concludes about a against b.
type Verdict string

// The verdicts. Lower and Higher are for figures where neither direction
// is better by itself (memory, CPU); Faster and Slower for times and
// rates.
const (
	Faster       Verdict = "faster"
	Slower       Verdict = "slower"
	Lower        Verdict = "lower"
	Higher       Verdict = "higher"
	NoDifference Verdict = "no difference detected"
)

// Sense says how a metric reads: whether smaller values are a shorter time
// (latency), larger ones a higher rate (calls/s), or neither (memory, CPU).
type Sense int

// The senses.
const (
	LessIsFaster Sense = iota // times: a smaller value is faster
	MoreIsFaster              // rates: a larger value is faster
	Neutral                   // amounts: lower or higher
)

// Comparison compares sample a with sample b.
type Comparison struct {
	// Ratio is a over b: the Hodges–Lehmann estimate (the median of all
	// pairwise ratios a_i/b_j), which for a change of scale is the ratio
	// of the medians. RatioLow and RatioHigh bound it at Confidence. NaN
	// when a value is not positive.
	Ratio, RatioLow, RatioHigh float64
	// Diff is a minus b (Hodges–Lehmann: the median of all pairwise
	// differences), with its interval: for a shift, e.g. a server that
	// sleeps 2 ms more, the interval covers the shift.
	Diff, DiffLow, DiffHigh float64
	// P is the two-sided p-value of Test: Mann–Whitney's U test that a
	// and b come from one distribution, or the signed-rank test that the
	// paired log ratios are centred on 0 (1 when the test could not be
	// made).
	P float64
	// Test names the test and how the intervals were made: MannWhitney
	// (Compare: all pairwise ratios a_i/b_j) or PairedWilcoxon
	// (ComparePaired: the per-round ratios a_i/b_i and their Walsh
	// averages).
	Test string
	// NA and NB are the sample sizes.
	NA, NB int
	// Confidence is the level asked; the test's level is 1 − Confidence.
	Confidence float64
}

// Significant reports whether the test rejects "no difference" at the
// comparison's level.
func (c Comparison) Significant() bool { return c.P < 1-c.Confidence }

// Verdict reads the comparison for a metric of the given sense: no
// difference detected unless the test is significant.
func (c Comparison) Verdict(s Sense) Verdict {
	if !c.Significant() || math.IsNaN(c.Ratio) && math.IsNaN(c.Diff) {
		return NoDifference
	}
	up := c.Ratio > 1 || (math.IsNaN(c.Ratio) && c.Diff > 0)
	switch s {
	case LessIsFaster:
		if up {
			return Slower
		}
		return Faster
	case MoreIsFaster:
		if up {
			return Faster
		}
		return Slower
	}
	if up {
		return Higher
	}
	return Lower
}

// Effect is the relative size of the difference, |ratio − 1| (0 when the
// ratio is undefined).
func (c Comparison) Effect() float64 {
	if math.IsNaN(c.Ratio) {
		return 0
	}
	return math.Abs(c.Ratio - 1)
}

// Actionable reports whether the difference is significant and at least
// minEffect (relative, e.g. 0.05) in size: what a recommendation may rest on.
func (c Comparison) Actionable(minEffect float64) bool {
	return c.Significant() && c.Effect() >= minEffect
}

// Compare tests a against b and estimates a/b and a−b with intervals at
// the confidence level (e.g. 0.95).
func Compare(a, b []float64, confidence float64) Comparison {
	c := Comparison{NA: len(a), NB: len(b), Confidence: confidence, P: 1, Test: MannWhitney,
		Ratio: math.NaN(), RatioLow: math.NaN(), RatioHigh: math.NaN(),
		Diff: math.NaN(), DiffLow: math.NaN(), DiffHigh: math.NaN()}
	if len(a) == 0 || len(b) == 0 {
		return c
	}
	th := benchmath.Thresholds{CompareAlpha: 1 - confidence}
	sa := benchmath.NewSample(append([]float64(nil), a...), &th)
	sb := benchmath.NewSample(append([]float64(nil), b...), &th)
	c.P = benchmath.AssumeNothing.Compare(sa, sb).P
	c.Diff, c.DiffLow, c.DiffHigh = shift(sa.Values, sb.Values, confidence, func(x float64) float64 { return x })
	if sa.Values[0] > 0 && sb.Values[0] > 0 {
		l, lo, hi := shift(sa.Values, sb.Values, confidence, math.Log)
		c.Ratio, c.RatioLow, c.RatioHigh = math.Exp(l), math.Exp(lo), math.Exp(hi)
	}
	return c
}

// shift is the Hodges–Lehmann estimate of the shift between f(a) and f(b)
// with the distribution-free interval that inverts the Mann–Whitney test:
// the k-th smallest and k-th largest of the pairwise differences, where k
// is the U distribution's lower critical value plus one (Bauer 1972).
func shift(a, b []float64, confidence float64, f func(float64) float64) (est, lo, hi float64) {
	d := make([]float64, 0, len(a)*len(b))
	for _, x := range a {
		for _, y := range b {
			d = append(d, f(x)-f(y))
		}
	}
	sort.Float64s(d)
	est = quantileSorted(d)
	k := criticalU(len(a), len(b), 1-confidence) // CDF(k-1) ≤ α/2
	if k < 1 {
		return est, math.Inf(-1), math.Inf(1)
	}
	return est, d[k-1], d[len(d)-k]
}

// criticalU returns the largest k with P(U ≤ k−1) ≤ α/2 for samples of
// sizes n1 and n2 without ties (0: no interval at this level). Exact up to
// n1·n2 = 2500, then the normal approximation.
func criticalU(n1, n2 int, alpha float64) int {
	mn := n1 * n2
	if mn > 2500 {
		z := stats.NormalDist{Mu: 0, Sigma: 1}.InvCDF(1 - alpha/2)
		k := math.Floor(float64(mn)/2 - z*math.Sqrt(float64(mn*(n1+n2+1))/12))
		return max(int(k), 0)
	}
	d := stats.UDist{N1: n1, N2: n2}
	// CDF is increasing in U: binary search for the last k−1 with
	// CDF(k−1) ≤ α/2.
	lo, hi := 0, mn/2+1 // answer k in [0, hi)
	for lo+1 < hi {
		mid := (lo + hi) / 2
		if d.CDF(float64(mid-1)) <= alpha/2 {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

func quantileSorted(s []float64) float64 {
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// RunsToDetect estimates how many runs per side a comparison of samples
// like a and b needs to detect a relative effect (e.g. 0.05 for 5%) with
// the given power (e.g. 0.8) at the confidence level. It uses the spread
// the samples show (robust: the median absolute deviation of the
// logarithms, pooled), the normal approximation of the Mann–Whitney test
// and its efficiency of 3/π relative to the t test (Noether 1987). The
// result is never below the smallest n at which the test can reach the
// level at all. 0 when the samples are too small to estimate a spread.
func RunsToDetect(a, b []float64, effect, confidence, power float64) int {
	if effect <= 0 || len(a) < 3 || len(b) < 3 {
		return 0
	}
	sa, sb := logMAD(a), logMAD(b)
	if math.IsNaN(sa) || math.IsNaN(sb) {
		return 0
	}
	sigma := math.Sqrt((sa*sa + sb*sb) / 2)
	nd := stats.NormalDist{Mu: 0, Sigma: 1}
	z := nd.InvCDF(1-(1-confidence)/2) + nd.InvCDF(power)
	delta := math.Log(1 + effect)
	n := int(math.Ceil(2 * z * z * sigma * sigma / (delta * delta) / (3 / math.Pi)))
	return max(n, minRuns(1-confidence))
}

// logMAD is the normal-consistent median absolute deviation of log(xs).
func logMAD(xs []float64) float64 {
	l := make([]float64, 0, len(xs))
	for _, x := range xs {
		if x <= 0 {
			return math.NaN()
		}
		l = append(l, math.Log(x))
	}
	return mad(l)
}

// mad is the normal-consistent median absolute deviation of xs (sorted
// in place).
func mad(xs []float64) float64 {
	sort.Float64s(xs)
	m := quantileSorted(xs)
	dev := make([]float64, len(xs))
	for i, v := range xs {
		dev[i] = math.Abs(v - m)
	}
	sort.Float64s(dev)
	return 1.4826 * quantileSorted(dev)
}

// minRuns is the smallest n per side at which the two-sided U test of two
// fully separated samples reaches p < alpha.
func minRuns(alpha float64) int {
	for n := 1; n < 50; n++ {
		if 2*(stats.UDist{N1: n, N2: n}).CDF(0) < alpha {
			return n
		}
	}
	return 50
}

// MinRunsForInterval is the smallest sample with a finite median interval
// at the confidence level.
func MinRunsForInterval(confidence float64) int {
	for n := 1; n <= 200; n++ {
		if MedianCI(make([]float64, n), confidence).Finite() {
			return n
		}
	}
	return 200
}

// DetectableEffect is the inverse of RunsToDetect: the smallest relative
// effect that n runs per side detect with the given power at the
// confidence level, at the spread samples like a and b show (NaN when the
// samples are too small to estimate a spread).
func DetectableEffect(a, b []float64, n int, confidence, power float64) float64 {
	if n <= 0 || len(a) < 3 || len(b) < 3 {
		return math.NaN()
	}
	sa, sb := logMAD(a), logMAD(b)
	if math.IsNaN(sa) || math.IsNaN(sb) {
		return math.NaN()
	}
	sigma := math.Sqrt((sa*sa + sb*sb) / 2)
	nd := stats.NormalDist{Mu: 0, Sigma: 1}
	z := nd.InvCDF(1-(1-confidence)/2) + nd.InvCDF(power)
	return math.Exp(z*sigma*math.Sqrt(2/(float64(n)*3/math.Pi))) - 1
}
