package steady

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// The verdicts.
const (
	Stable   = "stable"
	Drifting = "drifting"
	Unknown  = "unknown"
)

// fitTrend fits y = a + b·t (t in seconds) and returns b per hour and its
// 95% interval. It needs at least 3 points (one degree of freedom for the
// interval).
func fitTrend(t, y []float64) (perHour, lo, hi float64, ok bool) {
	n := len(t)
	if n < 3 || len(y) != n {
		return 0, 0, 0, false
	}
	alpha, beta := stat.LinearRegression(t, y, nil, false)
	var ssr, sxx float64
	mt := stat.Mean(t, nil)
	for i := range t {
		r := y[i] - (alpha + beta*t[i])
		ssr += r * r
		sxx += (t[i] - mt) * (t[i] - mt)
	}
	if sxx == 0 {
		return 0, 0, 0, false
	}
	se := math.Sqrt(ssr / float64(n-2) / sxx)
	q := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(n - 2)}.Quantile(0.975)
	const h = 3600
	return beta * h, (beta - q*se) * h, (beta + q*se) * h, true
}

// newTrend fits one metric and judges it: drifting when the whole 95%
// interval lies above material. A soak looks for leaks and slowdowns; a
// metric that fell (the machine's load easing, a cache warming) is not
// one, and is called stable with the word "falling".
func newTrend(metric, unit string, t, y []float64, material float64, format func(float64) string) Trend {
	tr := Trend{Metric: metric, Unit: unit, Points: len(t), Material: material, Verdict: Unknown}
	b, lo, hi, ok := fitTrend(t, y)
	if !ok {
		tr.Text = fmt.Sprintf("unknown: %d points, need at least 3", len(t))
		return tr
	}
	tr.PerHour, tr.Lo, tr.Hi = b, lo, hi
	ci := fmt.Sprintf("%s/h (95%% CI %s to %s)", format(b), format(lo), format(hi))
	tr.Verdict = Stable
	text := Stable
	switch {
	case lo > material:
		tr.Verdict, text = Drifting, Drifting
	case hi < -material:
		text = "stable (falling)"
	}
	tr.Text = text + ": " + ci
	return tr
}

// signedBytes formats a byte rate with its sign in binary units.
func signedBytes(v float64) string {
	a, sign := math.Abs(v), "+"
	if v < 0 {
		sign = "-"
	}
	switch {
	case a >= 1<<30:
		return fmt.Sprintf("%s%.2f GiB", sign, a/(1<<30))
	case a >= 1<<20:
		return fmt.Sprintf("%s%.1f MiB", sign, a/(1<<20))
	case a >= 1<<10:
		return fmt.Sprintf("%s%.1f KiB", sign, a/(1<<10))
	}
	return fmt.Sprintf("%s%.0f B", sign, a)
}

func signedUs(v float64) string {
	if math.Abs(v) >= 1000 {
		return fmt.Sprintf("%+.2f ms", v/1000)
	}
	return fmt.Sprintf("%+.1f µs", v)
}
