package knative

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"knative.dev/serving/pkg/apis/serving"
)

// AtZero applies the rules for "this Service is truly at zero" to its
// revisions' Deployments and pods: at least one Deployment, each with
// spec.replicas 0 and a status that has caught up with it (observed
// generation current; replicas, updated, ready and available all 0), and
// no pod Pending, Running or Terminating (Succeeded and Failed pods hold no
// resources and do not count). When not at zero, reason says what is left.
func AtZero(deps []*appsv1.Deployment, pods []*corev1.Pod) (ok bool, reason string) {
	if len(deps) == 0 {
		return false, "no Deployment yet"
	}
	sort.Slice(deps, func(i, j int) bool { return deps[i].Name < deps[j].Name })
	for _, d := range deps {
		spec := int32(1) // the API's default for an unset spec.replicas
		if d.Spec.Replicas != nil {
			spec = *d.Spec.Replicas
		}
		st := d.Status
		switch {
		case spec != 0:
			return false, fmt.Sprintf("deployment %s: spec.replicas %d", d.Name, spec)
		case st.ObservedGeneration < d.Generation:
			return false, fmt.Sprintf("deployment %s: status not observed (generation %d, observed %d)", d.Name, d.Generation, st.ObservedGeneration)
		case st.Replicas != 0 || st.UpdatedReplicas != 0 || st.ReadyReplicas != 0 || st.AvailableReplicas != 0:
			return false, fmt.Sprintf("deployment %s: status replicas %d (updated %d, ready %d, available %d)",
				d.Name, st.Replicas, st.UpdatedReplicas, st.ReadyReplicas, st.AvailableReplicas)
		}
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			return false, fmt.Sprintf("pod %s: Terminating", p.Name)
		}
		switch p.Status.Phase {
		case corev1.PodSucceeded, corev1.PodFailed:
		default: // Pending, Running, Unknown, or no status yet
			ph := p.Status.Phase
			if ph == "" {
				ph = corev1.PodPending
			}
			return false, fmt.Sprintf("pod %s: %s", p.Name, ph)
		}
	}
	return true, ""
}

// observer holds started and synced informers on one Service's Deployments
// and pods (label serving.knative.dev/service=NAME). Every event wakes
// waiters and, during a measurement, feeds the phase tracker.
type observer struct {
	deps    appslisters.DeploymentNamespaceLister
	pods    corelisters.PodNamespaceLister
	stop    context.CancelFunc
	done    sync.WaitGroup // the informers' goroutines
	changed chan struct{}  // capacity 1: "something changed since you looked"

	mu      sync.Mutex
	tracker *phaseTracker // nil outside a measurement
	// wake, during a burst, is the burst's fit watch: every event sends
	// it a non-blocking "look again" (nil outside a burst).
	wake chan<- struct{}
	// onPod, during a replay, gets every pod event as it comes (nil
	// outside a replay).
	onPod func(at time.Time, p *corev1.Pod, deleted bool)
}

// observe starts the informers and returns once both have synced: a wait
// on an unsynced cache would see no pods and return at once.
func observe(ctx context.Context, c Clients, namespace, service string) (*observer, error) {
	sel := labels.Set{serving.ServiceLabelKey: service}.String()
	ictx, cancel := context.WithCancel(ctx)
	o := &observer{changed: make(chan struct{}, 1)}
	o.stop = func() { cancel(); o.done.Wait() }
	h := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { o.event(obj, false) },
		UpdateFunc: func(_, obj any) { o.event(obj, false) },
		DeleteFunc: func(obj any) { o.event(obj, true) },
	}
	di := informer(ictx, c, deploymentsResource, namespace, sel, typed[appsv1.Deployment]())
	pi := informer(ictx, c, podsResource, namespace, sel, typed[corev1.Pod]())
	if _, err := di.AddEventHandler(h); err != nil {
		cancel()
		return nil, fmt.Errorf("watch deployments of %s/%s: %w", namespace, service, err)
	}
	if _, err := pi.AddEventHandler(h); err != nil {
		cancel()
		return nil, fmt.Errorf("watch pods of %s/%s: %w", namespace, service, err)
	}
	o.deps = appslisters.NewDeploymentLister(di.GetIndexer()).Deployments(namespace)
	o.pods = corelisters.NewPodLister(pi.GetIndexer()).Pods(namespace)

	informers := []struct {
		resource string
		inf      cache.SharedIndexInformer
	}{{deploymentsResource.Resource, di}, {podsResource.Resource, pi}}
	for _, i := range informers {
		o.done.Add(1)
		go func() {
			defer o.done.Done()
			i.inf.Run(ictx.Done())
		}()
	}
	for _, i := range informers {
		if !cache.WaitForCacheSync(ictx.Done(), i.inf.HasSynced) {
			o.close()
			return nil, fmt.Errorf("sync %s informer for %s/%s: %w", i.resource, namespace, service, context.Cause(ctx))
		}
	}
	return o, nil
}

// informer makes an informer on the objects of resource in namespace that
// match the label selector sel, read through the dynamic client and
// stored as transform makes them; its requests end with ctx.
func informer(ctx context.Context, c Clients, resource schema.GroupVersionResource, namespace, sel string, transform cache.TransformFunc) cache.SharedIndexInformer {
	r := c.Kube.Resource(resource).Namespace(namespace)
	lw := &cache.ListWatch{
		ListFunc: func(lo metav1.ListOptions) (runtime.Object, error) {
			lo.LabelSelector = sel
			return r.List(ctx, lo)
		},
		WatchFunc: func(lo metav1.ListOptions) (watch.Interface, error) {
			lo.LabelSelector = sel
			return r.Watch(ctx, lo)
		},
	}
	inf := cache.NewSharedIndexInformer(lw, &unstructured.Unstructured{}, 0,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	// Not started yet: SetTransform cannot fail.
	_ = inf.SetTransform(transform)
	return inf
}

func (o *observer) close() { o.stop() }

func (o *observer) event(obj any, deleted bool) {
	at := time.Now()
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	o.mu.Lock()
	if o.tracker != nil {
		o.tracker.observe(at, obj)
	}
	if p, ok := obj.(*corev1.Pod); ok && o.onPod != nil {
		o.onPod(at, p, deleted)
	}
	if o.wake != nil {
		select {
		case o.wake <- struct{}{}:
		default:
		}
	}
	o.mu.Unlock()
	select {
	case o.changed <- struct{}{}:
	default:
	}
}

// state lists the cached objects and applies AtZero.
func (o *observer) state() (bool, string, error) {
	deps, err := o.deps.List(labels.Everything())
	if err != nil {
		return false, "", err
	}
	pods, err := o.pods.List(labels.Everything())
	if err != nil {
		return false, "", err
	}
	ok, why := AtZero(deps, pods)
	return ok, why, nil
}

// waitZero returns once the Service is at zero (AtZero on synced caches),
// calling progress with each new reason it is not.
func (o *observer) waitZero(ctx context.Context, progress func(string)) error {
	last := ""
	for {
		ok, why, err := o.state()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if why != last && progress != nil {
			progress(why)
		}
		last = why
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for zero: %w (last: %s)", context.Cause(ctx), why)
		case <-o.changed:
		}
	}
}

// startTracking begins a measurement at t0: pods already cached are not
// part of this cold start.
func (o *observer) startTracking(t0 time.Time, container string) error {
	pods, err := o.pods.List(labels.Everything())
	if err != nil {
		return err
	}
	t := newPhaseTracker(t0, container)
	for _, p := range pods {
		t.known[p.UID] = true
	}
	o.mu.Lock()
	o.tracker = t
	o.mu.Unlock()
	return nil
}

// setWake makes every event also wake ch (nil: no longer); several
// observers may share one ch.
func (o *observer) setWake(ch chan<- struct{}) {
	o.mu.Lock()
	o.wake = ch
	o.mu.Unlock()
}

// setOnPod makes every pod event also go to f (nil: no longer).
func (o *observer) setOnPod(f func(at time.Time, p *corev1.Pod, deleted bool)) {
	o.mu.Lock()
	o.onPod = f
	o.mu.Unlock()
}

// stopTracking ends the measurement and returns its tracker.
func (o *observer) stopTracking() *phaseTracker {
	o.mu.Lock()
	defer o.mu.Unlock()
	t := o.tracker
	o.tracker = nil
	return t
}

// trackedAll reports whether every watch phase has been seen.
func (o *observer) trackedAll() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.tracker != nil && o.tracker.complete()
}
