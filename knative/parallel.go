package knative

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/coldstart-go/coldstart/internal/noise"
	"github.com/coldstart-go/coldstart/internal/progress"
	"github.com/coldstart-go/coldstart/prober"
	"github.com/coldstart-go/coldstart/record"
)

// Parallel scales N Services of one arm from zero at once, as Knative's
// own scale-from-zero benchmark does (N ∈ {1, 5, 25, 100} there), for
// each N of Sizes: every Service proven at zero first (AtZero on synced
// informers, recorded per Service at t0), then one t0 for all, each
// probed from a goroutine of its own on a fresh channel per attempt, each
// with its own phases. Each burst waits until every Service of the
// campaign is at zero, so that no pod of the burst before shares the
// node with it. Each N has copies of its own (ParallelCopies), and the
// rounds interleave the sizes and the arms as ColdStart interleaves arms.
type Parallel struct {
	// ColdStart gives the cluster, the arms, where probes go and how;
	// its Levers are not used.
	ColdStart
	// Sizes are the Ns, each at least 1, none twice.
	Sizes []int

	probe ProbeFunc // nil = CheckerProbe(Checker); a test's stand-in for the cluster
}

// ParallelCopies are the copies (from 1) each size of sizes uses, in
// order and disjoint: 1,5,25 uses copy 1, then 2-6, then 7-31. The sum
// of sizes is how many copies of each arm `coldstart deploy --parallel`
// makes.
func ParallelCopies(sizes []int) [][]int {
	var out [][]int
	next := 1
	for _, n := range sizes {
		var ks []int
		for range n {
			ks = append(ks, next)
			next++
		}
		out = append(out, ks)
	}
	return out
}

// CheckParallelSizes refuses an empty list, an N below 1 and one given
// twice.
func CheckParallelSizes(sizes []int) error {
	if len(sizes) == 0 {
		return errors.New("no sizes given, want a list such as 1,5,25")
	}
	for i, n := range sizes {
		if n < 1 {
			return fmt.Errorf("%d: want N ≥ 1 Services at once", n)
		}
		if slices.Contains(sizes[:i], n) {
			return fmt.Errorf("%d given twice", n)
		}
	}
	return nil
}

// Run measures one warm-up round (uncounted: each copy's first start)
// and Runs counted ones, passing each instance (record.BurstInstanceKind)
// and each burst (record.BurstKind) to onRecord as it is taken, and
// returns the bursts. A Service that gives no healthy reply within the
// probe timeout ends the campaign after its burst is recorded, with the
// reason its pod is not running where the cluster gives one.
//
// A burst whose N pods the cluster cannot hold at once is stopped as soon
// as the scheduler refuses one of them (burstOnce) and recorded with its
// reason. No later burst of that arm is at that N or above (they cannot
// fit either); its smaller sizes and the other arms go on, every round,
// so the campaign still finishes with what fits. Run then returns the
// bursts and an error for each arm stopped so, wrapping
// ErrUnschedulable: where the cluster stops is a result, but N at once
// was not measured.
func (p Parallel) Run(ctx context.Context, onRecord func(kind string, v any) error) ([]record.Burst, error) {
	if err := CheckParallelSizes(p.Sizes); err != nil {
		return nil, err
	}
	if p.Runs < 1 {
		return nil, fmt.Errorf("runs: %d, want at least 1", p.Runs)
	}
	checker := p.Checker
	if checker == nil {
		checker = prober.Health{}
	}
	copies := ParallelCopies(p.Sizes)
	// runs[arm][i][j] is size i's j-th Service of arm.
	runs := map[string][][]*armRun{}
	defer func() {
		for _, sets := range runs {
			for _, set := range sets {
				for _, a := range set {
					a.obs.close()
				}
			}
		}
	}()
	for _, arm := range p.Arms {
		for i, ks := range copies {
			runs[arm] = append(runs[arm], nil)
			for _, k := range ks {
				mo := MeasureOptions{
					Namespace: p.Namespace, Service: p.NamePrefix + CopyName(arm, k), Arm: arm, Budget: Budget,
					Target: p.Target, Activator: p.Activator, ProbeTimeout: p.ProbeTimeout,
					Probe: CheckerProbe(checker), Traces: p.Traces,
				}
				if p.probe != nil {
					mo.Probe = p.probe
				}
				a, err := prepare(ctx, p.Clients, mo)
				if err != nil {
					return nil, fmt.Errorf("%w (coldstart deploy --arms %s --parallel %s makes the copies)", err, arm, sizesText(p.Sizes))
				}
				runs[arm][i] = append(runs[arm][i], a)
			}
		}
	}
	var all []*armRun
	for _, sets := range runs {
		for _, set := range sets {
			all = append(all, set...)
		}
	}
	prog := progress.For(p.Progress)
	prog.Start((1+p.Runs)*len(p.Sizes)*len(p.Arms), "bursts")
	defer prog.Done()
	var out []record.Burst
	// tooBig[arm] is the N at which the cluster could not hold arm's
	// burst, and unfit the errors that said so, in the order found.
	tooBig := map[string]int{}
	var unfit []error
	for run := 0; run <= p.Runs; run++ {
		snap, nerr := noise.Host.Take()
		for i, n := range p.Sizes {
			for ai := range p.Arms {
				arm := p.Arms[(ai+run+i)%len(p.Arms)]
				if big, ok := tooBig[arm]; ok && n >= big {
					prog.Skip(1)
					continue
				}
				res, err := p.burstOnce(ctx, arm, n, run, runs[arm][i], all, onRecord)
				out = append(out, res)
				if rerr := onRecord(record.BurstKind, res); rerr != nil && err == nil {
					err = fmt.Errorf("record burst: %w", rerr)
				}
				if errors.Is(err, ErrUnschedulable) {
					prog.Step(fmt.Sprintf("run %d/%d  N=%-3d %-8s did not fit: %d of %d pods scheduled", run, p.Runs, n, arm, *res.ScheduledAtOnce, n))
					tooBig[arm] = n
					unfit = append(unfit, fmt.Errorf("arm %s: %w (N ≥ %d of %s not run after it)", arm, err, n, arm))
					continue
				}
				prog.Step(fmt.Sprintf("run %d/%d  N=%-3d %-8s p50 %.0f ms, all %.0f ms", run, p.Runs, n, arm, res.P50Ms, res.AllReadyMs))
				if err != nil {
					return out, errors.Join(append(unfit, err)...)
				}
			}
		}
		if err := roundNoise(p.Noise, run, snap, nerr); err != nil {
			return out, errors.Join(append(unfit, err)...)
		}
	}
	return out, errors.Join(unfit...)
}

// burstOnce waits until every Service of the campaign (all) is at zero,
// takes one t0, and probes set's all at once. Waiting for all, not only
// set's, keeps the pods of the burst before, still terminating, off the
// node while this one starts: the N measured is the N on the node.
//
// It also means that, at t0, no pod of the campaign holds any of the
// node's resources (AtZero: none Pending, Running or Terminating), so a
// pod of the burst that the scheduler calls Unschedulable does not fit
// beside the burst's own pods (or beside what else, not the campaign's,
// runs on the cluster): it would not be placed until some of them scale
// back to zero, and the later first replies would time queueing, not N
// at once. (The scheduler learns that a pod is gone from the same API
// the informers read, before Knative has even made the burst's pods, so
// a pod of the burst before cannot hold room the scheduler counts.)
// The first such pod stops the burst there (watchFit): its
// probes are cancelled, every instance is recorded with the error, and
// the burst with the scheduler's reason and message (Unschedulable) and
// how many of the N Services' pods it placed (ScheduledAtOnce); the
// error wraps ErrUnschedulable. Knative scales the burst's pods back to
// zero itself once their requests are gone; the next burst waits for
// that as for any other.
func (p Parallel) burstOnce(ctx context.Context, arm string, n, run int, set, all []*armRun, onRecord func(string, any) error) (record.Burst, error) {
	res := record.Burst{Arm: arm, Budget: Budget, N: n, Run: run, Warmup: run == 0}
	for _, a := range all {
		if err := a.untilZero(ctx, run, p.Progress); err != nil {
			return res, err
		}
	}
	wake := make(chan struct{}, 1)
	for _, a := range set {
		a.obs.setWake(wake)
		defer a.obs.setWake(nil)
	}
	t0 := time.Now()
	insts := make([]record.BurstInstance, len(set))
	known := make([]map[types.UID]bool, len(set))
	for i, a := range set {
		ok, why, err := a.obs.state()
		if err == nil && !ok {
			err = fmt.Errorf("not at zero at t0: %s", why)
		}
		if err == nil {
			known[i], err = knownPods(a.obs)
		}
		if err == nil {
			err = a.obs.startTracking(t0, a.o.Container)
		}
		if err != nil {
			for _, a := range set[:i] {
				a.obs.stopTracking()
			}
			return res, fmt.Errorf("service %s/%s run %d: %w", p.Namespace, a.o.Service, run, err)
		}
		insts[i].ZeroAtT0 = zeroProof(a.obs)
	}
	// The probes end with pctx: cancelled with errBurstStopped when the
	// fit watch finds a pod the scheduler cannot place.
	pctx, stopProbes := context.WithCancelCause(ctx)
	defer stopProbes(nil)
	over := make(chan struct{})
	type fitResult struct {
		f     fit
		found bool
	}
	fitc := make(chan fitResult, 1)
	go func() {
		f, found := watchFit(ctx, set, known, wake, over, func() { stopProbes(errBurstStopped) })
		fitc <- fitResult{f, found}
	}()
	samples := make([]prober.Sample, len(set))
	errs := make([]error, len(set))
	var wg sync.WaitGroup
	for i, a := range set {
		wg.Go(func() {
			samples[i], errs[i] = probeFrom(pctx, a.obs, a.o, a.target, a.authority, t0)
			if errs[i] == nil && samples[i].Error != "" {
				errs[i] = errors.New(samples[i].Error)
				if why := a.obs.notRunning(); why != "" {
					errs[i] = fmt.Errorf("%w; %s", errs[i], why)
				}
			}
		})
	}
	wg.Wait()
	close(over)
	fr := <-fitc
	var fitErr error
	if fr.found && ctx.Err() == nil {
		fitErr = fr.f.err()
		res.Unschedulable = fr.f.unschedulable()
		res.ScheduledAtOnce = &fr.f.scheduled
	}
	var times []float64
	var firstErr error
	for i, a := range set {
		in := &insts[i]
		s := samples[i]
		in.Arm, in.Budget, in.N, in.Run, in.Warmup, in.Instance = arm, Budget, n, run, run == 0, i+1
		in.Service, in.Attempts, in.Phases = a.o.Service, s.Attempts, s.Phases
		answered := errs[i] == nil || (errors.Is(errs[i], errBurstStopped) && s.FirstRPCMs > 0)
		if answered {
			// Also in a stopped burst: the reply came, but not as one
			// of N at once (Error says so).
			in.FirstRPCMs, in.ReadyMs = s.FirstRPCMs, s.FirstRPCMs
			times = append(times, s.FirstRPCMs)
		} else {
			res.Failed++
		}
		switch {
		case fitErr != nil:
			in.Error = fitErr.Error()
		case errs[i] != nil:
			in.Error = errs[i].Error()
			if firstErr == nil {
				firstErr = fmt.Errorf("service %s/%s run %d (N=%d): %w", p.Namespace, a.o.Service, run, n, errs[i])
			}
		}
		if err := onRecord(record.BurstInstanceKind, *in); err != nil && firstErr == nil {
			firstErr = fmt.Errorf("record burst instance: %w", err)
		}
	}
	if fitErr != nil && firstErr == nil {
		firstErr = fitErr
	}
	if firstErr != nil {
		res.Error = firstErr.Error()
		return res, firstErr
	}
	res.SetTimes(times) // one t0 for all: the last first reply is when all serve
	return res, nil
}

// errBurstStopped ends the probes of a burst whose pods do not fit: the
// burst's own error, with the scheduler's words, follows from the fit
// watch.
var errBurstStopped = errors.New("burst stopped: a pod of it cannot be scheduled")

// zeroProof says what the synced informers held for the Service: its
// revisions' Deployments with their replicas, and how many pods (none
// running, pending or terminating, or AtZero would have refused).
func zeroProof(o *observer) string {
	deps, err := o.deps.List(labels.Everything())
	if err != nil {
		return ""
	}
	pods, _ := o.pods.List(labels.Everything())
	var parts []string
	for _, d := range deps {
		spec := int32(1)
		if d.Spec.Replicas != nil {
			spec = *d.Spec.Replicas
		}
		parts = append(parts, fmt.Sprintf("deployment %s spec %d, replicas %d, ready %d", d.Name, spec, d.Status.Replicas, d.Status.ReadyReplicas))
	}
	slices.Sort(parts)
	return strings.Join(parts, "; ") + fmt.Sprintf("; %d pods, none pending, running or terminating", len(pods))
}

// notRunning says why the Service's pods are not serving, where the
// cluster says: a pod the scheduler could not place, or a container
// waiting (ImagePullBackOff, CrashLoopBackOff), with the cluster's own
// message. "" when no pod says.
func (o *observer) notRunning() string {
	pods, err := o.pods.List(labels.Everything())
	if err != nil {
		return ""
	}
	var out []string
	for _, p := range pods {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
				out = append(out, fmt.Sprintf("pod %s not scheduled: %s: %s", p.Name, c.Reason, c.Message))
			}
		}
		for _, cs := range p.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil && w.Reason != "" && w.Reason != "ContainerCreating" {
				out = append(out, fmt.Sprintf("pod %s container %s waiting: %s: %s", p.Name, cs.Name, w.Reason, w.Message))
			}
		}
	}
	return strings.Join(out, "; ")
}

func sizesText(sizes []int) string {
	var s []string
	for _, n := range sizes {
		s = append(s, fmt.Sprint(n))
	}
	return strings.Join(s, ",")
}
