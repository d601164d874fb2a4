package knative

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"
	"knative.dev/serving/pkg/apis/autoscaling"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"

	"github.com/coldstart-go/coldstart/pull"
	"github.com/coldstart-go/coldstart/record"
)

// revisionController stands in for Knative's controller: every update of
// a Service is a new revision, ready at once (initial-scale 0 starts no
// pod), named NAME-0000N as Knative names them.
func revisionController(c Clients) {
	sc := c.Serving.(fakeServing).cs
	gvr := servingv1.SchemeGroupVersion.WithResource("services")
	n := map[string]int{}
	sc.PrependReactor("update", "services", func(a k8stesting.Action) (bool, runtime.Object, error) {
		s := a.(k8stesting.UpdateAction).GetObject().(*servingv1.Service).DeepCopy()
		n[s.Name]++
		rev := fmt.Sprintf("%s-%05d", s.Name, n[s.Name]+1)
		s.Status.LatestCreatedRevisionName, s.Status.LatestReadyRevisionName = rev, rev
		s.Status.Conditions = duckv1.Conditions{{Type: apis.ConditionReady, Status: corev1.ConditionTrue}}
		return true, s, sc.Tracker().Update(gvr, s, a.GetNamespace())
	})
}

// kubeletPull fetches ref as a node that never ran it does: manifest,
// config and every layer.
func kubeletPull(t *testing.T, ref string) {
	t.Helper()
	n, err := pull.NewNode(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if _, err := n.Pull(context.Background(), ref); err != nil {
		t.Fatal(err)
	}
}

// leverService is the default arm's variant under l in namespace bench,
// as deploy makes it.
func leverService(t *testing.T, l Lever) *servingv1.Service {
	t.Helper()
	a := testArms()[1]
	a.Lever = &l
	svc, err := NewService(a, DefaultServiceOptions())
	if err != nil {
		t.Fatal(err)
	}
	svc.Namespace = "bench"
	return svc
}

// TestImageRoll: before each start a pull lever's variant is rolled to a
// new revision whose image the registry serves by digest; pull=BANDWIDTH
// gets an image no earlier round had, pull=cached the same one each round;
// each start's proof counts only a start that pulled all of it (or, for
// cached, none of it).
func TestImageRoll(t *testing.T) {
	// A small binary: the images are pulled at 100 Mbit/s.
	self, err := exec.LookPath("true")
	if err != nil {
		t.Fatal(err)
	}
	src, err := pull.BuildVariant(pull.Binary{Arm: "static", Path: self},
		record.PullVariant{Arm: "static", Compression: record.Gzip, Layering: record.SplitLayers}, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, lever := range []string{"pull=100Mbit", "pull=cached"} {
		t.Run(lever, func(t *testing.T) {
			ctx := context.Background()
			l, err := ParseLever(lever)
			if err != nil {
				t.Fatal(err)
			}
			svc := leverService(t, l)
			c := fakeCluster(t, "bench", true, svc)
			revisionController(c)
			regs := pullRegistries{}
			defer regs.close()
			reg, err := regs.get(l.pullBandwidth())
			if err != nil {
				t.Fatal(err)
			}
			if again, _ := regs.get(l.pullBandwidth()); again != reg {
				t.Error("a second lever at the same bandwidth got another registry")
			}
			r, err := newImageRoll(c, "bench", svc.Name, l, src, reg)
			if err != nil {
				t.Fatal(err)
			}
			cached := l.value == pullCached
			var refs, revs []string
			for run := 0; run <= 2; run++ {
				if err := r.next(ctx, run); err != nil {
					t.Fatal(err)
				}
				got, err := c.Serving.Services("bench").Get(ctx, svc.Name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				img := got.Spec.Template.Spec.Containers[0].Image
				if img != r.ref || !strings.HasPrefix(img, reg.Host()+"/coldstart/"+svc.Name+"@sha256:") {
					t.Errorf("run %d: service runs %s, want %s by digest from %s", run, img, r.ref, reg.Host())
				}
				if v := got.Spec.Template.Annotations[AnnotationRound]; v != fmt.Sprint(run) {
					t.Errorf("run %d: %s = %q", run, AnnotationRound, v)
				}
				if got.Spec.Template.Annotations[autoscaling.InitialScaleAnnotationKey] != "0" {
					t.Errorf("run %d: initial-scale %q", run, got.Spec.Template.Annotations[autoscaling.InitialScaleAnnotationKey])
				}
				refs, revs = append(refs, r.ref), append(revs, r.revision)

				// Counted starts: with no pull, and then with one.
				warmup := run == 0
				if warmup {
					kubeletPull(t, r.ref) // the warm-up pulls in both
					p, bad := r.proof(true)
					if bad != "" || p.ServedBytes < p.Bytes {
						t.Errorf("warm-up: %+v, %q", p, bad)
					}
					continue
				}
				p, bad := r.proof(false)
				if cached != (bad == "") {
					t.Errorf("run %d without a pull: proof %+v, %q", run, p, bad)
				}
				if !cached && !strings.Contains(bad, "not a pulled start: the registry sent 0 of the image's") {
					t.Errorf("run %d: %q", run, bad)
				}
				kubeletPull(t, r.ref)
				p, bad = r.proof(false)
				if cached == (bad == "") {
					t.Errorf("run %d with a pull: proof %+v, %q", run, p, bad)
				}
				if cached && !strings.Contains(bad, "not a cached start") {
					t.Errorf("run %d: %q", run, bad)
				}
				wantBW := "100Mbit"
				if cached {
					wantBW = "cached"
				}
				if p.Bandwidth != wantBW || p.Image != r.ref {
					t.Errorf("run %d: proof %+v", run, p)
				}
				// Released, a pulled start's image leaves the registry's
				// memory; the cached one stays to be started again.
				if err := r.release(ctx); err != nil {
					t.Fatal(err)
				}
				n, err := pull.NewNode(t.TempDir())
				if err != nil {
					t.Fatal(err)
				}
				_, err = n.Pull(ctx, r.ref)
				n.Close()
				if cached != (err == nil) {
					t.Errorf("run %d: pull after release: %v", run, err)
				}
			}
			for i := 1; i < len(revs); i++ {
				if revs[i] == revs[i-1] {
					t.Errorf("runs %d and %d both ran revision %s", i-1, i, revs[i])
				}
				if same := refs[i] == refs[i-1]; same != cached {
					t.Errorf("runs %d and %d: images %s and %s", i-1, i, refs[i-1], refs[i])
				}
			}
		})
	}
}

// TestPullLeverChecks: a pull lever is refused on a cluster that does not
// allow initial-scale 0 (deploy, before anything is made), whose nodes
// are not this machine, or whose variant would start a pod at a new
// revision (run, before any probe).
func TestPullLeverChecks(t *testing.T) {
	ctx := context.Background()
	l, err := ParseLever("pull=10Mbit")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("deploy without allow-zero-initial-scale", func(t *testing.T) {
		c := fakeCluster(t, "bench", true)
		fakeController(c, always(true))
		_, err := Deploy(ctx, c, WithLevers(testArms()[1:], []Lever{l}), testDeployOptions("bench"))
		if err == nil || !strings.Contains(err.Error(), `allow-zero-initial-scale: "true" in knative-serving/config-autoscaler`) {
			t.Errorf("Deploy = %v", err)
		}
		if n := serviceNames(t, c, "bench"); len(n) != 0 {
			t.Errorf("refused deploy left services %v", n)
		}
	})
	node := func(addr string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-" + addr},
			Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: addr}}}}
	}
	for _, tt := range []struct {
		addr, want string
	}{
		{"127.0.0.1", ""},
		{"203.0.113.7", "node node-203.0.113.7 (203.0.113.7) is not this machine"},
	} {
		c := fakeCluster(t, "bench", true)
		if err := c.Kube.(*dynamicfake.FakeDynamicClient).Tracker().Add(unstructuredOf(node(tt.addr))); err != nil {
			t.Fatal(err)
		}
		err := checkNodesHere(ctx, c, l)
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("node %s: checkNodesHere = %v, want %q", tt.addr, err, tt.want)
		}
	}
	t.Run("variant starts a pod at a new revision", func(t *testing.T) {
		svc := leverService(t, l)
		svc.Spec.Template.Annotations[autoscaling.InitialScaleAnnotationKey] = "1"
		c := fakeCluster(t, "bench", true, svc)
		if err := c.Kube.(*dynamicfake.FakeDynamicClient).Tracker().Add(unstructuredOf(node("127.0.0.1"))); err != nil {
			t.Fatal(err)
		}
		cs := ColdStart{Clients: c, Namespace: "bench", Arms: []string{"default"}, NamePrefix: "coldstart-", Runs: 1, Levers: []Lever{l}}
		_, err := cs.Run(ctx, func(record.Sample) error { t.Error("a sample was recorded"); return nil })
		if err == nil || !strings.Contains(err.Error(), `has initial-scale "1", so each new revision would start a pod`) {
			t.Errorf("Run = %v", err)
		}
	})
}

// TestImageRollWaitsForNewRevision: a Service that still reads Ready at
// the revision the last run started (the controller has not caught up,
// or a cached read) is waited on, not taken: each run gets the revision
// its roll made.
func TestImageRollWaitsForNewRevision(t *testing.T) {
	ctx := context.Background()
	l, err := ParseLever("pull=cached")
	if err != nil {
		t.Fatal(err)
	}
	svc := leverService(t, l)
	c := fakeCluster(t, "bench", true, svc)
	revisionController(c)
	sc := c.Serving.(fakeServing).cs
	stale := 0
	var old *servingv1.Service
	sc.PrependReactor("get", "services", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if stale > 0 && old != nil {
			stale--
			return true, old.DeepCopy(), nil
		}
		return false, nil, nil
	})
	src, err := pull.BuildVariant(pull.Binary{Arm: "static", Path: "/bin/true"},
		record.PullVariant{Arm: "static", Compression: record.Gzip, Layering: record.SingleLayer}, 1)
	if err != nil {
		t.Fatal(err)
	}
	regs := pullRegistries{}
	defer regs.close()
	reg, err := regs.get(pull.Max)
	if err != nil {
		t.Fatal(err)
	}
	r, err := newImageRoll(c, "bench", svc.Name, l, src, reg)
	if err != nil {
		t.Fatal(err)
	}
	var revs []string
	for run := 0; run <= 2; run++ {
		// What a read showed before this roll: Ready, at the last revision.
		cur, err := c.Serving.Services("bench").Get(ctx, svc.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		old, stale = cur, 5
		if err := r.next(ctx, run); err != nil {
			t.Fatal(err)
		}
		if stale != 0 {
			t.Errorf("run %d: the roll returned with %d stale reads left", run, stale)
		}
		revs = append(revs, r.revision)
	}
	want := []string{svc.Name + "-00002", svc.Name + "-00003", svc.Name + "-00004"}
	if strings.Join(revs, " ") != strings.Join(want, " ") {
		t.Errorf("revisions %v, want %v", revs, want)
	}
}

// TestLeverBaseline: a pulled variant is compared against the cached one
// when both are measured (the pull's own cost), else against its arm, as
// every other lever and the cached variant are.
func TestLeverBaseline(t *testing.T) {
	levers, err := ParseLevers([]string{"no-token", "pull=100Mbit", "pull=cached", "pull=max"})
	if err != nil {
		t.Fatal(err)
	}
	cs := ColdStart{Levers: levers}
	want := []string{"static", "static-pull-cached", "static", "static-pull-cached"}
	for i, l := range levers {
		if got := cs.leverBaseline("static", l); got != want[i] {
			t.Errorf("%s: against %s, want %s", l.Name, got, want[i])
		}
	}
	alone := ColdStart{Levers: levers[1:2]}
	if got := alone.leverBaseline("static", levers[1]); got != "static" {
		t.Errorf("pull=100Mbit without pull=cached: against %s, want static", got)
	}
}
