package explain

import (
	"github.com/coldstart-go/coldstart/internal/stats"
)

// The statistics explain states come from internal/stats, as the rest of
// coldstart's: the median with its distribution-free confidence interval,
// and arms compared with the Mann-Whitney U-test and a Hodges-Lehmann
// difference with its interval.

// Confidence is the confidence level of every interval explain states; a
// difference is significant below p = 1 − Confidence.
const Confidence = stats.DefaultConfidence

// Alpha is the significance level below which two arms differ.
const Alpha = 1 - Confidence

// Estimate is a median with its confidence interval (±Inf when the runs
// are too few to bound it).
type Estimate struct {
	Center float64
	Lo, Hi float64
}

func median(xs []float64) Estimate {
	if len(xs) == 0 {
		return Estimate{}
	}
	m := stats.MedianCI(xs, Confidence)
	return Estimate{Center: m.Value, Lo: m.Low, Hi: m.High}
}

// compare tests arm against base.
func compare(arm, base []float64) stats.Comparison {
	return stats.Compare(arm, base, Confidence)
}
