package knative

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/coldstart-go/coldstart/internal/noise"
	"github.com/coldstart-go/coldstart/internal/progress"
	"github.com/coldstart-go/coldstart/prober"
	"github.com/coldstart-go/coldstart/record"
)

// RequestBurst sends Requests requests at once at one Service of each arm
// while it is at zero: how many pods the autoscaler makes for them and
// when, and when each request is answered. Each request is one attempt on
// a fresh channel that the activator holds until a pod takes it (its
// deadline is the probe timeout, so that no request loses its place in
// the activator's queue by timing out and coming back); with the
// Service's containerConcurrency C, a pod takes at most C at a time.
type RequestBurst struct {
	// ColdStart gives the cluster, the arms (the Services deploy made),
	// where requests go and how; its Levers are not used.
	ColdStart
	// Requests is how many requests arrive at once (at least 1).
	Requests int
}

// ContainerConcurrency reads the Service's containerConcurrency (0 =
// unlimited), for the results.
func ContainerConcurrency(ctx context.Context, c Clients, namespace, service string) (int64, error) {
	svc, err := c.Serving.Services(namespace).Get(ctx, service, metav1.GetOptions{})
	if err != nil {
		return 0, fmt.Errorf("get service %s/%s: %w", namespace, service, err)
	}
	if cc := svc.Spec.Template.Spec.ContainerConcurrency; cc != nil {
		return *cc, nil
	}
	return 0, nil
}

// Run measures one uncounted warm-up round and Runs counted ones, arms
// interleaved, passing each request (record.BurstInstanceKind, Instance
// numbering it) and each burst (record.BurstKind, with the pods made) to
// onRecord, and returns the bursts. A request that is never answered ends
// the campaign after its burst is recorded, with the reason its pod is not
// running where the cluster gives one.
func (b RequestBurst) Run(ctx context.Context, onRecord func(kind string, v any) error) ([]record.Burst, error) {
	if b.Requests < 1 {
		return nil, fmt.Errorf("requests: %d, want at least 1", b.Requests)
	}
	if b.Runs < 1 {
		return nil, fmt.Errorf("runs: %d, want at least 1", b.Runs)
	}
	checker := b.Checker
	if checker == nil {
		checker = prober.Health{}
	}
	var arms []*armRun
	defer func() {
		for _, a := range arms {
			a.obs.close()
		}
	}()
	for _, arm := range b.Arms {
		// A request's attempts run under the probe timeout alone, not
		// AttemptTimeout (once): one that timed out would lose its place
		// in the activator's queue.
		mo := MeasureOptions{
			Namespace: b.Namespace, Service: b.NamePrefix + arm, Arm: arm, Budget: Budget,
			Target: b.Target, Activator: b.Activator, ProbeTimeout: b.ProbeTimeout,
			Probe: CheckerProbe(checker), Traces: b.Traces,
		}
		a, err := prepare(ctx, b.Clients, mo)
		if err != nil {
			return nil, err
		}
		arms = append(arms, a)
	}
	prog := progress.For(b.Progress)
	prog.Start((1+b.Runs)*len(arms), "bursts")
	defer prog.Done()
	var out []record.Burst
	for run := 0; run <= b.Runs; run++ {
		snap, nerr := noise.Host.Take()
		for ai := range arms {
			a := arms[(ai+run)%len(arms)]
			res, err := b.once(ctx, a, run, arms, onRecord)
			out = append(out, res)
			if rerr := onRecord(record.BurstKind, res); rerr != nil && err == nil {
				err = fmt.Errorf("record burst: %w", rerr)
			}
			prog.Step(fmt.Sprintf("run %d/%d  %-8s %d requests: %d pods, p50 %.0f ms, last %.0f ms", run, b.Runs, a.o.Arm, b.Requests, len(res.Pods), res.P50Ms, res.AllReadyMs))
			if err != nil {
				return out, err
			}
		}
		if err := roundNoise(b.Noise, run, snap, nerr); err != nil {
			return out, err
		}
	}
	return out, nil
}

// once waits until every arm's Service is at zero (no pod of another
// arm's burst on the node), takes t0, and sends a's Service the burst.
func (b RequestBurst) once(ctx context.Context, a *armRun, run int, all []*armRun, onRecord func(string, any) error) (record.Burst, error) {
	res := record.Burst{Arm: a.o.Arm, Budget: Budget, N: b.Requests, Run: run, Warmup: run == 0}
	for _, x := range all {
		if err := x.untilZero(ctx, run, b.Progress); err != nil {
			return res, err
		}
	}
	proof := zeroProof(a.obs)
	t0 := time.Now()
	if err := a.obs.startTracking(t0, a.o.Container); err != nil {
		return res, err
	}
	// The requests share the observer's one tracker: the phases are the
	// scale-up's (its first pod), the pods all of them.
	type answer struct {
		at       time.Duration
		attempts int
		err      error
	}
	answers := make([]answer, b.Requests)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Go(func() {
			pctx, cancel := context.WithTimeout(ctx, a.o.ProbeTimeout)
			defer cancel()
			var bad badRun
			for {
				answers[i].attempts++
				_, err := a.o.Probe(pctx, a.target, a.authority)
				if err == nil {
					answers[i].at = time.Since(t0)
					return
				}
				if bad.final(err) {
					answers[i].err = err
					return
				}
				if pctx.Err() != nil {
					answers[i].err = fmt.Errorf("no healthy reply within %s after %d attempts: %w", a.o.ProbeTimeout, answers[i].attempts, err)
					return
				}
				time.Sleep(a.o.Gap)
			}
		})
	}
	wg.Wait()
	if err := waitPhases(ctx, a.obs, a.o.PhaseGrace); err != nil {
		a.obs.stopTracking()
		return res, err
	}
	var phases []prober.Phase
	if t := a.obs.stopTracking(); t != nil {
		phases = t.phases()
		res.Pods = t.podTimes()
	}
	var times []float64
	var firstErr error
	for i, an := range answers {
		in := record.BurstInstance{Arm: a.o.Arm, Budget: Budget, N: b.Requests, Run: run, Warmup: run == 0, Instance: i + 1,
			Service: a.o.Service, Attempts: an.attempts, ZeroAtT0: proof}
		if i == 0 {
			in.Phases = phases
		}
		if an.err != nil {
			err := an.err
			if why := a.obs.notRunning(); why != "" {
				err = fmt.Errorf("%w; %s", err, why)
			}
			in.Error = err.Error()
			res.Failed++
			if firstErr == nil {
				firstErr = fmt.Errorf("service %s/%s run %d, request %d: %w", b.Namespace, a.o.Service, run, i+1, err)
			}
		} else {
			in.FirstRPCMs = ms(an.at)
			in.ReadyMs = in.FirstRPCMs
			times = append(times, in.FirstRPCMs)
		}
		if err := onRecord(record.BurstInstanceKind, in); err != nil && firstErr == nil {
			firstErr = fmt.Errorf("record burst request: %w", err)
		}
	}
	if firstErr != nil {
		res.Error = firstErr.Error()
		return res, firstErr
	}
	if len(times) == 0 {
		return res, errors.New("no request answered")
	}
	res.SetTimes(times)
	return res, nil
}
