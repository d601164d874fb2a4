package knative

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"knative.dev/serving/pkg/apis/serving"

	"github.com/coldstart-go/coldstart/record"
)

func TestParallelCopies(t *testing.T) {
	got := fmt.Sprint(ParallelCopies([]int{1, 5, 25}))
	if !strings.HasPrefix(got, "[[1] [2 3 4 5 6] [7 8 9 ") || !strings.HasSuffix(got, " 30 31]]") {
		t.Errorf("ParallelCopies(1,5,25) = %s, want [1], 2-6, 7-31", got)
	}
	for _, tt := range []struct {
		sizes []int
		want  string
	}{
		{nil, "no sizes given"},
		{[]int{1, 0}, "0: want N ≥ 1"},
		{[]int{1, 5, 5}, "5 given twice"},
	} {
		if err := CheckParallelSizes(tt.sizes); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("CheckParallelSizes(%v) = %v, want %q", tt.sizes, err, tt.want)
		}
	}
}

// TestParallelCopiesDeployed: deploy makes the copies run scales, named
// and labelled per copy; a campaign whose copies are missing is refused
// before any probe, saying how to deploy them.
func TestParallelCopiesDeployed(t *testing.T) {
	ctx := context.Background()
	c := fakeCluster(t, "bench", true)
	fakeController(c, always(true))
	got, err := Deploy(ctx, c, WithCopies(testArms()[1:], 3), testDeployOptions("bench"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range got {
		names = append(names, d.Service)
	}
	if strings.Join(names, " ") != "coldstart-default coldstart-default-copy1 coldstart-default-copy2 coldstart-default-copy3" {
		t.Errorf("deployed %v", names)
	}
	svc, err := c.Serving.Services("bench").Get(ctx, "coldstart-default-copy2", metav1.GetOptions{})
	if err != nil || svc.Labels[LabelCopy] != "2" || svc.Labels[LabelArm] != "default" {
		t.Errorf("copy 2: %v, labels %v", err, svc.Labels)
	}
	p := Parallel{ColdStart: ColdStart{Clients: c, Namespace: "bench", Arms: []string{"default"}, NamePrefix: "coldstart-", Runs: 1,
		Activator: true, Target: "127.0.0.1:1"}, Sizes: []int{1, 5}}
	_, err = p.Run(ctx, func(string, any) error { t.Error("a record was written"); return nil })
	if err == nil || !strings.Contains(err.Error(), "coldstart-default-copy4") || !strings.Contains(err.Error(), "coldstart deploy --arms default --parallel 1,5 makes the copies") {
		t.Errorf("Run with copies 4-6 missing = %v", err)
	}
}

// selectorWatches makes the fake client's watches honour their label
// selector, as an API server's do: the fake's send every object of the
// resource in the namespace, so each Service's observer would see every
// Service's pods.
func selectorWatches(kc *dynamicfake.FakeDynamicClient) {
	kc.PrependWatchReactor("*", func(a k8stesting.Action) (bool, watch.Interface, error) {
		w, err := kc.Tracker().Watch(a.GetResource(), a.GetNamespace())
		if err != nil {
			return false, nil, err
		}
		sel := a.(k8stesting.WatchAction).GetWatchRestrictions().Labels
		if sel == nil {
			sel = labels.Everything()
		}
		return true, watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
			m, err := meta.Accessor(e.Object)
			return e, err == nil && sel.Matches(labels.Set(m.GetLabels()))
		}), nil
	})
}

// fakeNode stands in for Knative, the scheduler and the kubelet of a
// single node with room for capacity pods, writing through kube: a probe
// of a Service without a pod makes it one, placed and Ready while the
// node has room, else Pending with the scheduler's Unschedulable; a probe
// of a placed pod's Service is answered, and one of an unplaced pod's is
// held, as the activator holds it, until its context ends. reset scales
// every Service back to zero.
type fakeNode struct {
	kube     dynamic.Interface
	ns       string
	capacity int

	mu     sync.Mutex
	placed map[string]bool // by Service, this burst
	pods   []string
	made   int
	// held are the causes the held probes' contexts ended with.
	held []error
}

func (f *fakeNode) probe(ctx context.Context, _, authority string) error {
	svc := strings.TrimSuffix(strings.Split(authority, ".")[0], "-00001")
	f.mu.Lock()
	placed, ok := f.placed[svc]
	if !ok {
		var err error
		if placed, err = f.makePod(ctx, svc); err != nil {
			f.mu.Unlock()
			return err
		}
		f.placed[svc] = placed
	}
	f.mu.Unlock()
	if placed {
		return nil
	}
	<-ctx.Done()
	f.mu.Lock()
	f.held = append(f.held, context.Cause(ctx))
	f.mu.Unlock()
	return ctx.Err()
}

// makePod makes svc's pod, as the Deployment controller would, then
// writes the scheduler's and the kubelet's word on it to its status.
// Those are the cluster's writes, not the probe's: they are made apart
// from the probe's context, which the stop may cancel as soon as the
// status lands (against a real API server the reply can arrive after
// the cancel, and the probe would then end with its own write's error
// rather than held).
func (f *fakeNode) makePod(ctx context.Context, svc string) (placed bool, err error) {
	ctx = context.WithoutCancel(ctx)
	f.made++
	p := pod(fmt.Sprintf("%s-00001-deployment-%d", svc, f.made), "", false)
	p.Namespace, p.UID = f.ns, types.UID(fmt.Sprint("uid-", f.made)) // the fake keeps the UID, an API server makes its own
	p.Labels[serving.ServiceLabelKey] = svc
	p.Spec.Containers = []corev1.Container{{Name: "server", Image: "r.example/echo@" + testDigest}}
	placed = len(f.pods) < f.capacity
	if placed {
		p.Spec.NodeName = "node-1"
	}
	pods := f.kube.Resource(podsResource).Namespace(f.ns)
	made, err := pods.Create(ctx, unstructuredOf(p), metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	f.pods = append(f.pods, p.Name)
	if placed {
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	} else {
		p.Status.Phase = corev1.PodPending
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: corev1.PodReasonUnschedulable, Message: "0/1 nodes are available: 1 Insufficient cpu."}}
	}
	st := unstructuredOf(p)
	st.SetUID(made.GetUID())
	st.SetResourceVersion(made.GetResourceVersion())
	if _, err := pods.UpdateStatus(ctx, st, metav1.UpdateOptions{}); err != nil {
		return false, err
	}
	return placed, nil
}

func (f *fakeNode) reset() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := int64(0) // no kubelet confirms a graceful deletion
	for _, name := range f.pods {
		if err := f.kube.Resource(podsResource).Namespace(f.ns).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: &now}); err != nil {
			return err
		}
	}
	f.pods, f.placed = nil, map[string]bool{}
	return nil
}

// TestParallelUnschedulable: on a node with room for 2 pods, a burst of
// 3 is stopped as soon as the scheduler refuses its third pod, without
// waiting for the probe timeout (testParallelUnschedulable), on fakes.
func TestParallelUnschedulable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := fakeCluster(t, "bench", true)
	fakeController(c, always(true))
	kc := c.Kube.(*dynamicfake.FakeDynamicClient)
	selectorWatches(kc)
	watches := watchStarted(kc)
	testParallelUnschedulable(ctx, t, c, "bench", func() { waitWatches(t, watches, 8) }) // 4 Services, 2 informers each
}

// testParallelUnschedulable deploys copies 1-4 of the default arm into
// ns, each with its revision's Deployment at zero, and runs a --parallel
// 1,3 campaign on a fakeNode with room for 2: the held probe's context
// is cancelled by the stop, the burst and its instances are recorded
// with the scheduler's reason and how many pods it placed, N=3 is not
// tried again, N=1 goes on in every round, and Run says where the node
// stopped. Nothing of the burst is left running. watching returns once
// the informers watch (the fakes lose the events before).
func testParallelUnschedulable(ctx context.Context, t *testing.T, c Clients, ns string, watching func()) {
	if _, err := Deploy(ctx, c, WithCopies(testArms()[1:], 4), testDeployOptions(ns)); err != nil {
		t.Fatal(err)
	}
	deps := c.Kube.Resource(deploymentsResource).Namespace(ns)
	for k := 1; k <= 4; k++ {
		svc := "coldstart-" + CopyName("default", k)
		d := deployment(svc+"-00001-deployment", ptr(int32(0)), 0, 0, appsv1.DeploymentStatus{})
		d.Namespace = ns
		d.Labels[serving.ServiceLabelKey] = svc
		d.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{serving.ServiceLabelKey: svc}}
		d.Spec.Template = corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: d.Spec.Selector.MatchLabels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "server", Image: "r.example/echo@" + testDigest}}}}
		made, err := deps.Create(ctx, unstructuredOf(d), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// The Deployment controller's word: it has seen the spec.
		d.Status.ObservedGeneration = max(made.GetGeneration(), 1)
		st := unstructuredOf(d)
		st.SetResourceVersion(made.GetResourceVersion())
		if _, err := deps.UpdateStatus(ctx, st, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	node := &fakeNode{kube: c.Kube, ns: ns, capacity: 2, placed: map[string]bool{}}
	var once sync.Once
	p := Parallel{ColdStart: ColdStart{Clients: c, Namespace: ns, Arms: []string{"default"}, NamePrefix: "coldstart-", Runs: 1,
		Activator: true, Target: "127.0.0.1:1", ProbeTimeout: time.Minute}, Sizes: []int{1, 3}}
	p.probe = plainProbe(func(ctx context.Context, target, authority string) error {
		once.Do(watching)
		return node.probe(ctx, target, authority)
	})
	var insts []record.BurstInstance
	got, err := p.Run(ctx, func(kind string, v any) error {
		switch kind {
		case record.BurstInstanceKind:
			insts = append(insts, v.(record.BurstInstance))
		case record.BurstKind:
			return node.reset() // Knative scales the burst back to zero
		}
		return nil
	})
	if !errors.Is(err, ErrUnschedulable) {
		t.Fatalf("Run = %v, want ErrUnschedulable", err)
	}
	for _, want := range []string{"arm default: N=3 does not fit on the cluster at once: 2 of 3 pods scheduled; pod coldstart-default-copy",
		": Unschedulable: 0/1 nodes are available: 1 Insufficient cpu.", "N ≥ 3 of default not run after it"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Run error %q, want it to say %q", err, want)
		}
	}
	var sizes []string
	for _, b := range got {
		sizes = append(sizes, fmt.Sprintf("N=%d run %d", b.N, b.Run))
	}
	if d := cmp.Diff([]string{"N=1 run 0", "N=3 run 0", "N=1 run 1"}, sizes); d != "" {
		t.Fatalf("bursts (-want +got):\n%s", d)
	}
	for _, b := range []record.Burst{got[0], got[2]} {
		if b.DidNotFit() || b.Error != "" || b.AllReadyMs <= 0 {
			t.Errorf("N=1 burst %+v, want it measured", b)
		}
	}
	b := got[1]
	if !b.DidNotFit() || b.ScheduledAtOnce == nil || *b.ScheduledAtOnce != 2 || b.AllReadyMs != 0 || b.Failed != 1 ||
		!strings.HasPrefix(b.Unschedulable, "pod coldstart-default-copy") || !strings.HasSuffix(b.Unschedulable, "-00001-deployment-4: Unschedulable: 0/1 nodes are available: 1 Insufficient cpu.") ||
		!strings.Contains(b.Error, "2 of 3 pods scheduled") {
		t.Errorf("N=3 burst %+v, want it stopped with the scheduler's reason and 2 of 3 placed", b)
	}
	var stopped int
	for _, in := range insts {
		if in.N == 3 {
			stopped++
			if !strings.Contains(in.Error, "N=3 does not fit") {
				t.Errorf("instance %d of N=3: error %q, want the burst's", in.Instance, in.Error)
			}
		}
	}
	if stopped != 3 {
		t.Errorf("%d instances of N=3 recorded, want 3", stopped)
	}
	// The held probe ended because the burst was stopped, not at its
	// probe or attempt timeout.
	if len(node.held) != 1 || !errors.Is(node.held[0], errBurstStopped) {
		t.Errorf("held probes ended with %v, want one, cancelled by the stop", node.held)
	}
	buf := make([]byte, 1<<20)
	stacks := string(buf[:runtime.Stack(buf, true)])
	// The informers' own goroutines (a reflector's resync timer) may
	// outlive their Run by a moment; the burst's may not.
	for _, fn := range []string{"knative.watchFit", "knative.probeFrom", "knative.Parallel.burstOnce"} {
		if strings.Contains(stacks, fn) {
			t.Errorf("a goroutine in %s is left after Run:\n%s", fn, stacks)
		}
	}
}

// TestScanFit: what the scheduler did with a burst's pods, read from the
// Services' pod caches: pods there at t0 do not count, a pod bound to a
// node is placed whatever its conditions say, a pod not tried yet (or
// gated) is not refused, and the count waits until every Service has a
// pod the scheduler decided on.
func TestScanFit(t *testing.T) {
	cond := func(st corev1.ConditionStatus, reason string) []corev1.PodCondition {
		return []corev1.PodCondition{{Type: corev1.PodScheduled, Status: st, Reason: reason, Message: "msg " + reason}}
	}
	mk := func(name string, node string, conds []corev1.PodCondition) *corev1.Pod {
		p := pod(name, corev1.PodPending, false)
		p.Spec.NodeName, p.Status.Conditions = node, conds
		return p
	}
	placed := mk("a-placed", "", cond(corev1.ConditionTrue, ""))
	bound := mk("a-bound", "node-1", nil)
	refused := mk("b-refused", "", cond(corev1.ConditionFalse, corev1.PodReasonUnschedulable))
	refused2 := mk("a-refused", "", cond(corev1.ConditionFalse, corev1.PodReasonUnschedulable))
	untried := mk("c-untried", "", nil)
	gated := mk("c-gated", "", cond(corev1.ConditionFalse, corev1.PodReasonSchedulingGated))
	old := mk("b-old", "", cond(corev1.ConditionFalse, corev1.PodReasonUnschedulable))
	tests := []struct {
		name    string
		pods    [][]*corev1.Pod // per Service
		want    fit
		decided bool
	}{
		{"all placed", [][]*corev1.Pod{{placed}, {bound}}, fit{n: 2, scheduled: 2}, true},
		{"one refused", [][]*corev1.Pod{{placed}, {refused}, {bound}}, fit{n: 3, scheduled: 2, pod: "b-refused", reason: "Unschedulable", message: "msg Unschedulable"}, true},
		{"first refused by Service order, then name", [][]*corev1.Pod{{refused2, placed}, {refused}}, fit{n: 2, scheduled: 1, pod: "a-refused", reason: "Unschedulable", message: "msg Unschedulable"}, true},
		{"a Service without a pod yet", [][]*corev1.Pod{{refused}, {}}, fit{n: 2, pod: "b-refused", reason: "Unschedulable", message: "msg Unschedulable"}, false},
		{"not tried yet", [][]*corev1.Pod{{refused}, {untried}}, fit{n: 2, pod: "b-refused", reason: "Unschedulable", message: "msg Unschedulable"}, false},
		{"gated is not refused", [][]*corev1.Pod{{gated}, {placed}}, fit{n: 2, scheduled: 1}, false},
		{"a pod there at t0 is not the burst's", [][]*corev1.Pod{{old, placed}}, fit{n: 1, scheduled: 1}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var set []*armRun
			var known []map[types.UID]bool
			for _, pods := range tt.pods {
				idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
				for _, p := range pods {
					if err := idx.Add(p.DeepCopy()); err != nil {
						t.Fatal(err)
					}
				}
				set = append(set, &armRun{obs: &observer{pods: corelisters.NewPodLister(idx).Pods("bench")}})
				known = append(known, map[types.UID]bool{old.UID: true})
			}
			got, decided := scanFit(set, known)
			if got != tt.want || decided != tt.decided {
				t.Errorf("scanFit = %+v, %v; want %+v, %v", got, decided, tt.want, tt.decided)
			}
		})
	}
	f := fit{n: 5, scheduled: 2, pod: "p", reason: "Unschedulable", message: "0/1 nodes are available: 1 Insufficient cpu."}
	if got, want := f.err().Error(), "N=5 does not fit on the cluster at once: 2 of 5 pods scheduled; pod p: Unschedulable: 0/1 nodes are available: 1 Insufficient cpu."; got != want || !errors.Is(f.err(), ErrUnschedulable) {
		t.Errorf("fit error %q, want %q wrapping ErrUnschedulable", got, want)
	}
}
