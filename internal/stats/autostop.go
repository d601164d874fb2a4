package stats

import (
	"fmt"
	"math"
)

// MinAutoRounds is the fewest counted rounds a run that stops on
// precision takes (coldstart run --runs auto, steady run --rounds auto):
// the smallest sample whose median has a 95% interval
// (MinRunsForInterval(0.95)). Below it a median has no interval to be
// narrow, and a cap below it could never stop on precision.
const MinAutoRounds = 6

// DefaultPrecision is the precision --runs auto and --rounds auto run
// to unless told: every median known within ±3%.
const DefaultPrecision = 0.03

// CheckPrecision refuses a precision outside (0, 1): the farthest a
// median's interval may reach from the median on either side, as a
// fraction of it.
func CheckPrecision(p float64) error {
	if !(p > 0 && p < 1) {
		return fmt.Errorf("%v, want a fraction of the median between 0 and 1, exclusive (e.g. 0.03)", p)
	}
	return nil
}

// HalfWidth is the half-width of xs's median interval at the confidence
// level relative to the median, max(m−lo, hi−m)/m (0.03 = ±3%); +Inf when
// the median has no interval yet (too few values) or is not positive.
func HalfWidth(xs []float64, confidence float64) float64 {
	m := MedianCI(xs, confidence)
	if !m.Finite() || !(m.Value > 0) {
		return math.Inf(1)
	}
	return math.Max(m.Value-m.Low, m.High-m.Value) / m.Value
}

// Widest is the widest HalfWidth over series and the index of the first
// series that has it: +Inf when one of them has no interval yet; 0 and
// -1 when there are none.
func Widest(series [][]float64, confidence float64) (float64, int) {
	worst, at := 0.0, -1
	for i, xs := range series {
		if hw := HalfWidth(xs, confidence); at < 0 || hw > worst {
			worst, at = hw, i
		}
	}
	return worst, at
}

// Stopping is what AutoStop.After decides.
type Stopping int

const (
	GoOn    Stopping = iota // neither precise enough nor at the cap
	Precise                 // every median within the precision
	AtCap                   // the cap came first
)

// AutoStop is the rule that leaves a number of rounds open: counted
// rounds go on until every median watched has an interval reaching no
// farther than Precision of it on either side, after at least
// MinAutoRounds rounds, or Max rounds were counted. It stops on
// precision, never on a test's p-value: stopping when a difference
// looks significant inflates false positives.
type AutoStop struct {
	Precision float64
	Max       int
	// Min raises the fewest rounds before a precise stop above
	// MinAutoRounds, for a test that needs more pairs than a median's
	// interval does (0 = MinAutoRounds).
	Min int
}

// CheckMaxRounds refuses a cap on counted rounds below MinAutoRounds.
func CheckMaxRounds(n int) error {
	if n < MinAutoRounds {
		return fmt.Errorf("%d, want at least %d (the fewest whose median has a 95%% interval)", n, MinAutoRounds)
	}
	return nil
}

// After decides after rounds counted rounds whose widest median interval
// is widest (Widest): Precise once there are at least max(Min,
// MinAutoRounds) and widest ≤ Precision, else AtCap at Max rounds, else
// GoOn.
func (a AutoStop) After(rounds int, widest float64) Stopping {
	switch {
	case rounds >= max(a.Min, MinAutoRounds) && widest <= a.Precision:
		return Precise
	case rounds >= a.Max:
		return AtCap
	}
	return GoOn
}
