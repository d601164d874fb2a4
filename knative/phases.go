package knative

import (
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/coldstart-go/coldstart/prober"
	"github.com/coldstart-go/coldstart/record"
)

// Phases of a Knative cold start read from watch events, in the order they
// normally happen; prober.PhaseFirstRPC ends it. Each is the time from t0
// until coldstart received the watch event that showed it: an upper bound,
// late by the API server's watch latency (the object timestamps Kubernetes
// records have one-second resolution).
const (
	PhaseDeploymentScaled = "deployment_scaled" // a Deployment's spec.replicas went from 0 to 1+
	PhasePodCreated       = "pod_created"       // a new pod appeared
	PhasePodScheduled     = "pod_scheduled"     // its PodScheduled condition is True
	PhaseSandboxReady     = "sandbox_ready"     // PodReadyToStartContainers is True: sandbox and network set up
	PhaseContainerStarted = "container_started" // the server container is running
	PhasePodReady         = "pod_ready"         // its Ready condition is True
)

// watchPhases are the phases a complete cold start shows in watch events.
var watchPhases = []string{PhaseDeploymentScaled, PhasePodCreated, PhasePodScheduled, PhaseContainerStarted, PhasePodReady}

// phaseOrder orders phases seen at the same millisecond: watchPhases with
// PhaseSandboxReady (a condition Kubernetes ≥1.29 sets; a cold start is
// complete without it) before the container starts.
var phaseOrder = []string{PhaseDeploymentScaled, PhasePodCreated, PhasePodScheduled, PhaseSandboxReady, PhaseContainerStarted, PhasePodReady}

// queueProxy is the name of the sidecar Knative adds to every pod.
const queueProxy = "queue-proxy"

// phaseTracker keeps the first time each phase was seen after t0.
type phaseTracker struct {
	t0        time.Time
	container string             // server container ("" = any but queue-proxy)
	known     map[types.UID]bool // pods that existed at t0: not this cold start's
	seen      map[string]time.Time
	// pods are this cold start's pods, each when first seen and when
	// first seen Ready.
	pods map[types.UID]*podSeen
}

// podSeen is one pod as the watch showed it.
type podSeen struct {
	name           string
	created, ready time.Time
}

func newPhaseTracker(t0 time.Time, container string) *phaseTracker {
	return &phaseTracker{t0: t0, container: container, known: map[types.UID]bool{}, seen: map[string]time.Time{},
		pods: map[types.UID]*podSeen{}}
}

func (t *phaseTracker) mark(name string, at time.Time) {
	if _, ok := t.seen[name]; !ok {
		t.seen[name] = at
	}
}

// observe takes one object as a watch event delivered it at time at.
func (t *phaseTracker) observe(at time.Time, obj any) {
	if at.Before(t.t0) {
		return
	}
	switch o := obj.(type) {
	case *appsv1.Deployment:
		// The revision was at zero at t0, so any replica asked for since
		// is the scale-up.
		if o.Spec.Replicas == nil || *o.Spec.Replicas > 0 {
			t.mark(PhaseDeploymentScaled, at)
		}
	case *corev1.Pod:
		if t.known[o.UID] || o.DeletionTimestamp != nil {
			return
		}
		t.mark(PhasePodCreated, at)
		ps := t.pods[o.UID]
		if ps == nil {
			ps = &podSeen{name: o.Name, created: at}
			t.pods[o.UID] = ps
		}
		for _, c := range o.Status.Conditions {
			if c.Status != corev1.ConditionTrue {
				continue
			}
			switch c.Type {
			case corev1.PodScheduled:
				t.mark(PhasePodScheduled, at)
			case corev1.PodReady:
				t.mark(PhasePodReady, at)
				if ps.ready.IsZero() {
					ps.ready = at
				}
			case corev1.PodReadyToStartContainers:
				t.mark(PhaseSandboxReady, at)
			}
		}
		for _, cs := range o.Status.ContainerStatuses {
			if (cs.Name == t.container || t.container == "" && cs.Name != queueProxy) && cs.State.Running != nil {
				t.mark(PhaseContainerStarted, at)
			}
		}
	}
}

func (t *phaseTracker) complete() bool {
	for _, p := range watchPhases {
		if _, ok := t.seen[p]; !ok {
			return false
		}
	}
	return true
}

// phases returns what was seen, in time order, in milliseconds from t0.
func (t *phaseTracker) phases() []prober.Phase {
	out := make([]prober.Phase, 0, len(t.seen))
	for name, at := range t.seen {
		out = append(out, prober.Phase{Name: name, Ms: ms(at.Sub(t.t0))})
	}
	order := map[string]int{}
	for i, p := range phaseOrder {
		order[p] = i
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Ms != out[j].Ms {
			return out[i].Ms < out[j].Ms
		}
		return order[out[i].Name] < order[out[j].Name]
	})
	return out
}

// podTimes are this cold start's pods in the order they appeared, each
// when first seen and when first seen Ready, ms from t0 (ReadyMs nil for
// one never seen Ready).
func (t *phaseTracker) podTimes() []record.PodTime {
	out := make([]record.PodTime, 0, len(t.pods))
	for _, p := range t.pods {
		pt := record.PodTime{Pod: p.name, CreatedMs: ms(p.created.Sub(t.t0))}
		if !p.ready.IsZero() {
			r := ms(p.ready.Sub(t.t0))
			pt.ReadyMs = &r
		}
		out = append(out, pt)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].CreatedMs != out[j].CreatedMs {
			return out[i].CreatedMs < out[j].CreatedMs
		}
		return out[i].Pod < out[j].Pod
	})
	return out
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
