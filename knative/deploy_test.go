package knative

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"
	servingfake "knative.dev/serving/pkg/client/clientset/versioned/fake"
	servingclient "knative.dev/serving/pkg/client/clientset/versioned/typed/serving/v1"
)

// kubeScheme has the kinds the fake Kubernetes client serves: core/v1,
// apps/v1 and node/v1.
var kubeScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, nodev1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}()

// fakeKube is a fake Kubernetes (dynamic) client holding objs.
func fakeKube(objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClient(kubeScheme, objs...)
}

// unstructuredOf is obj, a core/v1 or apps/v1 object, as the dynamic
// client sends and stores it.
func unstructuredOf(obj runtime.Object) *unstructured.Unstructured {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		panic(err)
	}
	gvks, _, err := kubeScheme.ObjectKinds(obj)
	if err != nil {
		panic(err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvks[0])
	return u
}

// fakeServing is Knative's fake typed client with the clientset it is
// part of, whose tracker fakeController writes to.
type fakeServing struct {
	servingclient.ServingV1Interface
	cs *servingfake.Clientset
}

// fakeCluster is a Kubernetes and Knative fake with namespace ns and, when
// knative is set, the serving.knative.dev/v1 Service kind served (else
// listing Services is NotFound, as on an API server without the CRD).
func fakeCluster(t *testing.T, ns string, knative bool, objs ...*servingv1.Service) Clients {
	t.Helper()
	kc := fakeKube(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	sc := servingfake.NewSimpleClientset()
	if !knative {
		sc.PrependReactor("list", "services", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewNotFound(servingv1.Resource("services"), "")
		})
	}
	for _, o := range objs {
		if _, err := sc.ServingV1().Services(o.Namespace).Create(context.Background(), o, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return Clients{Kube: kc, Serving: fakeServing{sc.ServingV1(), sc}}
}

// fakeController stands in for Knative's controller on the fake clientset:
// every Service is stored with the status the controller would write,
// ready or failing. (A watching controller would race the fake's watches,
// which have no resource versions to resume from.)
func fakeController(c Clients, ready func(name string) bool) {
	sc := c.Serving.(fakeServing).cs
	gvr := servingv1.SchemeGroupVersion.WithResource("services")
	sc.PrependReactor("create", "services", func(a k8stesting.Action) (bool, runtime.Object, error) {
		s := a.(k8stesting.CreateAction).GetObject().(*servingv1.Service).DeepCopy()
		markStatus(s, ready(s.Name))
		return true, s, sc.Tracker().Create(gvr, s, a.GetNamespace())
	})
	sc.PrependReactor("update", "services", func(a k8stesting.Action) (bool, runtime.Object, error) {
		s := a.(k8stesting.UpdateAction).GetObject().(*servingv1.Service).DeepCopy()
		markStatus(s, ready(s.Name))
		return true, s, sc.Tracker().Update(gvr, s, a.GetNamespace())
	})
}

func always(ready bool) func(string) bool { return func(string) bool { return ready } }

// markStatus writes what Knative's controller would: Ready with URLs, or
// Ready=False with a reason.
func markStatus(s *servingv1.Service, ready bool) {
	s.Status.ObservedGeneration = s.Generation
	s.Status.LatestCreatedRevisionName = s.Name + "-00001"
	if ready {
		s.Status.LatestReadyRevisionName = s.Name + "-00001"
		s.Status.URL = &apis.URL{Scheme: "http", Host: s.Name + "." + s.Namespace + ".example.com"}
		s.Status.Address = &duckv1.Addressable{URL: &apis.URL{Scheme: "http", Host: s.Name + "." + s.Namespace + ".svc.cluster.local"}}
		s.Status.Conditions = duckv1.Conditions{{Type: apis.ConditionReady, Status: corev1.ConditionTrue}}
		return
	}
	s.Status.Conditions = duckv1.Conditions{
		{Type: "ConfigurationsReady", Status: corev1.ConditionFalse, Reason: "RevisionFailed", Message: "Revision \"x-00001\" failed: image pull back-off"},
		{Type: apis.ConditionReady, Status: corev1.ConditionFalse, Reason: "RevisionFailed", Message: "image pull back-off"},
	}
}

func serviceNames(t *testing.T, c Clients, ns string) []string {
	t.Helper()
	l, err := c.Serving.Services(ns).List(context.Background(), metav1.ListOptions{})
	if apierrors.IsNotFound(err) { // no Service kind, no Services
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range l.Items {
		names = append(names, s.Name)
	}
	sort.Strings(names)
	return names
}

func testDeployOptions(ns string) DeployOptions {
	o := DeployOptions{Service: DefaultServiceOptions(), Timeout: 10 * time.Second}
	o.Service.Namespace = ns
	return o
}

func TestDeployCreatesThenUpdates(t *testing.T) {
	ctx := context.Background()
	c := fakeCluster(t, "bench", true)
	fakeController(c, always(true))
	o := testDeployOptions("bench")

	got, err := Deploy(ctx, c, testArms(), o)
	if err != nil {
		t.Fatal(err)
	}
	want := []Deployed{
		{Arm: "default", Service: "coldstart-default", Namespace: "bench", Created: true, Ready: true,
			URL: "http://coldstart-default.bench.example.com", Address: "http://coldstart-default.bench.svc.cluster.local", Revision: "coldstart-default-00001"},
		{Arm: "upx", Service: "coldstart-upx", Namespace: "bench", Created: true, Ready: true,
			URL: "http://coldstart-upx.bench.example.com", Address: "http://coldstart-upx.bench.svc.cluster.local", Revision: "coldstart-upx-00001"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Deploy (-want +got):\n%s", d)
	}
	// No allow-zero-initial-scale in the cluster: auto resolves to 1.
	s, err := c.Serving.Services("bench").Get(ctx, "coldstart-upx", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	so := o.Service
	so.InitialScale = 1
	wantSvc, _ := NewService(testArms()[0], so)
	if d := cmp.Diff(wantSvc.Spec, s.Spec); d != "" {
		t.Errorf("stored spec (-want +got):\n%s", d)
	}

	// Second deploy: same names, updated in place, with the new window.
	o.Service.Window = 30 * time.Second
	got, err = Deploy(ctx, c, testArms(), o)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range got {
		if d.Created {
			t.Errorf("second deploy created %s, want an update", d.Service)
		}
	}
	s, _ = c.Serving.Services("bench").Get(ctx, "coldstart-upx", metav1.GetOptions{})
	if w := s.Spec.Template.Annotations["autoscaling.knative.dev/window"]; w != "30s" {
		t.Errorf("window after update = %q, want 30s", w)
	}
}

func TestDeployZeroInitialScaleWhereAllowed(t *testing.T) {
	ctx := context.Background()
	c := fakeCluster(t, "bench", true)
	_, err := c.Kube.Resource(configMapsResource).Namespace(KnativeNamespace).Create(ctx, unstructuredOf(&corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "config-autoscaler", Namespace: KnativeNamespace},
		Data:       map[string]string{"allow-zero-initial-scale": "true"},
	}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	o := testDeployOptions("bench")
	o.Timeout = 0 // no controller: do not wait
	if _, err := Deploy(ctx, c, testArms()[:1], o); err != nil {
		t.Fatal(err)
	}
	s, _ := c.Serving.Services("bench").Get(ctx, "coldstart-upx", metav1.GetOptions{})
	if v := s.Spec.Template.Annotations["autoscaling.knative.dev/initial-scale"]; v != "0" {
		t.Errorf("initial-scale = %q, want 0 where the cluster allows it", v)
	}
}

func TestDeployFailuresLeaveNothing(t *testing.T) {
	foreign := &servingv1.Service{ObjectMeta: metav1.ObjectMeta{Name: "coldstart-upx", Namespace: "bench", Labels: map[string]string{"team": "x"}}}
	tests := []struct {
		name      string
		knative   bool
		ns        string
		existing  []*servingv1.Service
		arms      []Arm
		ready     bool
		want      error
		msg       []string
		remaining []string
	}{
		{name: "knative missing", knative: false, ns: "bench", arms: testArms(), want: ErrNoKnative, msg: []string{"serving.knative.dev/v1"}},
		{name: "namespace missing", knative: true, ns: "nope", arms: testArms(), want: ErrNoNamespace, msg: []string{`namespace "nope"`}},
		{name: "image without digest", knative: true, ns: "bench", want: ErrNoDigest, msg: []string{"arm default", "echo:latest"},
			arms: []Arm{{Name: "upx", Image: "echo@" + testDigest}, {Name: "default", Image: "echo:latest"}}},
		{name: "someone else's service", knative: true, ns: "bench", existing: []*servingv1.Service{foreign}, arms: testArms(),
			want: ErrNotOurs, msg: []string{"bench/coldstart-upx"}, remaining: []string{"coldstart-upx"}},
		{name: "never ready", knative: true, ns: "bench", arms: testArms(), ready: false,
			want: ErrNotReady, msg: []string{"coldstart-default", "Ready=False (RevisionFailed: image pull back-off)", "waited"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fakeCluster(t, "bench", tt.knative, tt.existing...)
			fakeController(c, always(tt.ready))
			o := testDeployOptions(tt.ns)
			o.Timeout = 500 * time.Millisecond
			_, err := Deploy(context.Background(), c, tt.arms, o)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Deploy = %v, want %v", err, tt.want)
			}
			for _, m := range tt.msg {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("Deploy error %q does not contain %q", err, m)
				}
			}
			if d := cmp.Diff(tt.remaining, serviceNames(t, c, "bench")); d != "" {
				t.Errorf("services left after the failure (-want +got):\n%s", d)
			}
		})
	}
}

func TestDeleteOnlyOurs(t *testing.T) {
	ctx := context.Background()
	var objs []*servingv1.Service
	for _, a := range []string{"default", "upx", "pgo"} {
		s, err := NewService(Arm{Name: a, Image: "e@" + testDigest}, testDeployOptions("bench").Service)
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, s)
	}
	objs = append(objs, &servingv1.Service{ObjectMeta: metav1.ObjectMeta{Name: "users-own", Namespace: "bench"}},
		&servingv1.Service{ObjectMeta: metav1.ObjectMeta{Name: "other-tool", Namespace: "bench",
			Labels: map[string]string{LabelManagedBy: "helm", LabelArm: "upx"}}})
	c := fakeCluster(t, "bench", true, objs...)

	got, err := Delete(ctx, c, "bench", []string{"upx"})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"coldstart-upx"}, got); d != "" {
		t.Errorf("Delete(upx) (-want +got):\n%s", d)
	}
	got, err = Delete(ctx, c, "bench", nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"coldstart-default", "coldstart-pgo"}, got); d != "" {
		t.Errorf("Delete(all) (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"other-tool", "users-own"}, serviceNames(t, c, "bench")); d != "" {
		t.Errorf("left (-want +got):\n%s", d)
	}
}

func TestKubeconfig(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")

	_, _, err := Kubeconfig{}.Load()
	// The library names no flag: the command adds its own (cliopts).
	if !errors.Is(err, ErrNoKubeconfig) || !strings.Contains(err.Error(), "$KUBECONFIG") || strings.Contains(err.Error(), "--") {
		t.Errorf("Load with nothing = %v, want %v naming $KUBECONFIG and no flag", err, ErrNoKubeconfig)
	}
	missing := filepath.Join(dir, "missing.yaml")
	if _, _, err := (Kubeconfig{Path: missing}).Load(); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("Load(%s) = %v, want an error naming it", missing, err)
	}

	// A closed port: the kubeconfig loads, the cluster does not answer.
	kc := filepath.Join(dir, "config")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:%d"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u, namespace: bench}}]
current-context: x
`, closedPort(t))
	if err := os.WriteFile(kc, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", kc)
	rc, ns, err := Kubeconfig{}.Load()
	if err != nil {
		t.Fatal(err)
	}
	if ns != "bench" {
		t.Errorf("namespace = %q, want bench (from the context)", ns)
	}
	c, err := NewClients(rc)
	if err != nil {
		t.Fatal(err)
	}
	err = Preflight(context.Background(), c, ns)
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), rc.Host) {
		t.Errorf("Preflight on a closed port = %v, want %v naming %s", err, ErrUnreachable, rc.Host)
	}
}

func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return p
}
