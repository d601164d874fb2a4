package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	"gonum.org/v1/gonum/stat"
)

// Bootstrap is the test of CompareQuantile: the percentile bootstrap of
// the ratio of two quantiles.
const Bootstrap = "bootstrap"

// BootstrapResamples is how many resamples CompareQuantile draws: enough
// that the smallest p-value it can give, 2/(B+1) ≈ 0.0005, stays below
// the level of a test adjusted for a few dozen comparisons (Holm).
const BootstrapResamples = 4000

// Quantile is the empirical q-quantile of xs, as gonum's stat.Empirical
// computes it (and record.Summary's p90): an order statistic, never an
// interpolation. NaN for an empty xs; xs is not modified.
func Quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	return quantileInPlace(s, q)
}

// quantileInPlace is Quantile, sorting xs in place (a resample's scratch).
func quantileInPlace(xs []float64, q float64) float64 {
	slices.Sort(xs)
	return stat.Quantile(q, stat.Empirical, xs, nil)
}

// MinQuantileSize is the smallest sample whose empirical q-quantile is
// neither its largest nor its smallest value (10 for the p90): below it
// the quantile is the sample's extreme, whose bootstrap distribution is
// degenerate (most resamples hold the same maximum), and the bootstrap
// test rejects far more often than its level: 16% of null comparisons at
// 5% for the p90 of 8 values, against 4% for 10.
func MinQuantileSize(q float64) int {
	for n := 2; n < 1000; n++ {
		if k := int(math.Ceil(q * float64(n))); k > 1 && k < n {
			return n
		}
	}
	return 1000
}

// CompareQuantile compares the q-quantile of a (q = 0.9: the p90) with
// that of b, unpaired. Rank tests such as Mann–Whitney speak of the whole
// distribution's location, not of its tail, so the quantile is compared
// by the percentile bootstrap: each side resampled with replacement
// BootstrapResamples times, the ratio of the resampled quantiles taken
// each time. Ratio is a's quantile over b's, with the interval between
// the bootstrap ratios' (1−confidence)/2 and (1+confidence)/2 quantiles;
// P is the two-sided bootstrap p-value, the smallest level at which that
// interval excludes 1, (2·min(#ratios ≤ 1, #ratios ≥ 1)+2)/(B+1) at most
// 1. Diff and its interval are the same on a − b (for values that are
// not all positive). The resampling is seeded with constants, so the same
// values give the same answer. A side smaller than MinQuantileSize(q)
// is not tested: P is 1 and there is no ratio.
func CompareQuantile(a, b []float64, q, confidence float64) Comparison {
	c := newQuantileComparison(len(a), len(b), confidence)
	if need := MinQuantileSize(q); len(a) < need || len(b) < need {
		return c
	}
	r := newBootstrapRand()
	ra, rb := make([]float64, len(a)), make([]float64, len(b))
	return bootstrap(c, Quantile(a, q), Quantile(b, q), func() (float64, float64) {
		resample(r, ra, a)
		resample(r, rb, b)
		return quantileInPlace(ra, q), quantileInPlace(rb, q)
	})
}

// CompareQuantilePaired is CompareQuantile for pairs: a[i] and b[i] were
// measured in the same round, so the rounds are resampled whole (a round
// drawn brings both its values), and noise a round shares stays shared in
// every resample. a and b must be the same length (the longer is cut).
func CompareQuantilePaired(a, b []float64, q, confidence float64) Comparison {
	n := min(len(a), len(b))
	c := newQuantileComparison(n, n, confidence)
	if n < MinQuantileSize(q) {
		return c
	}
	a, b = a[:n], b[:n]
	r := newBootstrapRand()
	ra, rb := make([]float64, n), make([]float64, n)
	return bootstrap(c, Quantile(a, q), Quantile(b, q), func() (float64, float64) {
		for i := range ra {
			k := r.IntN(n)
			ra[i], rb[i] = a[k], b[k]
		}
		return quantileInPlace(ra, q), quantileInPlace(rb, q)
	})
}

// CompareQuantileRounds compares paired (CompareQuantilePaired) when a and
// b pair as CompareRounds would pair them, else unpaired on all values.
func CompareQuantileRounds(a, b Rounds, q, confidence float64) Comparison {
	if xa, xb, ok := pairFor(a, b, confidence); ok {
		return CompareQuantilePaired(xa, xb, q, confidence)
	}
	return CompareQuantile(a.Values(), b.Values(), q, confidence)
}

func newQuantileComparison(na, nb int, confidence float64) Comparison {
	return Comparison{NA: na, NB: nb, Confidence: confidence, P: 1, Test: Bootstrap,
		Ratio: math.NaN(), RatioLow: math.NaN(), RatioHigh: math.NaN(),
		Diff: math.NaN(), DiffLow: math.NaN(), DiffHigh: math.NaN()}
}

// newBootstrapRand is the resampling's source, the same every call.
func newBootstrapRand() *rand.Rand { return rand.New(rand.NewPCG(0x636f6c64, 0x73746172)) }

func resample(r *rand.Rand, dst, src []float64) {
	for i := range dst {
		dst[i] = src[r.IntN(len(src))]
	}
}

// bootstrap fills c from the quantiles qa, qb of the samples and draw,
// which returns one resample's pair of quantiles.
func bootstrap(c Comparison, qa, qb float64, draw func() (float64, float64)) Comparison {
	B := BootstrapResamples
	diffs, logs := make([]float64, B), make([]float64, 0, B)
	positive := qa > 0 && qb > 0
	for i := range diffs {
		x, y := draw()
		diffs[i] = x - y
		if positive && x > 0 && y > 0 {
			logs = append(logs, math.Log(x/y))
		} else {
			positive = false
		}
	}
	alpha := 1 - c.Confidence
	c.Diff = qa - qb
	c.DiffLow, c.DiffHigh = percentiles(diffs, alpha)
	c.P = bootstrapP(diffs)
	if positive {
		c.Ratio = qa / qb
		lo, hi := percentiles(logs, alpha)
		c.RatioLow, c.RatioHigh = math.Exp(lo), math.Exp(hi)
		c.P = bootstrapP(logs)
	}
	return c
}

// percentiles are the alpha/2 and 1−alpha/2 empirical quantiles of xs
// (sorted in place).
func percentiles(xs []float64, alpha float64) (lo, hi float64) {
	slices.Sort(xs)
	return stat.Quantile(alpha/2, stat.Empirical, xs, nil), stat.Quantile(1-alpha/2, stat.Empirical, xs, nil)
}

// bootstrapP is the two-sided p-value of "centred on 0" from bootstrap
// replicates d: twice the smaller share on either side of 0, with the +1
// correction that keeps it a valid p-value (Davison & Hinkley 1997, §4.4).
func bootstrapP(d []float64) float64 {
	le, ge := 0, 0
	for _, x := range d {
		if x <= 0 {
			le++
		}
		if x >= 0 {
			ge++
		}
	}
	return min(1, 2*float64(min(le, ge)+1)/float64(len(d)+1))
}

// HolmAdjust returns Holm's step-down adjustment of the p-values ps (in
// their order): a family of tests judged by the adjusted values at level
// α rejects a true null in any of them with probability at most α,
// whatever their dependence (Holm 1979), as R's p.adjust(method =
// "holm"). A gate that watches many figures at once would otherwise
// flag one of them in most comparisons of a build with itself.
func HolmAdjust(ps []float64) []float64 {
	n := len(ps)
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(i, j int) bool { return ps[idx[i]] < ps[idx[j]] })
	out := make([]float64, n)
	run := 0.0
	for rank, i := range idx {
		run = math.Max(run, math.Min(1, float64(n-rank)*ps[i]))
		out[i] = run
	}
	return out
}
