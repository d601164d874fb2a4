package cost

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/coldstart-go/coldstart/internal/stats"
	"github.com/coldstart-go/coldstart/record"
	"gonum.org/v1/gonum/stat"
)

// ReplayPolicy reads a knative policy spec for a replay on a real
// cluster, whose scale-to-zero grace period is cluster-wide: a grace=
// the spec gives must be the cluster's (grace), and one it leaves out
// becomes the cluster's. The replay starts every Service at zero, so
// min= above 0 (never at zero) and initial= (which acts only when a
// revision is created) are refused; the policy simulated starts from
// zero as the Services do (initial 0). A grace of 0 is the cluster's not
// read yet: the spec is checked for everything else, its grace kept.
func ReplayPolicy(spec string, grace time.Duration) (Knative, error) {
	p, err := ParsePolicy(spec)
	if err != nil {
		return Knative{}, err
	}
	k, ok := p.(Knative)
	if !ok {
		return Knative{}, fmt.Errorf("policy %s: a real Knative autoscaler runs knative policies only (coldstart cost simulates keepalive and hybrid)", spec)
	}
	_, args, _ := strings.Cut(spec, ":")
	var keys []string
	for _, kv := range strings.Split(args, ",") {
		if key, _, ok := strings.Cut(kv, "="); ok {
			keys = append(keys, key)
		}
	}
	if grace == 0 {
		grace = k.Grace
	}
	if slices.Contains(keys, "grace") && k.Grace != grace {
		return Knative{}, fmt.Errorf("policy %s: grace=%s, but scale-to-zero-grace-period is cluster-wide and the cluster's config-autoscaler says %s: set it there, or leave grace= out", spec, durText(k.Grace), durText(grace))
	}
	if slices.Contains(keys, "initial") {
		return Knative{}, fmt.Errorf("policy %s: initial-scale acts when a revision is created, and a replay starts every Service at zero: leave initial= out", spec)
	}
	if k.Min > 0 {
		return Knative{}, fmt.Errorf("policy %s: min=%d never reaches zero, and a replay starts every Service at zero: use coldstart cost for min-scale", spec, k.Min)
	}
	k.Grace, k.Initial, k.AllowZeroInitial = grace, 0, true
	if err := k.Validate(); err != nil {
		return Knative{}, fmt.Errorf("policy %s: %w", spec, err)
	}
	return k, nil
}

// ReplaySims is how many simulations SimulateReplay averages. One
// simulation is one draw of the start samples and of the autoscaler's
// tick phase, and a single draw moves a count of ~30 cold requests by
// ±3 (the 5th–95th percentiles of 200 draws over the replayed trace of
// results/20261202-180057_replay.jsonl): the real count is set against
// the simulator's expectation, with that spread beside it.
const ReplaySims = 200

// SimulateReplay runs the simulator ReplaySims times over a replay's
// arrivals with the policy the cluster ran (ReplayPolicy's), seeds
// seed, seed+1, …, and fills rp's simulated figures (their means, and
// the 5th and 95th percentiles of the cold count) and its agreement:
// the real cold count against the mean. startMs are the start samples
// a cold request waits for (the replay's own cold requests); serviceMs
// how long a warm request took.
func SimulateReplay(rp *record.Replay, arrivals []float64, duration float64, k Knative, startMs []float64, serviceMs float64, concurrency int, seed uint64) error {
	if len(startMs) == 0 {
		return fmt.Errorf("policy %s: no cold request answered, so no start sample to simulate with", rp.Policy)
	}
	arm := &Arm{Name: rp.Arm, Platform: KnativeP, StartMs: startMs}
	var cold []float64
	var starts, inst float64
	for i := range uint64(ReplaySims) {
		res, err := Simulate(arrivals, arm, k, Options{Duration: duration, ServiceSeconds: serviceMs / 1e3, Concurrency: concurrency, Seed: seed + i})
		if err != nil {
			return err
		}
		cold = append(cold, float64(res.Cold))
		starts += float64(res.Starts)
		inst += res.InstanceSeconds
	}
	mean := stat.Mean(cold, nil)
	n := float64(ReplaySims)
	rp.PolicySpec, rp.SimRuns = k.String(), ReplaySims
	rp.SimColdMean, rp.SimCold = mean, int64(math.Round(mean))
	rp.SimColdP5, rp.SimColdP95 = int64(stats.Quantile(cold, 0.05)), int64(stats.Quantile(cold, 0.95))
	rp.SimStarts, rp.SimInstanceSeconds = int64(math.Round(starts/n)), inst/n
	rp.StartSamples = len(startMs)
	switch {
	case rp.Cold == 0 && mean == 0:
		rp.ColdDiffPct = 0
	case rp.Cold == 0:
		rp.ColdDiffPct = 100 // no real cold start to be a share of
	default:
		rp.ColdDiffPct = (mean - float64(rp.Cold)) / float64(rp.Cold) * 100
	}
	rp.Agrees = math.Abs(rp.ColdDiffPct) <= record.ReplayTolerancePct
	return nil
}
