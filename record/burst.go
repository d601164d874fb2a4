package record

import (
	"fmt"
	"math"
	"slices"

	"github.com/coldstart-go/coldstart/internal/stats"
)

// The record kinds of `coldstart run --burst`: one BurstInstance per
// instance started, one Burst per burst (N instances of one arm started
// at once in one shared budget), and one BurstSummary per arm, budget and
// N over the counted rounds.
const (
	BurstInstanceKind = "burst_instance"
	BurstKind         = "burst"
	BurstSummaryKind  = "burst_summary"
)

// KneeFactor is how many times N=1's spawn → first RPC a burst's median
// instance must take, with significance, for N to be the knee.
const KneeFactor = 2.0

// BurstInstance is one instance of one burst. Times are milliseconds.
type BurstInstance struct {
	Arm    string `json:"arm"`
	Budget string `json:"budget"`
	N      int    `json:"n"`
	Run    int    `json:"run"`    // 0 is the uncounted warm-up round
	Warmup bool   `json:"warmup"` // excluded from summaries
	// Instance numbers it within its burst, from 1.
	Instance int `json:"instance"`
	PID      int `json:"pid,omitempty"`
	// FirstRPCMs is its own spawn → first ready RPC, from its t0 as a
	// single cold start's (Sample.FirstRPCMs).
	FirstRPCMs float64 `json:"first_rpc_ms"`
	// SpawnMs is when it was spawned and ReadyMs when it first answered
	// ready, both from the burst's first spawn.
	SpawnMs  float64 `json:"spawn_ms"`
	ReadyMs  float64 `json:"ready_ms"`
	Attempts int     `json:"attempts"`
	Phases   []Phase `json:"phases"`
	// StartupCPUMs and PSSBytes are its own figures at its first RPC
	// (nil when the reading failed).
	StartupCPUMs *float64 `json:"startup_cpu_ms"`
	PSSBytes     *int64   `json:"pss_bytes"`
	Containment  string   `json:"containment,omitempty"`
	// Service is the Knative Service this instance was (run --on knative
	// --parallel: one Service per instance, all scaled from zero at once).
	Service string `json:"service,omitempty"`
	// ZeroAtT0 is what showed the Service at zero at t0 on Knative: its
	// revisions' Deployments and pods as the synced informers held them.
	ZeroAtT0 string `json:"zero_at_t0,omitempty"`
	Error    string `json:"error,omitempty"`
}

// Burst is one burst: N instances of one arm started at the same instant
// inside one shared budget (a cgroup carrying the budget's quota, CPU set
// and memory limit, each instance in a child cgroup of its own), each
// probed on its own fresh channel. Times are milliseconds.
type Burst struct {
	Arm    string `json:"arm"`
	Budget string `json:"budget"`
	N      int    `json:"n"`
	Run    int    `json:"run"`
	Warmup bool   `json:"warmup"`
	// P50Ms, P99Ms and MaxMs are the median, 99th percentile (empirical)
	// and maximum of the instances' spawn → first RPC.
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
	MaxMs float64 `json:"max_ms"`
	// P95Ms is the 95th percentile (empirical), what Knative's own
	// scale-from-zero benchmark holds its SLAs on.
	P95Ms float64 `json:"p95_ms,omitempty"`
	// AllReadyMs is from the burst's first spawn to its last instance's
	// first ready RPC: when all N serve. SpawnSpreadMs is from the first
	// spawn to the last.
	AllReadyMs    float64 `json:"all_ready_ms"`
	SpawnSpreadMs float64 `json:"spawn_spread_ms"`
	// GroupCPUMs is the CPU the whole group used until all N served,
	// GroupThrottledMs how long its quota held it back, and
	// GroupMemPeakBytes its memory high-water mark (nil when unread).
	GroupCPUMs        *float64 `json:"group_cpu_ms"`
	GroupThrottledMs  *float64 `json:"group_throttled_ms,omitempty"`
	GroupMemPeakBytes *int64   `json:"group_mem_peak_bytes"`
	// Group names the shared cgroup ("v1:/coldstart/ID").
	Group string `json:"group,omitempty"`
	// ProbeGapMs is the pause after each instance's failed readiness
	// attempt: the single start's gap times N, so that N probers together
	// poll as often as one.
	ProbeGapMs float64 `json:"probe_gap_ms"`
	// Pods, for a burst of requests at one Knative Service (run --on
	// knative --burst-requests), are the pods the autoscaler made for
	// it, each when first seen and when Ready, from t0.
	Pods []PodTime `json:"pods,omitempty" render:"-"`
	// Failed counts the instances that did not become ready; Error is
	// the first one's error.
	Failed int    `json:"failed,omitempty"`
	Error  string `json:"error,omitempty"`
	// Unschedulable, for N Knative Services scaled from zero at once
	// (run --on knative --parallel), is the scheduler's word on the
	// first pod of the burst it could not place ("pod NAME:
	// Unschedulable: 0/1 nodes are available: 1 Insufficient cpu"): the
	// cluster cannot hold N at once, so the burst was stopped there and
	// has no figures. ScheduledAtOnce is then how many of its N
	// Services had their pod placed (nil: not such a burst).
	Unschedulable   string `json:"unschedulable,omitempty"`
	ScheduledAtOnce *int   `json:"scheduled_at_once,omitempty"`
}

// DidNotFit reports whether b was stopped because the cluster could not
// hold its N at once (Unschedulable).
func (b Burst) DidNotFit() bool { return b.Unschedulable != "" }

// BurstSummary is one arm under one budget at one burst size, over the
// counted rounds: the median over rounds of each burst's figures, with
// the intervals of the median burst's p50 and of the time until all N
// serve.
type BurstSummary struct {
	Arm        string  `json:"arm"`
	Budget     string  `json:"budget"`
	N          int     `json:"n"`
	Runs       int     `json:"runs"`
	Confidence float64 `json:"confidence" render:"-"`
	SizeBytes  int64   `json:"size_bytes" render:"bytes"`

	P50Ms         float64  `json:"p50_ms"`
	P50CILowMs    *float64 `json:"p50_ci_low_ms"`
	P50CIHighMs   *float64 `json:"p50_ci_high_ms"`
	P95Ms         float64  `json:"p95_ms,omitempty"`
	P99Ms         float64  `json:"p99_ms"`
	MaxMs         float64  `json:"max_ms"`
	AllReadyMs    float64  `json:"all_ready_ms"`
	AllReadyLowMs *float64 `json:"all_ready_ci_low_ms"`
	AllReadyHiMs  *float64 `json:"all_ready_ci_high_ms"`
	SpawnSpreadMs float64  `json:"spawn_spread_ms"`

	GroupCPUMs        *float64 `json:"group_cpu_ms"`
	GroupMemPeakBytes *int64   `json:"group_mem_peak_bytes" render:"bytes"`

	// VsBaseline sets the time until all N serve against the baseline
	// arm's at the same N and budget, paired by round.
	VsBaseline
	// VsN1 sets each burst's p50 against the same arm's spawn → first RPC
	// at N=1 in the same round.
	VsN1
	// Knee: this is the smallest N of its arm and budget whose p50 is
	// more than KneeFactor × N=1's with significance (the lower bound of
	// VsN1's interval above it).
	Knee bool `json:"knee,omitempty"`
}

// VsN1 is a burst's p50 set against N=1's of the same arm: a VsBaseline
// under names of its own, beside the comparison with the baseline arm.
type VsN1 struct {
	N1Ratio   *float64 `json:"vs_n1_ratio,omitempty"`
	N1CILow   *float64 `json:"vs_n1_ci_low,omitempty"`
	N1CIHigh  *float64 `json:"vs_n1_ci_high,omitempty"`
	N1P       *float64 `json:"vs_n1_p,omitempty"`
	N1Verdict string   `json:"vs_n1_verdict,omitempty"`
	N1Test    string   `json:"vs_n1_test,omitempty" render:"-"`
}

// Vs is v as a VsBaseline whose baseline is BurstN1, to be read as one.
func (v VsN1) Vs() VsBaseline {
	return VsBaseline{Baseline: BurstN1, Ratio: v.N1Ratio, CILow: v.N1CILow, CIHigh: v.N1CIHigh, P: v.N1P, Verdict: v.N1Verdict, Test: v.N1Test}
}

func vsN1(v VsBaseline) VsN1 {
	return VsN1{N1Ratio: v.Ratio, N1CILow: v.CILow, N1CIHigh: v.CIHigh, N1P: v.P, N1Verdict: v.Verdict, N1Test: v.Test}
}

// BurstN1 is VsN1's baseline name.
const BurstN1 = "N=1"

// SummarizeBursts summarizes the counted bursts (failed and warm-up ones
// are left out; so is an arm, budget and N without a counted one) per
// budget, arm and N, budgets and arms in the order first seen, N
// ascending; sizes
// gives each arm's artifact size. It compares each with the baseline arm
// (ChooseBaseline over the arms, want first) and with N=1 of its own arm,
// and marks each arm's knee.
func SummarizeBursts(bursts []Burst, sizes map[string]int64, want string, confidence, minEffect float64) []BurstSummary {
	type key struct {
		arm, budget string
		n           int
	}
	var order []key
	var arms []string
	in := map[key][]Burst{}
	for _, b := range bursts {
		k := key{b.Arm, b.Budget, b.N}
		if _, ok := in[k]; !ok {
			in[k] = nil
			order = append(order, k)
		}
		if !slices.Contains(arms, b.Arm) {
			arms = append(arms, b.Arm)
		}
		if b.Warmup || b.Failed > 0 || b.Error != "" || b.AllReadyMs <= 0 {
			continue
		}
		in[k] = append(in[k], b)
	}
	// By budget, arm and N, each in the order first seen: the warm-up
	// round runs the arms in their campaign order.
	var budgets []string
	for _, k := range order {
		if !slices.Contains(budgets, k.budget) {
			budgets = append(budgets, k.budget)
		}
	}
	slices.SortStableFunc(order, func(a, b key) int {
		if c := slices.Index(budgets, a.budget) - slices.Index(budgets, b.budget); c != 0 {
			return c
		}
		if c := slices.Index(arms, a.arm) - slices.Index(arms, b.arm); c != 0 {
			return c
		}
		return a.n - b.n
	})
	base := ChooseBaseline(arms, want)
	rounds := func(k key, f func(Burst) float64) stats.Rounds {
		r := stats.Rounds{}
		for _, b := range in[k] {
			r[b.Run] = f(b)
		}
		return r
	}
	allReady := func(b Burst) float64 { return b.AllReadyMs }
	p50 := func(b Burst) float64 { return b.P50Ms }
	var out []BurstSummary
	for _, k := range order {
		bs := in[k]
		if len(bs) == 0 {
			continue // warm-up only, or every burst failed
		}
		s := BurstSummary{Arm: k.arm, Budget: k.budget, N: k.n, Runs: len(bs), Confidence: confidence, SizeBytes: sizes[k.arm]}
		var xp, x95, x99, xmax, xall, xspread, xcpu, xmem []float64
		for _, b := range bs {
			xp, x95, x99, xmax = append(xp, b.P50Ms), append(x95, b.P95Ms), append(x99, b.P99Ms), append(xmax, b.MaxMs)
			xall, xspread = append(xall, b.AllReadyMs), append(xspread, b.SpawnSpreadMs)
			if b.GroupCPUMs != nil {
				xcpu = append(xcpu, *b.GroupCPUMs)
			}
			if b.GroupMemPeakBytes != nil {
				xmem = append(xmem, float64(*b.GroupMemPeakBytes))
			}
		}
		if len(bs) > 0 {
			m := stats.MedianCI(xp, confidence)
			s.P50Ms, s.P50CILowMs, s.P50CIHighMs = m.Value, bound(m, m.Low), bound(m, m.High)
			m = stats.MedianCI(xall, confidence)
			s.AllReadyMs, s.AllReadyLowMs, s.AllReadyHiMs = m.Value, bound(m, m.Low), bound(m, m.High)
			s.P95Ms, s.P99Ms, s.MaxMs = median(x95), median(x99), median(xmax)
			s.SpawnSpreadMs = median(xspread)
		}
		if len(xcpu) > 0 {
			v := median(xcpu)
			s.GroupCPUMs = &v
		}
		if len(xmem) > 0 {
			v := int64(median(xmem))
			s.GroupMemPeakBytes = &v
		}
		switch xb := rounds(key{base, k.budget, k.n}, allReady); {
		case k.arm == base:
			s.VsBaseline = VsBaseline{Baseline: base, Verdict: VerdictBaseline}
		case len(bs) > 0 && len(xb) > 0:
			s.VsBaseline = NewVsBaselineRounds(base, rounds(k, allReady), xb, stats.LessIsFaster, confidence, minEffect)
		}
		// N=1's p50 is its one instance's spawn → first RPC.
		switch x1 := rounds(key{k.arm, k.budget, 1}, p50); {
		case k.n == 1:
			s.VsN1 = VsN1{N1Verdict: VerdictBaseline}
		case len(bs) > 0 && len(x1) > 0:
			s.VsN1 = vsN1(NewVsBaselineRounds(BurstN1, rounds(k, p50), x1, stats.LessIsFaster, confidence, minEffect))
		}
		out = append(out, s)
	}
	MarkKnees(out)
	return out
}

// MarkKnees sets Knee on the smallest N of each arm and budget whose p50
// is past KneeFactor × N=1's with significance (BurstSummary.Knee).
func MarkKnees(sums []BurstSummary) {
	best := map[[2]string]int{}
	for i, s := range sums {
		sums[i].Knee = false
		if !PastKnee(s) {
			continue
		}
		k := [2]string{s.Arm, s.Budget}
		if j, ok := best[k]; !ok || s.N < sums[j].N {
			best[k] = i
		}
	}
	for _, i := range best {
		sums[i].Knee = true
	}
}

// PastKnee reports whether s's p50 is more than KneeFactor × N=1's with
// significance: its interval against N=1 lies wholly above KneeFactor.
func PastKnee(s BurstSummary) bool {
	v := s.VsN1.Vs()
	return s.N > 1 && v.Compared() && v.CILow != nil && *v.CILow > KneeFactor
}

// BurstFit is how many instances of one arm fit a memory limit by one
// instance's measured memory: the limit over that memory, rounded down.
// The estimate is cautious: instances share their binary's pages, which
// each one's own peak counts in full.
func BurstFit(limitBytes, oneBytes int64) int {
	if limitBytes <= 0 || oneBytes <= 0 {
		return math.MaxInt
	}
	return int(limitBytes / oneBytes)
}

// FitError says that a burst does not fit a memory limit.
func FitError(arm, budget string, n int, limitBytes, oneBytes int64) error {
	return fmt.Errorf("a burst of %d does not fit %s: one %s instance peaked at %.1f MiB (measured in the warm-up), "+
		"%d × that is %.0f MiB, over mem=%.0f MiB; %d fit",
		n, budget, arm, mibOf(oneBytes), n, mibOf(int64(n)*oneBytes), mibOf(limitBytes), BurstFit(limitBytes, oneBytes))
}

func mibOf(b int64) float64 { return float64(b) / (1 << 20) }

func bound(m stats.Median, v float64) *float64 {
	if !m.Finite() {
		return nil
	}
	return &v
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return stats.MedianCI(xs, stats.DefaultConfidence).Value
}

// SetTimes sets b's p50, p95, p99 and max, and its time until all serve,
// from times, each instance's first RPC from the burst's one t0 (a
// Knative burst, where the last first reply is when all N serve).
func (b *Burst) SetTimes(times []float64) {
	q := Quantiles(times, 0.95, 0.99, 1)
	b.P50Ms, b.P95Ms, b.P99Ms, b.MaxMs = median(times), q[0], q[1], q[2]
	b.AllReadyMs = b.MaxMs
}

// PodsReadyMs are when each of b's pods first showed Ready, ms from t0,
// in the order the pods appeared; pods never seen Ready are left out.
func (b Burst) PodsReadyMs() []float64 {
	var out []float64
	for _, p := range b.Pods {
		if p.ReadyMs != nil {
			out = append(out, *p.ReadyMs)
		}
	}
	return out
}

// PodTime is one pod of a Knative scale-up: when the watch first showed
// it and when it first showed it Ready, ms from t0 (ReadyMs nil: never
// seen Ready).
type PodTime struct {
	Pod       string   `json:"pod"`
	CreatedMs float64  `json:"created_ms"`
	ReadyMs   *float64 `json:"ready_ms"`
}
