package knative

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
	"knative.dev/serving/pkg/apis/serving"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"

	"github.com/coldstart-go/coldstart/internal/noise"
	"github.com/coldstart-go/coldstart/prober"
	"github.com/coldstart-go/coldstart/record"
)

func deployment(name string, spec *int32, gen, observed int64, st appsv1.DeploymentStatus) *appsv1.Deployment {
	st.ObservedGeneration = observed
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "bench", Generation: gen,
			Labels: map[string]string{serving.ServiceLabelKey: "coldstart-default"}},
		Spec:   appsv1.DeploymentSpec{Replicas: spec},
		Status: st,
	}
}

func pod(name string, phase corev1.PodPhase, terminating bool) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "bench", UID: types.UID("uid-" + name),
			Labels: map[string]string{serving.ServiceLabelKey: "coldstart-default"}},
		Status: corev1.PodStatus{Phase: phase},
	}
	if terminating {
		now := metav1.Now()
		p.DeletionTimestamp = &now
	}
	return p
}

func TestAtZero(t *testing.T) {
	zero, one := ptr(int32(0)), ptr(int32(1))
	atZero := deployment("r1-deployment", zero, 2, 2, appsv1.DeploymentStatus{})
	tests := []struct {
		name string
		deps []*appsv1.Deployment
		pods []*corev1.Pod
		ok   bool
		why  string
	}{
		{"no deployment", nil, nil, false, "no Deployment yet"},
		{"at zero", []*appsv1.Deployment{atZero}, nil, true, ""},
		{"spec 1", []*appsv1.Deployment{deployment("d", one, 1, 1, appsv1.DeploymentStatus{Replicas: 1})}, nil, false, "deployment d: spec.replicas 1"},
		{"spec unset means 1", []*appsv1.Deployment{deployment("d", nil, 1, 1, appsv1.DeploymentStatus{})}, nil, false, "deployment d: spec.replicas 1"},
		{"status lags spec", []*appsv1.Deployment{deployment("d", zero, 3, 2, appsv1.DeploymentStatus{})}, nil, false,
			"deployment d: status not observed (generation 3, observed 2)"},
		{"status replicas", []*appsv1.Deployment{deployment("d", zero, 3, 3, appsv1.DeploymentStatus{Replicas: 1, AvailableReplicas: 1})}, nil, false,
			"deployment d: status replicas 1 (updated 0, ready 0, available 1)"},
		{"second revision not at zero", []*appsv1.Deployment{atZero, deployment("r2-deployment", one, 1, 1, appsv1.DeploymentStatus{})}, nil, false,
			"deployment r2-deployment: spec.replicas 1"},
		{"pod running", []*appsv1.Deployment{atZero}, []*corev1.Pod{pod("p", corev1.PodRunning, false)}, false, "pod p: Running"},
		{"pod pending", []*appsv1.Deployment{atZero}, []*corev1.Pod{pod("p", corev1.PodPending, false)}, false, "pod p: Pending"},
		{"pod without status", []*appsv1.Deployment{atZero}, []*corev1.Pod{pod("p", "", false)}, false, "pod p: Pending"},
		{"pod terminating", []*appsv1.Deployment{atZero}, []*corev1.Pod{pod("p", corev1.PodRunning, true)}, false, "pod p: Terminating"},
		{"succeeded terminating", []*appsv1.Deployment{atZero}, []*corev1.Pod{pod("p", corev1.PodSucceeded, true)}, false, "pod p: Terminating"},
		{"finished pods", []*appsv1.Deployment{atZero}, []*corev1.Pod{pod("a", corev1.PodSucceeded, false), pod("b", corev1.PodFailed, false)}, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, why := AtZero(tt.deps, tt.pods)
			if ok != tt.ok || why != tt.why {
				t.Errorf("AtZero = %v, %q; want %v, %q", ok, why, tt.ok, tt.why)
			}
		})
	}
}

// podAt builds the pod as a watch event would show it at one step of its
// start.
func podAt(uid string, scheduled, started, ready bool) *corev1.Pod {
	p := pod("coldstart-default-00001-deployment-abc", corev1.PodPending, false)
	p.UID = types.UID(uid)
	cond := func(t corev1.PodConditionType, ok bool) corev1.PodCondition {
		s := corev1.ConditionFalse
		if ok {
			s = corev1.ConditionTrue
		}
		return corev1.PodCondition{Type: t, Status: s}
	}
	p.Status.Conditions = []corev1.PodCondition{cond(corev1.PodScheduled, scheduled), cond(corev1.PodReady, ready)}
	st := corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}
	if started {
		p.Status.Phase = corev1.PodRunning
		st = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{
		// queue-proxy starting first must not count as the server's start
		{Name: queueProxy, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
		{Name: "server", State: st},
	}
	if !started {
		p.Status.ContainerStatuses[0].State = st
	}
	return p
}

func TestPhaseTracker(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	old := pod("old", corev1.PodSucceeded, false)
	qpFirst := podAt("new", true, false, false)
	qpFirst.Status.ContainerStatuses[0].State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	events := []struct {
		at  time.Time
		obj any
	}{
		{at(-5), deployment("d", ptr(int32(1)), 1, 1, appsv1.DeploymentStatus{})}, // before t0: ignored
		{at(1), deployment("d", ptr(int32(0)), 1, 1, appsv1.DeploymentStatus{})},  // still at zero
		{at(2), old}, // existed at t0: ignored
		{at(40), deployment("d", ptr(int32(1)), 2, 1, appsv1.DeploymentStatus{})},
		{at(45), deployment("d", ptr(int32(1)), 2, 2, appsv1.DeploymentStatus{Replicas: 1})},
		{at(52), podAt("new", false, false, false)},
		{at(60), podAt("new", true, false, false)},
		{at(300), qpFirst},
		{at(410), podAt("new", true, true, false)},
		{at(420), podAt("new", true, true, false)},
		{at(455), podAt("new", true, true, true)},
		{at(470), podAt("new", true, true, true)},
	}
	tr := newPhaseTracker(t0, "")
	tr.known[old.UID] = true
	for i, ev := range events {
		tr.observe(ev.at, ev.obj)
		if i == 8 && tr.complete() {
			t.Error("complete before the pod was Ready")
		}
	}
	if !tr.complete() {
		t.Error("not complete after pod Ready")
	}
	want := []prober.Phase{
		{Name: PhaseDeploymentScaled, Ms: 40},
		{Name: PhasePodCreated, Ms: 52},
		{Name: PhasePodScheduled, Ms: 60},
		{Name: PhaseContainerStarted, Ms: 410},
		{Name: PhasePodReady, Ms: 455},
	}
	if d := cmp.Diff(want, tr.phases()); d != "" {
		t.Errorf("phases (-want +got):\n%s", d)
	}
	// A second pod of the same scale-up, never Ready: each pod when
	// first seen and when first seen Ready, the pod that existed at t0
	// not among them.
	second := podAt("second", true, false, false)
	second.Name = "pod-b"
	tr.observe(at(480), second)
	ready := 455.0
	wantPods := []record.PodTime{{Pod: "coldstart-default-00001-deployment-abc", CreatedMs: 52, ReadyMs: &ready}, {Pod: "pod-b", CreatedMs: 480}}
	if d := cmp.Diff(wantPods, tr.podTimes()); d != "" {
		t.Errorf("pods (-want +got):\n%s", d)
	}

	// Named container: queue-proxy running is not the server running.
	tr = newPhaseTracker(t0, "server")
	tr.observe(at(5), qpFirst)
	if _, ok := tr.seen[PhaseContainerStarted]; ok {
		t.Error("container_started from queue-proxy's state")
	}
}

// watchStarted makes the fake client report each watch it opens, so a
// test can act after the informers watch (the fake has no resource
// versions: events between its list and watch would be lost).
func watchStarted(kc *dynamicfake.FakeDynamicClient) <-chan string {
	ch := make(chan string, 16)
	kc.PrependWatchReactor("*", func(a k8stesting.Action) (bool, watch.Interface, error) {
		ch <- a.GetResource().Resource
		return false, nil, nil
	})
	return ch
}

func waitWatches(t *testing.T, ch <-chan string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("only %d of %d watches started", i, n)
		}
	}
}

func TestWaitZeroWithFakeInformers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	d := deployment("coldstart-default-00001-deployment", ptr(int32(1)), 1, 1, appsv1.DeploymentStatus{Replicas: 1, ReadyReplicas: 1})
	p := pod("p1", corev1.PodRunning, false)
	kc := fakeKube(d, p)
	watches := watchStarted(kc)
	c := Clients{Kube: kc}

	obs, err := observe(ctx, c, "bench", "coldstart-default")
	if err != nil {
		t.Fatal(err)
	}
	defer obs.close()
	waitWatches(t, watches, 2)

	var mu sync.Mutex
	var reasons []string
	step := make(chan string, 16)
	done := make(chan error, 1)
	go func() {
		done <- obs.waitZero(ctx, func(why string) {
			mu.Lock()
			reasons = append(reasons, why)
			mu.Unlock()
			step <- why
		})
	}()
	expect := func(want string) {
		t.Helper()
		select {
		case got := <-step:
			if got != want {
				t.Fatalf("waitZero progress %q, want %q", got, want)
			}
		case err := <-done:
			t.Fatalf("waitZero returned %v while waiting for %q", err, want)
		case <-ctx.Done():
			t.Fatalf("no progress %q", want)
		}
	}
	expect("deployment coldstart-default-00001-deployment: spec.replicas 1")
	d.Spec.Replicas = ptr(int32(0))
	d.Generation = 2
	mustUpdate(t, kc.Tracker(), d)
	expect("deployment coldstart-default-00001-deployment: status not observed (generation 2, observed 1)")
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 2}
	mustUpdate(t, kc.Tracker(), d)
	expect("pod p1: Running")
	now := metav1.Now()
	p.DeletionTimestamp = &now
	mustUpdate(t, kc.Tracker(), p)
	expect("pod p1: Terminating")
	if err := kc.Resource(podsResource).Namespace("bench").Delete(ctx, "p1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("waitZero did not return at zero")
	}
}

func mustUpdate(t *testing.T, tr k8stesting.ObjectTracker, obj runtime.Object) {
	t.Helper()
	ns := obj.(metav1.Object).GetNamespace()
	var gvr = map[bool]string{true: "deployments", false: "pods"}
	_, isDep := obj.(*appsv1.Deployment)
	group, version := "", "v1"
	if isDep {
		group = "apps"
	}
	if err := tr.Update(schemaGVR(group, version, gvr[isDep]), unstructuredOf(obj), ns); err != nil {
		t.Fatal(err)
	}
}

// TestScaleFromZeroFake runs the whole measurement against fakes: the probe
// fails until the scripted controller has made the pod Ready.
func TestScaleFromZeroFake(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	d := deployment("coldstart-default-00001-deployment", ptr(int32(0)), 1, 1, appsv1.DeploymentStatus{})
	kc := fakeKube(d)
	watches := watchStarted(kc)
	svc, _ := NewService(testArms()[1], testDeployOptions("bench").Service)
	markStatus(svc, true)
	c := fakeCluster(t, "bench", true, svc)
	c.Kube = kc

	var mu sync.Mutex
	ready := false
	started := false
	var gotTarget, gotAuthority string
	probe := func(ctx context.Context, target, authority string) error {
		mu.Lock()
		defer mu.Unlock()
		gotTarget, gotAuthority = target, authority
		if !started {
			started = true
			waitWatches(t, watches, 2)
			go playScaleUp(t, kc, d, func() { mu.Lock(); ready = true; mu.Unlock() })
		}
		if !ready {
			return errors.New("unavailable")
		}
		return nil
	}
	var samples []prober.Sample
	err := ScaleFromZero(ctx, c, MeasureOptions{
		Namespace: "bench", Service: "coldstart-default", Arm: "default", Budget: "max", Runs: 1,
		Probe: plainProbe(probe), PhaseGrace: 5 * time.Second,
	}, func(s prober.Sample) error { samples = append(samples, s); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if gotTarget != "coldstart-default.bench.svc.cluster.local:80" || gotAuthority != "coldstart-default.bench.example.com" {
		t.Errorf("probed %s with authority %s", gotTarget, gotAuthority)
	}
	if len(samples) != 1 {
		t.Fatalf("got %d samples, want 1", len(samples))
	}
	s := samples[0]
	if s.Arm != "default" || s.Run != 1 || s.Warmup || s.Error != "" || s.Attempts < 2 {
		t.Errorf("sample = %+v", s)
	}
	// Deployments and pods come through separate informers, so only the
	// pod's own phases have a fixed order; each phase appears once.
	got := map[string]float64{}
	for _, p := range s.Phases {
		if _, dup := got[p.Name]; dup {
			t.Errorf("phase %s twice in %+v", p.Name, s.Phases)
		}
		got[p.Name] = p.Ms
	}
	order := []string{PhasePodCreated, PhasePodScheduled, PhaseContainerStarted, PhasePodReady}
	for i, name := range append([]string{PhaseDeploymentScaled, prober.PhaseFirstRPC}, order...) {
		if _, ok := got[name]; !ok {
			t.Errorf("phase %s missing from %+v", name, s.Phases)
		}
		if i > 2 && got[name] < got[order[i-3]] {
			t.Errorf("phase %s before %s: %+v", name, order[i-3], s.Phases)
		}
	}
	if last, _ := s.Phase(prober.PhaseFirstRPC); last != s.FirstRPCMs {
		t.Errorf("first_rpc phase %v != first_rpc_ms %v", last, s.FirstRPCMs)
	}
}

// playScaleUp plays Knative's controllers and the kubelet for one scale
// from zero: Deployment to 1, pod created, scheduled, started, Ready.
func playScaleUp(t *testing.T, kc *dynamicfake.FakeDynamicClient, d *appsv1.Deployment, ready func()) {
	ctx := context.Background()
	d = d.DeepCopy()
	d.Spec.Replicas = ptr(int32(1))
	if _, err := kc.Resource(deploymentsResource).Namespace("bench").Update(ctx, unstructuredOf(d), metav1.UpdateOptions{}); err != nil {
		t.Error(err)
		return
	}
	pods := kc.Resource(podsResource).Namespace("bench")
	if _, err := pods.Create(ctx, unstructuredOf(podAt("pod-1", false, false, false)), metav1.CreateOptions{}); err != nil {
		t.Error(err)
		return
	}
	for _, step := range []*corev1.Pod{podAt("pod-1", true, false, false), podAt("pod-1", true, true, false), podAt("pod-1", true, true, true)} {
		time.Sleep(5 * time.Millisecond)
		if _, err := pods.UpdateStatus(ctx, unstructuredOf(step), metav1.UpdateOptions{}); err != nil {
			t.Error(err)
			return
		}
	}
	ready()
}

func schemaGVR(group, version, resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: group, Version: version, Resource: resource}
}

func TestScaleFromZeroFailures(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	svc, _ := NewService(testArms()[1], testDeployOptions("bench").Service)
	markStatus(svc, true)
	never := func(context.Context, string, string) error { return errors.New("unavailable") }
	o := MeasureOptions{Namespace: "bench", Service: "coldstart-default", Arm: "default", Runs: 1,
		Probe: plainProbe(never), ProbeTimeout: 50 * time.Millisecond, ZeroTimeout: 200 * time.Millisecond, PhaseGrace: time.Millisecond}

	// At zero, but nothing ever answers: one sample with the error, no phases.
	c := fakeCluster(t, "bench", true, svc)
	c.Kube = fakeKube(deployment("coldstart-default-00001-deployment", ptr(int32(0)), 1, 1, appsv1.DeploymentStatus{}))
	var samples []prober.Sample
	var rounds []string
	o.Noise = func(scope string, w noise.Window) error {
		if w.Seconds <= 0 {
			t.Errorf("noise window %s: %+v, want a duration", scope, w)
		}
		rounds = append(rounds, scope)
		return nil
	}
	if err := ScaleFromZero(ctx, c, o, func(s prober.Sample) error { samples = append(samples, s); return nil }); err != nil {
		t.Fatal(err)
	}
	o.Noise = nil
	if len(samples) != 1 || !strings.Contains(samples[0].Error, "no healthy reply") || len(samples[0].Phases) != 0 || samples[0].Attempts < 1 {
		t.Errorf("samples = %+v, want one with the error and no phases", samples)
	}
	// What else the machine did is recorded per round, a failed start's too.
	if len(rounds) != 1 || rounds[0] != "round 1" {
		t.Errorf("noise rounds %q, want [round 1]", rounds)
	}

	// Never at zero: the wait gives up and says what it waited for.
	c.Kube = fakeKube(deployment("coldstart-default-00001-deployment", ptr(int32(1)), 1, 1, appsv1.DeploymentStatus{Replicas: 1}))
	err := ScaleFromZero(ctx, c, o, func(prober.Sample) error { t.Error("recorded a sample without reaching zero"); return nil })
	if err == nil || !strings.Contains(err.Error(), "wait for zero") || !strings.Contains(err.Error(), "spec.replicas 1") {
		t.Errorf("ScaleFromZero never at zero = %v", err)
	}

	// A Service that does not exist.
	o.Service = "nope"
	if err := ScaleFromZero(ctx, c, o, nil); err == nil || !strings.Contains(err.Error(), "bench/nope") {
		t.Errorf("ScaleFromZero(missing service) = %v", err)
	}
}

// TestScaleFromZeroViaActivator: with Activator set, each probe dials the
// given activator address with the latest ready revision's cluster-local
// host as :authority (the activator routes on it; there is no ingress).
func TestScaleFromZeroViaActivator(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	d := deployment("coldstart-default-00001-deployment", ptr(int32(0)), 1, 1, appsv1.DeploymentStatus{})
	svc, _ := NewService(testArms()[1], testDeployOptions("bench").Service)
	markStatus(svc, true)
	c := fakeCluster(t, "bench", true, svc)
	c.Kube = fakeKube(d)
	var gotTarget, gotAuthority string
	probe := func(_ context.Context, target, authority string) error {
		gotTarget, gotAuthority = target, authority
		return nil
	}
	o := MeasureOptions{Namespace: "bench", Service: "coldstart-default", Runs: 1, Activator: true,
		Target: "10.234.0.31:81", Probe: plainProbe(probe), PhaseGrace: time.Millisecond}
	if err := ScaleFromZero(ctx, c, o, func(prober.Sample) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if gotTarget != "10.234.0.31:81" || gotAuthority != "coldstart-default-00001.bench.svc.cluster.local" {
		t.Errorf("probed %s with :authority %s, want the activator with the revision's host", gotTarget, gotAuthority)
	}

	o.Target = ""
	if err := ScaleFromZero(ctx, c, o, nil); !errors.Is(err, ErrNoTarget) {
		t.Errorf("activator without a target: %v, want ErrNoTarget", err)
	}
	notReady, _ := NewService(testArms()[1], testDeployOptions("bench").Service)
	markStatus(notReady, false)
	c = fakeCluster(t, "bench", true, notReady)
	o.Target = "10.234.0.31:81"
	if err := ScaleFromZero(ctx, c, o, nil); !errors.Is(err, ErrNoTarget) || !strings.Contains(err.Error(), "no ready revision") {
		t.Errorf("activator, no ready revision: %v, want ErrNoTarget naming it", err)
	}
}

// TestInterleavedRotates: each round starts one Service later, so that
// no Service is always the first start of a round.
func TestInterleavedRotates(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var objs []runtime.Object
	var svcs []*servingv1.Service
	var opts []MeasureOptions
	var mu sync.Mutex
	var order []string
	for _, arm := range []string{"a", "b", "c"} {
		d := deployment("coldstart-"+arm+"-00001-deployment", ptr(int32(0)), 1, 1, appsv1.DeploymentStatus{})
		d.Labels[serving.ServiceLabelKey] = "coldstart-" + arm
		objs = append(objs, d)
		svc, _ := NewService(Arm{Name: arm, Image: "r.example/x@" + testDigest}, testDeployOptions("bench").Service)
		markStatus(svc, true)
		svcs = append(svcs, svc)
		opts = append(opts, MeasureOptions{Namespace: "bench", Service: svc.Name, Arm: arm, Budget: "max", Runs: 2, Warmup: true,
			PhaseGrace: time.Millisecond, Probe: plainProbe(func(context.Context, string, string) error {
				mu.Lock()
				order = append(order, arm)
				mu.Unlock()
				return nil
			})})
	}
	c := fakeCluster(t, "bench", true, svcs...)
	c.Kube = fakeKube(objs...)
	err := ScaleFromZeroInterleaved(ctx, c, opts, func(prober.Sample) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(order, ""); got != "abcbcacab" {
		t.Errorf("probe order by round = %s, want abc bca cab", got)
	}
}
