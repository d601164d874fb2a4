package knative

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// ErrUnschedulable is wrapped by the error of a Parallel burst whose N
// pods the cluster cannot hold at once: the scheduler said of one of its
// pods that it cannot place it (PodScheduled False, reason
// Unschedulable).
var ErrUnschedulable = errors.New("does not fit on the cluster at once")

// fitSettle bounds how long, after the first Unschedulable pod of a
// burst, the fit watch waits for the scheduler's word on the burst's
// other pods before counting the ones it placed: the Services' pods come
// through informers of their own, whose events need not arrive in the
// order the scheduler decided.
const fitSettle = 2 * time.Second

// fit is what the scheduler did with one burst's pods: of its N Services,
// how many had a pod placed on a node, and the first pod it said it
// cannot place (pod "" when none), in its own words.
type fit struct {
	n, scheduled         int
	pod, reason, message string
}

// unschedulable is the scheduler's word on the pod, as the burst's error
// and record.Burst.Unschedulable quote it.
func (f fit) unschedulable() string {
	return fmt.Sprintf("pod %s: %s: %s", f.pod, f.reason, f.message)
}

func (f fit) err() error {
	return fmt.Errorf("N=%d %w: %d of %d pods scheduled; %s", f.n, ErrUnschedulable, f.scheduled, f.n, f.unschedulable())
}

// scanFit reads the pods of a burst's Services (set) that were not there
// at t0 (known[i] are set[i]'s pods then) and says what the scheduler did
// with them. decided is true once every Service has a pod and the
// scheduler has placed or refused each one. Pods are read by name, so the
// pod quoted is the same for the same cache.
func scanFit(set []*armRun, known []map[types.UID]bool) (f fit, decided bool) {
	f.n = len(set)
	decided = true
	for i, a := range set {
		pods, err := a.obs.pods.List(labels.Everything())
		if err != nil {
			return f, false
		}
		slices.SortFunc(pods, func(x, y *corev1.Pod) int { return strings.Compare(x.Name, y.Name) })
		seen, placed := false, false
		for _, p := range pods {
			if known[i][p.UID] {
				continue
			}
			seen = true
			cond := podScheduled(p)
			switch {
			case p.Spec.NodeName != "" || (cond != nil && cond.Status == corev1.ConditionTrue):
				placed = true
			case cond != nil && cond.Status == corev1.ConditionFalse && cond.Reason == corev1.PodReasonUnschedulable:
				if f.pod == "" {
					f.pod, f.reason, f.message = p.Name, cond.Reason, cond.Message
				}
			default: // not tried yet, or gated
				decided = false
			}
		}
		if placed {
			f.scheduled++
		}
		decided = decided && seen
	}
	return f, decided
}

func podScheduled(p *corev1.Pod) *corev1.PodCondition {
	for i, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// knownPods are the UIDs of the pods obs holds now.
func knownPods(obs *observer) (map[types.UID]bool, error) {
	pods, err := obs.pods.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	out := map[types.UID]bool{}
	for _, p := range pods {
		out[p.UID] = true
	}
	return out, nil
}

// watchFit watches a burst's pods from t0, woken by their observers'
// events on wake, until over is closed (the burst ended: one last look)
// or ctx ends. At the first pod the scheduler refuses it calls stop, at
// once, then waits at most fitSettle for the scheduler's word on the
// rest (scanFit's decided) and returns what it did, found true. It
// returns found false when no pod was refused.
func watchFit(ctx context.Context, set []*armRun, known []map[types.UID]bool, wake <-chan struct{}, over <-chan struct{}, stop func()) (f fit, found bool) {
	var settled <-chan time.Time
	last := false
	for {
		var decided bool
		f, decided = scanFit(set, known)
		if f.pod != "" && !found {
			found = true
			stop()
			t := time.NewTimer(fitSettle)
			defer t.Stop()
			settled = t.C
			over = nil // the burst ends now: count what the scheduler did
		}
		switch {
		case found && decided:
			return f, true
		case !found && last:
			return f, false
		}
		select {
		case <-ctx.Done():
			return f, found
		case <-over:
			over, last = nil, true
		case <-settled:
			return f, true
		case <-wake:
		}
	}
}
