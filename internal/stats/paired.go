package stats

import (
	"math"
	"sort"

	"github.com/aclements/go-moremath/stats"
)

// The tests a Comparison names in Test.
const (
	// MannWhitney is the two-sample rank-sum test of Compare: the samples
	// are taken as unpaired.
	MannWhitney = "mann-whitney"
	// PairedWilcoxon is the signed-rank test of ComparePaired, on the
	// log ratios of values measured in the same round.
	PairedWilcoxon = "paired-wilcoxon"
)

// ComparePaired tests a against b on pairs: a[i] and b[i] were measured
// in the same round (the arms of a campaign run interleaved), so noise that
// hits a whole round, such as a burst of hypervisor steal, scales both and
// cancels in their ratio. It is the Wilcoxon signed-rank test on the log
// ratios log(a[i]/b[i]) (on the differences a[i]−b[i] when a value is not
// positive), two-sided. Ratio is exp of the Hodges–Lehmann estimate of
// the log ratios (the median of their Walsh averages) with the interval
// that inverts the signed-rank test; Diff likewise on the differences.
// NA and NB are the number of pairs; a and b must be the same length (the
// longer one is cut to the shorter). As in R's wilcox.test(paired = TRUE):
// zero differences are dropped from the test, ties get mid-ranks, and the
// null distribution is exact for fewer than 50 pairs without ties or
// zeros, else normal with the tie correction and a continuity correction.
func ComparePaired(a, b []float64, confidence float64) Comparison {
	n := min(len(a), len(b))
	c := Comparison{NA: n, NB: n, Confidence: confidence, P: 1, Test: PairedWilcoxon,
		Ratio: math.NaN(), RatioLow: math.NaN(), RatioHigh: math.NaN(),
		Diff: math.NaN(), DiffLow: math.NaN(), DiffHigh: math.NaN()}
	if n == 0 {
		return c
	}
	d := make([]float64, n)
	for i := range d {
		d[i] = a[i] - b[i]
	}
	c.Diff, c.DiffLow, c.DiffHigh = signedRankShift(d, confidence)
	c.P = SignedRankP(d)
	if l, ok := logRatios(a[:n], b[:n]); ok {
		m, lo, hi := signedRankShift(l, confidence)
		c.Ratio, c.RatioLow, c.RatioHigh = math.Exp(m), math.Exp(lo), math.Exp(hi)
		c.P = SignedRankP(l)
	}
	return c
}

// logRatios are log(a[i]/b[i]); false when a value is not positive.
func logRatios(a, b []float64) ([]float64, bool) {
	l := make([]float64, len(a))
	for i := range a {
		if !(a[i] > 0 && b[i] > 0) {
			return nil, false
		}
		l[i] = math.Log(a[i] / b[i])
	}
	return l, true
}

// SignedRankP is the two-sided p-value of the Wilcoxon signed-rank test
// that d is symmetric about 0 (1 when every value is 0 or d is empty). See
// ComparePaired for zeros, ties and when it is exact.
func SignedRankP(d []float64) float64 {
	var nz []float64
	for _, x := range d {
		if x != 0 {
			nz = append(nz, x)
		}
	}
	n := len(nz)
	if n == 0 {
		return 1
	}
	v, ties := signedRank(nz)
	zeros := len(nz) < len(d)
	if n < 50 && !ties && !zeros {
		dist := signedRankCounts(n)
		total := math.Ldexp(1, n)
		// v is an integer without ties; P(V ≤ v) or P(V ≥ v), whichever
		// tail v is in, doubled.
		var p float64
		if v > float64(n*(n+1))/4 {
			p = 1 - cumCount(dist, int(v)-1)/total
		} else {
			p = cumCount(dist, int(v)) / total
		}
		return min(2*p, 1)
	}
	// The normal approximation, with the variance less the ties' share
	// and a half-rank continuity correction, as R's wilcox.test.
	nf := float64(n)
	z := v - nf*(nf+1)/4
	ranks := midRanks(nz)
	sort.Float64s(ranks)
	tieSum := 0.0
	for i := 0; i < len(ranks); {
		j := i
		for j < len(ranks) && ranks[j] == ranks[i] {
			j++
		}
		t := float64(j - i)
		tieSum += t*t*t - t
		i = j
	}
	sigma := math.Sqrt(nf*(nf+1)*(2*nf+1)/24 - tieSum/48)
	if sigma == 0 {
		return 1
	}
	corr := 0.5
	if z < 0 {
		corr = -0.5
	} else if z == 0 {
		corr = 0
	}
	z = (z - corr) / sigma
	nd := stats.NormalDist{Mu: 0, Sigma: 1}
	return min(2*math.Min(nd.CDF(z), 1-nd.CDF(z)), 1)
}

// signedRank returns V, the sum of the ranks of |d| over the positive
// values of d (none of which is 0), and whether |d| has ties.
func signedRank(d []float64) (v float64, ties bool) {
	r := midRanks(d)
	for i, x := range d {
		if x > 0 {
			v += r[i]
		}
	}
	abs := make([]float64, len(d))
	for i, x := range d {
		abs[i] = math.Abs(x)
	}
	sort.Float64s(abs)
	for i := 1; i < len(abs); i++ {
		if abs[i] == abs[i-1] {
			ties = true
		}
	}
	return v, ties
}

// midRanks are the ranks of |d| (1-based), equal values getting the mean
// of their ranks.
func midRanks(d []float64) []float64 {
	idx := make([]int, len(d))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(i, j int) bool { return math.Abs(d[idx[i]]) < math.Abs(d[idx[j]]) })
	r := make([]float64, len(d))
	for i := 0; i < len(idx); {
		j := i
		for j < len(idx) && math.Abs(d[idx[j]]) == math.Abs(d[idx[i]]) {
			j++
		}
		mid := float64(i+j+1) / 2 // ranks i+1..j
		for k := i; k < j; k++ {
			r[idx[k]] = mid
		}
		i = j
	}
	return r
}

// signedRankCounts[v] is how many of the 2^n sign assignments to ranks
// 1..n give V = v: the number of subsets of {1..n} summing to v. Counts
// are exact in float64 up to n = 52 (2^n < 2^53).
func signedRankCounts(n int) []float64 {
	m := n * (n + 1) / 2
	c := make([]float64, m+1)
	c[0] = 1
	for k := 1; k <= n; k++ {
		for v := k * (k + 1) / 2; v >= k; v-- {
			c[v] += c[v-k]
		}
	}
	return c
}

// cumCount is the number of assignments with V ≤ v.
func cumCount(c []float64, v int) float64 {
	s := 0.0
	for i := 0; i <= v && i < len(c); i++ {
		s += c[i]
	}
	return s
}

// criticalSignedRank returns the largest k with P(V ≤ k−1) ≤ α/2 for n
// pairs without ties (0: no interval at this level): the k-th smallest and
// k-th largest Walsh averages bound the shift, as criticalU for two
// samples. This is R's qsignrank(α/2, n) except where P(V ≤ k) is exactly
// α/2. Exact below 50 pairs, then the normal approximation.
func criticalSignedRank(n int, alpha float64) int {
	m := n * (n + 1) / 2
	if n >= 50 {
		z := stats.NormalDist{Mu: 0, Sigma: 1}.InvCDF(1 - alpha/2)
		nf := float64(n)
		k := math.Floor(float64(m)/2 - z*math.Sqrt(nf*(nf+1)*(2*nf+1)/24))
		return max(int(k), 0)
	}
	c := signedRankCounts(n)
	total := math.Ldexp(1, n)
	k, cum := 0, 0.0
	for k <= m {
		cum += c[k] // P(V ≤ k) · 2^n
		if cum/total > alpha/2 {
			break
		}
		k++
	}
	return k
}

// signedRankShift is the Hodges–Lehmann estimate of d's center of
// symmetry (the median of the Walsh averages (d_i+d_j)/2, i ≤ j) with the
// interval that inverts the signed-rank test (Tukey; Hollander & Wolfe
// §3.3). ±Inf bounds when there are too few pairs for one at the level.
func signedRankShift(d []float64, confidence float64) (est, lo, hi float64) {
	n := len(d)
	w := make([]float64, 0, n*(n+1)/2)
	for i := range d {
		for j := i; j < n; j++ {
			w = append(w, (d[i]+d[j])/2)
		}
	}
	sort.Float64s(w)
	est = quantileSorted(w)
	k := criticalSignedRank(n, 1-confidence)
	if k < 1 {
		return est, math.Inf(-1), math.Inf(1)
	}
	return est, w[k-1], w[len(w)-k]
}

// Rounds are one side's values keyed by the round they were measured in
// (a cold start's run, a steady window's round): the arms of one campaign
// run interleaved, round by round, so equal keys are paired values.
type Rounds map[int]float64

// Values are the values in round order.
func (r Rounds) Values() []float64 {
	keys := make([]int, 0, len(r))
	for k := range r {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	out := make([]float64, len(keys))
	for i, k := range keys {
		out[i] = r[k]
	}
	return out
}

// Pair returns the values of the rounds both a and b have, in round
// order, and whether there are enough of them to compare paired: at least
// one, and at least half of each side's rounds. A round with one side
// missing (a failed probe) is dropped from the pairs; when most are
// missing, the sides were not measured together and a paired test would
// rest on a few leftovers.
func Pair(a, b Rounds) (xa, xb []float64, ok bool) {
	keys := make([]int, 0, len(a))
	for k := range a {
		if _, in := b[k]; in {
			keys = append(keys, k)
		}
	}
	sort.Ints(keys)
	for _, k := range keys {
		xa, xb = append(xa, a[k]), append(xb, b[k])
	}
	n := len(keys)
	return xa, xb, n > 0 && 2*n >= len(a) && 2*n >= len(b)
}

// CompareRounds compares a with b paired (ComparePaired) when they pair
// (Pair) in enough rounds for the signed-rank test to reach the level at
// all (6 at 95%: 2/2^n < 5%), else unpaired (Compare) on all their
// values; Test says which. Below that, Mann–Whitney on both sides' values
// can still reach it (4+4 at 95%), so a 5-round steady step keeps a
// verdict.
func CompareRounds(a, b Rounds, confidence float64) Comparison {
	if xa, xb, ok := pairFor(a, b, confidence); ok {
		return ComparePaired(xa, xb, confidence)
	}
	return Compare(a.Values(), b.Values(), confidence)
}

// RunsToDetectRounds is RunsToDetectPaired for sides CompareRounds would
// compare paired, else RunsToDetect.
func RunsToDetectRounds(a, b Rounds, effect, confidence, power float64) int {
	if xa, xb, ok := pairFor(a, b, confidence); ok {
		return RunsToDetectPaired(xa, xb, effect, confidence, power)
	}
	return RunsToDetect(a.Values(), b.Values(), effect, confidence, power)
}

// pairFor is Pair, with enough pairs for the paired test to reach the
// confidence level.
func pairFor(a, b Rounds, confidence float64) (xa, xb []float64, ok bool) {
	xa, xb, ok = Pair(a, b)
	return xa, xb, ok && len(xa) >= MinPairs(1-confidence)
}

// RunsToDetectPaired estimates how many rounds (pairs) a paired
// comparison of values like a and b (a[i] and b[i] from one round) needs to
// detect a relative effect with the given power at the confidence level:
// as RunsToDetect, but from the spread of the per-round log ratios (their
// normal-consistent median absolute deviation), with the one-sample normal
// approximation of the signed-rank test and its efficiency of 3/π relative
// to the paired t test. Noise shared by a round cancels in its ratio, so
// this is smaller than RunsToDetect when such noise dominates. Never below
// the smallest n at which the test can reach the level at all; 0 with
// fewer than 3 pairs or a value that is not positive.
func RunsToDetectPaired(a, b []float64, effect, confidence, power float64) int {
	sigma := pairedSpread(a, b)
	if effect <= 0 || math.IsNaN(sigma) {
		return 0
	}
	nd := stats.NormalDist{Mu: 0, Sigma: 1}
	z := nd.InvCDF(1-(1-confidence)/2) + nd.InvCDF(power)
	delta := math.Log(1 + effect)
	n := int(math.Ceil(z * z * sigma * sigma / (delta * delta) / (3 / math.Pi)))
	return max(n, MinPairs(1-confidence))
}

// DetectableEffectPaired is the inverse of RunsToDetectPaired: the
// smallest relative effect n rounds detect with the given power at the
// confidence level, at the spread of a and b's per-round log ratios (NaN
// as RunsToDetectPaired returns 0).
func DetectableEffectPaired(a, b []float64, n int, confidence, power float64) float64 {
	sigma := pairedSpread(a, b)
	if n <= 0 || math.IsNaN(sigma) {
		return math.NaN()
	}
	nd := stats.NormalDist{Mu: 0, Sigma: 1}
	z := nd.InvCDF(1-(1-confidence)/2) + nd.InvCDF(power)
	return math.Exp(z*sigma/math.Sqrt(float64(n)*3/math.Pi)) - 1
}

// pairedSpread is the normal-consistent MAD of log(a[i]/b[i]) (NaN with
// fewer than 3 pairs or a value that is not positive).
func pairedSpread(a, b []float64) float64 {
	n := min(len(a), len(b))
	if n < 3 {
		return math.NaN()
	}
	l, ok := logRatios(a[:n], b[:n])
	if !ok {
		return math.NaN()
	}
	return mad(l)
}

// MinPairs is the smallest number of pairs at which the two-sided
// signed-rank test of all-positive differences reaches p < alpha
// (2/2^n: 6 at 5%); with Holm over k tests, MinPairs(alpha/k).
func MinPairs(alpha float64) int {
	for n := 1; n < 50; n++ {
		if 2/math.Ldexp(1, n) < alpha {
			return n
		}
	}
	return 50
}
