package report

import (
	"errors"
	"fmt"
	"sort"

	"gonum.org/v1/gonum/stat"
)

func asErr[T error](err error, target *T) bool { return errors.As(err, target) }

// quantiles are the empirical quantiles of xs, as campaign.Summarize
// computes them.
func quantiles(xs []float64, ps ...float64) []float64 {
	out := make([]float64, len(ps))
	if len(xs) == 0 {
		return out
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	for i, p := range ps {
		out[i] = stat.Quantile(p, stat.Empirical, s, nil)
	}
	return out
}

// summarize reduces counted samples as campaign.Summarize does.
func summarize(ss []Sample) Summary {
	var first, cpu, rss, pss, pcpu []float64
	phases := map[string][]float64{}
	for _, s := range ss {
		if s.Error != "" || s.Warmup {
			continue
		}
		first = append(first, s.FirstRPCMs)
		cpu = append(cpu, s.StartupCPUMs)
		rss = append(rss, float64(s.RSSBytes))
		pss = append(pss, float64(s.PSSBytes))
		pcpu = append(pcpu, s.ProberCPUMs)
		for _, p := range s.Phases {
			phases[p.Name] = append(phases[p.Name], p.Ms)
		}
	}
	sum := Summary{Runs: len(first), PhasesMs: map[string]float64{}}
	if len(first) == 0 {
		return sum
	}
	q := quantiles(first, 0.5, 0.9, 0, 1)
	sum.MedianMs, sum.P90Ms, sum.MinMs, sum.MaxMs = q[0], q[1], q[2], q[3]
	sum.StartupCPUMs = quantiles(cpu, 0.5)[0]
	sum.RSSBytes = int64(quantiles(rss, 0.5)[0])
	sum.PSSBytes = int64(quantiles(pss, 0.5)[0])
	sum.ProberCPUMs = quantiles(pcpu, 0.5)[0]
	for name, xs := range phases {
		sum.PhasesMs[name] = quantiles(xs, 0.5)[0]
	}
	sum.StartedMs = sum.PhasesMs["process_started"]
	sum.AcceptingMs = sum.PhasesMs["accepting"]
	return sum
}

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
	"a density row when its instances' PSS differ by more than %g×; a steady row when any call failed",
	NoisyRangeRatio, NoisyTailRatio, MinRuns, DensitySpreadRatio)

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

// Doubt says why a steady row is doubted ("" = it is not).
func (r SteadyRow) Doubt() string {
	if r.Errors > 0 {
		return fmt.Sprintf("%d errors", r.Errors)
	}
	return ""
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
