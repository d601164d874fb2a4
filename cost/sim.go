// Package cost figures what scale-to-zero costs a Go gRPC server under a
// traffic model and a scaling policy: a discrete-event simulator that
// routes each request to an instance (starting, ready or idle, then
// removed), with the arm's measured cold starts as the start times, and
// counts the requests that waited for a start, how long they waited, the
// instance-hours, the idle memory and the CPU spent starting.
//
// Policies are Knative's scale-to-zero with its autoscaler's timing
// (stable window, grace period, pod retention, scale-down delay, min and
// initial scale, target concurrency), a fixed keep-alive, and the hybrid
// idle-time-histogram policy of "Serverless in the Wild" (Shahrad et al.,
// USENIX ATC 2020). Traffic is a trace (timestamps, or the Azure
// Functions 2019 per-minute layout) or synthetic arrivals. Everything is
// deterministic given a seed.
package cost

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
)

// Arm is one build's measured costs: the start samples a cold request
// waits for, the CPU each start took, and one idle instance's memory.
type Arm struct {
	Name string
	// Platform is "local" or "knative"; Budget the budget the samples
	// were measured under.
	Platform, Budget string
	// StartMs are measured starts (spawn or scale-from-zero → first RPC),
	// milliseconds; StartCPUMs the CPU each took, paired by index (the
	// same length).
	StartMs, StartCPUMs []float64
	// IdleBytes is one idle instance's memory (PSS); IdleSource says where
	// it was read.
	IdleBytes  int64
	IdleSource string
}

// Options are the simulation's knobs shared by every policy.
type Options struct {
	// Duration is how long the traffic runs, seconds; instances still up
	// at its end are counted until then.
	Duration float64
	// ServiceSeconds is how long an instance works on one request once it
	// has it (not counted as added latency).
	ServiceSeconds float64
	// Concurrency is how many requests one instance takes at once (0 =
	// unlimited, Knative's containerConcurrency default); a request
	// finding every ready instance full starts another.
	Concurrency int
	// Seed seeds the start samples drawn (a PCG).
	Seed uint64
}

// Result is one simulation's totals.
type Result struct {
	Requests, Cold, Starts int64
	// Cold counts the requests that found no ready instance with room and
	// waited for one to start (however short the start). Added holds each
	// cold request's wait, milliseconds (warm requests add 0 and are not
	// stored: Requests − len(Added) of them).
	Added []float64
	// InstanceSeconds is instance lifetime from start to removal;
	// IdleSeconds the part of it an instance was ready and serving
	// nothing; StartCPUSeconds the CPU its starts took.
	InstanceSeconds, IdleSeconds, StartCPUSeconds float64
}

// Merge adds o's totals to r: a population's apps are summed.
func (r *Result) Merge(o Result) {
	r.Requests += o.Requests
	r.Cold += o.Cold
	r.Starts += o.Starts
	r.Added = append(r.Added, o.Added...)
	r.InstanceSeconds += o.InstanceSeconds
	r.IdleSeconds += o.IdleSeconds
	r.StartCPUSeconds += o.StartCPUSeconds
}

// AddedQuantile is the q-quantile (0..1) of the added latency over every
// request, milliseconds: the warm ones count as 0. Nearest rank; 0 when
// there were no requests.
func (r *Result) AddedQuantile(q float64) float64 {
	if r.Requests == 0 {
		return 0
	}
	if !slices.IsSorted(r.Added) {
		slices.Sort(r.Added)
	}
	rank := int64(math.Ceil(q * float64(r.Requests))) // 1-based
	if rank < 1 {
		rank = 1
	}
	warm := r.Requests - int64(len(r.Added))
	if rank <= warm {
		return 0
	}
	return r.Added[rank-warm-1]
}

// ErrNoSamples is returned for an arm without start samples to draw.
var ErrNoSamples = errors.New("no start samples")

// instance is one server instance. Its requests are given to it in the
// order they start on it, so busy (the union of their service times) is
// kept by extending busyUntil.
type instance struct {
	start, ready float64
	busyUntil    float64   // end of the last request given to it (≥ ready once it has one)
	busy         float64   // seconds serving, the union of its requests' service times
	ends         []float64 // ends of requests not yet done, ascending (with Concurrency > 0)
	lastUsed     float64
}

// idleFrom is when it last had nothing to do: ready, or its last request's end.
func (in *instance) idleFrom() float64 { return math.Max(in.ready, in.busyUntil) }

// sim is one simulation's state, driven by a policy.
type sim struct {
	o     Options
	arm   *Arm
	rng   *rand.Rand
	insts []*instance
	res   Result
}

// policy decides when instances start (beyond those requests start) and
// when they are removed.
type policy interface {
	// begin is called once before the first request, at time 0.
	begin(s *sim)
	// advance applies every decision due up to and including time t; no
	// request arrives in between.
	advance(s *sim, t float64)
	// served tells the policy that a request arrived at t and was given
	// to in, waiting wait seconds, and runs [start, end).
	served(s *sim, t float64, in *instance, wait, start, end float64)
}

// Simulate runs arrivals (seconds from 0, ascending, each < o.Duration)
// through pol with arm's starts, and returns the totals.
func Simulate(arrivals []float64, arm *Arm, pol Policy, o Options) (Result, error) {
	if len(arm.StartMs) == 0 {
		return Result{}, ErrNoSamples
	}
	s := &sim{o: o, arm: arm, rng: rand.New(rand.NewPCG(o.Seed, 0x636f6c64))}
	p := pol.new()
	p.begin(s)
	for _, t := range arrivals {
		if t >= o.Duration {
			break
		}
		p.advance(s, t)
		s.arrive(p, t)
	}
	p.advance(s, o.Duration)
	for len(s.insts) > 0 {
		s.remove(s.insts[0], o.Duration)
	}
	return s.res, nil
}

// startInstance starts an instance at t with a drawn start sample.
func (s *sim) startInstance(t float64) *instance {
	i := s.rng.IntN(len(s.arm.StartMs))
	in := &instance{start: t, ready: t + s.arm.StartMs[i]/1e3}
	in.busyUntil = in.ready
	in.lastUsed = t
	if i < len(s.arm.StartCPUMs) {
		s.res.StartCPUSeconds += s.arm.StartCPUMs[i] / 1e3
	}
	s.res.Starts++
	s.insts = append(s.insts, in)
	return in
}

// remove ends in at t (t ≥ its last request's end, or the end of the
// run), counting its lifetime and idle time.
func (s *sim) remove(in *instance, t float64) {
	life := t - in.start
	busy := in.busy
	if in.busyUntil > t { // cut off by the end of the run
		busy -= in.busyUntil - t
	}
	up := t - in.ready
	if up < 0 {
		up = 0 // removed while starting (only at the end of the run)
	}
	s.res.InstanceSeconds += life
	s.res.IdleSeconds += math.Max(0, up-math.Max(0, busy))
	i := slices.Index(s.insts, in)
	s.insts = slices.Delete(s.insts, i, i+1)
}

// hasRoom reports whether in can take one more request at t.
func (s *sim) hasRoom(in *instance, t float64) bool {
	if s.o.Concurrency <= 0 {
		return true
	}
	n := 0
	for n < len(in.ends) && in.ends[n] <= t {
		n++
	}
	in.ends = in.ends[n:]
	return len(in.ends) < s.o.Concurrency
}

// idleAt reports whether in serves nothing at t (and is ready).
func (in *instance) idleAt(t float64) bool { return in.ready <= t && in.busyUntil <= t }

// arrive routes one request: to the ready instance with room used most
// recently (so that the others can idle out), else to the starting
// instance with room that is ready first, else to a new instance.
func (s *sim) arrive(p policy, t float64) {
	s.res.Requests++
	var best *instance
	for _, in := range s.insts {
		if in.ready <= t && s.hasRoom(in, t) && (best == nil || in.lastUsed > best.lastUsed) {
			best = in
		}
	}
	if best == nil {
		for _, in := range s.insts {
			if s.hasRoom(in, t) && (best == nil || in.ready < best.ready) {
				best = in
			}
		}
	}
	fresh := best == nil
	if fresh {
		best = s.startInstance(t)
	}
	start := math.Max(t, best.ready)
	wait := start - t
	if fresh || wait > 0 { // it waited for a start, however short
		s.res.Cold++
		s.res.Added = append(s.res.Added, wait*1e3)
	}
	end := start + s.o.ServiceSeconds
	if start >= best.busyUntil {
		best.busy += end - start
	} else if end > best.busyUntil {
		best.busy += end - best.busyUntil
	}
	best.busyUntil = math.Max(best.busyUntil, end)
	best.lastUsed = t
	if s.o.Concurrency > 0 {
		best.ends = append(best.ends, end)
	}
	p.served(s, t, best, wait, start, end)
}
