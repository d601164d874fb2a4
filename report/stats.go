package report

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/coldstart-go/coldstart/record"
)

func asErr[T error](err error, target *T) bool { return errors.As(err, target) }

// The rules that mark a row doubted. A doubted row stays in every table,
// marked, and a recommendation resting on it says so.
const (
	// NoisyRangeRatio: a cold-start row whose slowest run took more than
	// this many times its fastest is doubted (the machine was busy, or the
	// arm's start is bimodal).
	NoisyRangeRatio = 3.0
	// NoisyTailRatio: a cold-start row whose p90 is more than this many
	// times its median is doubted.
	NoisyTailRatio = 2.0
	// MinRuns: a cold-start row of fewer counted runs is doubted.
	MinRuns = 5
	// DensitySpreadRatio: a density row whose instances' PSS differ by
	// more than this factor (largest over smallest) is doubted.
	DensitySpreadRatio = 1.5
)

// DoubtRule states the rules above, for the report's readers.
var DoubtRule = fmt.Sprintf("a cold-start row is doubted (†) when max > %g× min, p90 > %g× median, or it has fewer than %d runs; "+
	"a density row when its instances' PSS differ by more than %g×; a steady row when any call failed, "+
	"when its calls/s interval over rounds spans more than %.0f%% of the median, when most of its rounds ran on a busy host, "+
	"or when a closed loop meant to find its capacity (throughput, stream) left the server below %.0f%% of the CPUs it could use "+
	"(its calls/s is then the load's limit, not the server's)",
	NoisyRangeRatio, NoisyTailRatio, MinRuns, DensitySpreadRatio, 100*SteadySpread, 100*record.LoadBoundShare)

// Doubt says why a cold-start row is doubted ("" = it is not).
func (s Summary) Doubt() string {
	switch {
	case s.Runs < MinRuns:
		return fmt.Sprintf("%d runs", s.Runs)
	case s.MinMs > 0 && s.MaxMs > NoisyRangeRatio*s.MinMs:
		return fmt.Sprintf("max %.1f× min", s.MaxMs/s.MinMs)
	case s.MedianMs > 0 && s.P90Ms > NoisyTailRatio*s.MedianMs:
		return fmt.Sprintf("p90 %.1f× median", s.P90Ms/s.MedianMs)
	}
	return ""
}

// SteadySpread: a steady row of medians over rounds whose calls/s
// interval spans more than this fraction of its median (high − low over
// median) is doubted: the rounds disagree.
const SteadySpread = 0.2

// steadyDoubt says why a steady row is doubted ("" = it is not).
func steadyDoubt(r SteadyRow) string {
	var why []string
	if r.Errors > 0 {
		e := fmt.Sprintf("%d errors", r.Errors)
		if len(r.ErrorCodes) > 0 {
			codes := make([]string, 0, len(r.ErrorCodes))
			for c, n := range r.ErrorCodes {
				codes = append(codes, fmt.Sprintf("%s %d", c, n))
			}
			sort.Strings(codes)
			e += " (" + strings.Join(codes, ", ") + ")"
		}
		why = append(why, e)
	}
	if iv := r.CallsPerSCI; iv != nil && iv.Low != nil && iv.High != nil && r.CallsPerS > 0 {
		if spread := (*iv.High - *iv.Low) / r.CallsPerS; spread > SteadySpread {
			why = append(why, fmt.Sprintf("rounds spread %.0f%% of calls/s", 100*spread))
		}
	}
	if r.Rounds > 0 && r.BusyRounds*2 > r.Rounds {
		why = append(why, fmt.Sprintf("%d/%d rounds on a busy host", r.BusyRounds, r.Rounds))
	}
	if t := r.LoadBoundText(); t != "" {
		why = append(why, t)
	}
	return strings.Join(why, "; ")
}

// densityDoubt says why a density row is doubted, from its samples.
func (c *Campaign) densityDoubt(d DensityRow) string {
	var lo, hi int64
	for _, s := range c.DensitySamples {
		if s.Arm != d.Arm || s.Budget != d.Budget {
			continue
		}
		if lo == 0 || s.PSSBytes < lo {
			lo = s.PSSBytes
		}
		if s.PSSBytes > hi {
			hi = s.PSSBytes
		}
	}
	if lo > 0 && float64(hi) > DensitySpreadRatio*float64(lo) {
		return fmt.Sprintf("PSS spread %.1f×", float64(hi)/float64(lo))
	}
	return ""
}
