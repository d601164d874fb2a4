package knative

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/pkg/apis"
	"knative.dev/serving/pkg/apis/autoscaling"
	"knative.dev/serving/pkg/apis/config"
	autoscalerconfig "knative.dev/serving/pkg/autoscaler/config"

	"github.com/coldstart-go/coldstart/record"
)

// TestReplayServices: each policy's Service is the arm's deployed one
// (image, container, pod spec) under ARM-replayK with every autoscaling
// annotation the policy sets spelled out, labelled so that deploy
// --delete --arms ARM finds it, and Knative's own defaulting and
// validation take it.
func TestReplayServices(t *testing.T) {
	base, err := NewService(testArms()[1], DefaultServiceOptions())
	if err != nil {
		t.Fatal(err)
	}
	pols := []Autoscaling{
		{Window: 6 * time.Second, Target: 100, Utilization: 70},
		{Window: 20 * time.Second, Delay: 30 * time.Second, Retention: time.Minute, Target: 10, Utilization: 50},
	}
	svcs, err := ReplayServices(base, "coldstart-", "default", pols)
	if err != nil {
		t.Fatal(err)
	}
	if len(svcs) != 2 {
		t.Fatalf("%d services, want 2", len(svcs))
	}
	want := []map[string]string{
		{"window": "6s", "scale-down-delay": "0s", "scale-to-zero-pod-retention-period": "0s", "min-scale": "0", "initial-scale": "0", "target": "100", "target-utilization-percentage": "70"},
		{"window": "20s", "scale-down-delay": "30s", "scale-to-zero-pod-retention-period": "1m0s", "min-scale": "0", "initial-scale": "0", "target": "10", "target-utilization-percentage": "50"},
	}
	for i, s := range svcs {
		name := "coldstart-default-replay" + string(rune('1'+i))
		if s.Name != name || s.Labels[LabelArm] != "default" || s.Labels[LabelManagedBy] != ManagedBy || s.Labels[LabelReplay] == "" {
			t.Errorf("service %s labels %v; want %s with arm default, managed by coldstart, a replay number", s.Name, s.Labels, name)
		}
		if got, want := s.Spec.Template.Spec.PodSpec.String(), base.Spec.Template.Spec.PodSpec.String(); got != want {
			t.Errorf("%s pod spec differs from the arm's:\n%s\n%s", s.Name, got, want)
		}
		for k, v := range want[i] {
			if got := s.Spec.Template.Annotations[autoscaling.GroupName+"/"+k]; got != v {
				t.Errorf("%s %s = %q, want %q", s.Name, k, got, v)
			}
		}
		// What deploy set and the policy does not name stays.
		if s.Spec.Template.Annotations[autoscaling.TargetBurstCapacityKey] != "0" {
			t.Errorf("%s lost target-burst-capacity: %v", s.Name, s.Spec.Template.Annotations)
		}
		ac, _ := autoscalerconfig.NewConfigFromMap(map[string]string{"allow-zero-initial-scale": "true"})
		fc, _ := config.NewFeaturesConfigFromMap(nil)
		ctx := apis.WithinCreate(config.ToContext(context.Background(), &config.Config{Autoscaler: ac, Features: fc}))
		cp := s.DeepCopy()
		cp.SetDefaults(ctx)
		if fe := cp.Validate(ctx).Filter(apis.ErrorLevel); fe != nil {
			t.Errorf("%s: Knative's Validate: %v", s.Name, fe)
		}
	}
	foreign := base.DeepCopy()
	delete(foreign.Labels, LabelManagedBy)
	if _, err := ReplayServices(foreign, "coldstart-", "default", pols); err == nil || !strings.Contains(err.Error(), "coldstart deploy made") {
		t.Errorf("a Service coldstart did not make: err %v", err)
	}
}

// TestDeployReplay: replay's Services are made from the arm's deployed
// Service and waited for; an arm without one is named with what to do;
// deploy --delete --arms removes them with the arm's.
func TestDeployReplay(t *testing.T) {
	ctx := context.Background()
	c := fakeCluster(t, "bench", true)
	fakeController(c, always(true))
	if _, err := DeployReplay(ctx, c, "bench", "coldstart-", "default", []Autoscaling{{Window: 6 * time.Second, Target: 100, Utilization: 70}}, time.Second, nil); err == nil ||
		!strings.Contains(err.Error(), "deploy it first with coldstart deploy --arms default") {
		t.Errorf("no arm Service: err %v", err)
	}
	if _, err := Deploy(ctx, c, testArms(), testDeployOptions("bench")); err != nil {
		t.Fatal(err)
	}
	names, err := DeployReplay(ctx, c, "bench", "coldstart-", "default", []Autoscaling{{Window: 6 * time.Second, Target: 100, Utilization: 70}, {Window: 20 * time.Second, Target: 100, Utilization: 70}}, 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(names, " ") != "coldstart-default-replay1 coldstart-default-replay2" {
		t.Errorf("made %v", names)
	}
	deleted, err := Delete(ctx, c, "bench", []string{"default"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(deleted, " ") != "coldstart-default coldstart-default-replay1 coldstart-default-replay2" {
		t.Errorf("delete default: %v", deleted)
	}
}

// TestReplayTotals: a request sent with no Ready pod is cold when it
// waited (slower than the warm requests' p99) or got no answer; one
// answered in warm time is counted apart, the watch's Ready having
// trailed the activator. Requests sent with no pod at all are the
// starts the simulator draws. Pods count from appearing to their
// deletion, their drain from deletion to gone, both cut at the end.
func TestReplayTotals(t *testing.T) {
	res := ReplayResult{
		Target: ReplayTarget{Policy: "knative:window=6s", Service: "s"},
		Requests: []record.ReplayRequest{
			{Index: 0, Cold: true, LatencyMs: 800},          // a scale from zero
			{Index: 1, ReadyPods: 1, Pods: 1, LatencyMs: 5}, // warm
			{Index: 2, ReadyPods: 1, Pods: 1, LatencyMs: 9}, // warm: the p99 bound
			{Index: 3, Cold: true, Error: "deadline"},       // waited, no answer
			{Index: 4, Cold: true, Pods: 1, LatencyMs: 300}, // waited for a starting pod
			{Index: 5, Cold: true, Pods: 1, LatencyMs: 7},   // the activator had the pod: warm
			{Index: 6, Cold: true, LatencyMs: 700},          // a scale from zero
		},
		Pods: []record.ReplayPod{
			{Pod: "a", SeenS: 1, ReadyS: 2, DeletingS: 21, GoneS: 51},
			{Pod: "b", SeenS: 90, ReadyS: 91, DeletingS: -1, GoneS: -1}, // up at the end
			{Pod: "c", SeenS: 60, ReadyS: 61, DeletingS: 95, GoneS: -1}, // draining at the end
		},
	}
	rp, starts := ReplayTotals(res, 100)
	if rp.Requests != 7 || rp.ColdByWatch != 5 || rp.AnsweredWarm != 1 || rp.Cold != 4 || rp.Errors != 1 || rp.Starts != 3 || rp.WarmBoundMs != 9 {
		t.Errorf("counts %+v: want 7 requests, 5 cold by the watch, 1 answered warm, 4 cold, 1 error, 3 starts, bound 9 ms", rp)
	}
	if len(starts) != 2 || starts[0] != 800 || starts[1] != 700 {
		t.Errorf("starts %v, want the answered scales from zero [800 700]", starts)
	}
	if rp.ColdMedianMs != 700 {
		t.Errorf("cold median %g, want 700 of [800 300 700]", rp.ColdMedianMs)
	}
	if rp.PodSeconds != 20+10+35 || rp.DrainSeconds != 30+5 {
		t.Errorf("pod seconds %g (want 65), drain %g (want 35)", rp.PodSeconds, rp.DrainSeconds)
	}
}

// TestPodLives: a replay's pod lives come from the Service's observer:
// a pod's appearance, its Ready, its deletion asked for and its going,
// in that order, and the counts a request reads at each step.
func TestPodLives(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	kc := fakeKube()
	watches := watchStarted(kc)
	obs, err := observe(ctx, Clients{Kube: kc}, "bench", "coldstart-default")
	if err != nil {
		t.Fatal(err)
	}
	defer obs.close()
	waitWatches(t, watches, 2)
	lives := &podLives{t0: time.Now(), life: map[string]*record.ReplayPod{}}
	obs.setOnPod(lives.event)

	// until waits for the observer's cache to show want (ready, pods).
	until := func(step string, ready, pods int) {
		t.Helper()
		for {
			r, n := podCounts(obs)
			if r == ready && n == pods {
				return
			}
			select {
			case <-ctx.Done():
				t.Fatalf("%s: counts %d ready of %d, want %d of %d", step, r, n, ready, pods)
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	p := pod("p1", corev1.PodPending, false)
	if err := kc.Tracker().Create(podsResource, unstructuredOf(p), "bench"); err != nil {
		t.Fatal(err)
	}
	until("created", 0, 1)
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	mustUpdate(t, kc.Tracker(), p)
	until("ready", 1, 1)
	now := metav1.Now()
	p.DeletionTimestamp = &now
	mustUpdate(t, kc.Tracker(), p)
	until("terminating", 0, 0)
	if err := kc.Resource(podsResource).Namespace("bench").Delete(ctx, "p1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		l := lives.pods("knative:window=6s", "coldstart-default")
		if len(l) == 1 && l[0].GoneS >= 0 {
			if x := l[0]; !(0 <= x.SeenS && x.SeenS <= x.ReadyS && x.ReadyS <= x.DeletingS && x.DeletingS <= x.GoneS) || x.Policy != "knative:window=6s" || x.Pod != "p1" {
				t.Errorf("life %+v: want seen ≤ ready ≤ deleting ≤ gone, all from t0", x)
			}
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("lives %+v: want p1 gone", l)
		case <-time.After(5 * time.Millisecond):
		}
	}
}
