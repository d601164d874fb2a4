//go:build integration

package knative

// These tests run against a real kube-apiserver with etcd (built by
// scripts/kube-testenv.sh; they skip, naming it, when the binaries are
// missing) with Knative's Service CRD installed from the knative.dev/serving
// module. Knative's controllers do not run: the test plays their part
// against the real API server (Service status, Deployment scale, pod
// binding and status) and runs a real gRPC health server as the pod, so the
// deploy, the wait for zero, the phases and the probe all go through real
// API calls and watches.

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"knative.dev/serving/pkg/apis/serving"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"

	"github.com/coldstart-go/coldstart/internal/kubetest"
	"github.com/coldstart-go/coldstart/prober"
)

// serviceCRD is Knative's Service CRD, read from the module cache.
func serviceCRD(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "knative.dev/serving").Output()
	if err != nil {
		t.Fatalf("go list -m knative.dev/serving: %v", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "config", "core", "300-resources", "service.yaml")
}

// clusterClients are coldstart's clients of env's kube-apiserver and the
// test's own clientset (its writes are what Knative's controllers and the
// kubelet would make), with namespace ns and its default ServiceAccount
// made (no controller makes it here; pods need it).
func clusterClients(ctx context.Context, t *testing.T, env *kubetest.Env, ns string) (Clients, *kubernetes.Clientset) {
	t.Helper()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := Kubeconfig{Path: kubeconfig}.Load()
	if err != nil {
		t.Fatal(err)
	}
	// client-go's default 5 requests/s would pace the test's stand-ins
	// for Knative's controllers (~8 writes per scale-up).
	cfg.QPS, cfg.Burst = 200, 400
	c, err := NewClients(cfg)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kc.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return c, kc
}

func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts kube-apiserver and etcd (~7 s)")
	}
	env := kubetest.Start(t) // Knative not installed yet
	ctx, cancel := context.WithTimeout(context.Background(), 80*time.Second)
	defer cancel()

	const ns = "bench"
	c, kc := clusterClients(ctx, t, env, ns)
	o := testDeployOptions(ns)

	if _, err := Deploy(ctx, c, testArms(), o); !errors.Is(err, ErrNoKnative) {
		t.Fatalf("Deploy without Knative = %v, want %v", err, ErrNoKnative)
	}
	if err := env.InstallCRDs(serviceCRD(t)); err != nil {
		t.Fatal(err)
	}
	bad := o
	bad.Service.Namespace = "nope"
	if _, err := Deploy(ctx, c, testArms(), bad); !errors.Is(err, ErrNoNamespace) {
		t.Fatalf("Deploy into a missing namespace = %v, want %v", err, ErrNoNamespace)
	}

	playController(t, c, ns, func(name string) bool { return name != "coldstart-pgo" })

	t.Run("deploy creates then updates", func(t *testing.T) {
		got, err := Deploy(ctx, c, testArms(), o)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range got {
			if !d.Created || !d.Ready || d.URL != "http://"+d.Service+".bench.example.com" {
				t.Errorf("deployed %+v", d)
			}
		}
		// The API server validated the Services against Knative's schema
		// and pruned nothing: what is stored is what was built.
		so := o.Service
		so.InitialScale = 1 // auto, on a cluster without allow-zero-initial-scale
		for _, a := range testArms() {
			want, _ := NewService(a, so)
			have, err := c.Serving.Services(ns).Get(ctx, want.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(want.Spec, have.Spec); d != "" {
				t.Errorf("stored %s spec (-built +stored):\n%s", want.Name, d)
			}
			if d := cmp.Diff(want.Labels, have.Labels); d != "" {
				t.Errorf("stored %s labels (-built +stored):\n%s", want.Name, d)
			}
		}
		o2 := o
		o2.Service.Window = 30 * time.Second
		got, err = Deploy(ctx, c, testArms(), o2)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range got {
			have, _ := c.Serving.Services(ns).Get(ctx, d.Service, metav1.GetOptions{})
			if d.Created || !d.Ready || have.Generation != 2 || have.Spec.Template.Annotations["autoscaling.knative.dev/window"] != "30s" {
				t.Errorf("after update: %+v, generation %d, annotations %v", d, have.Generation, have.Spec.Template.Annotations)
			}
		}
	})

	t.Run("failures leave nothing", func(t *testing.T) {
		f := o
		f.Timeout = 2 * time.Second
		_, err := Deploy(ctx, c, []Arm{{Name: "pgo", Image: "r.example/echo@" + testDigest}}, f)
		if !errors.Is(err, ErrNotReady) || !strings.Contains(err.Error(), "RevisionFailed") {
			t.Errorf("Deploy never Ready = %v, want %v with the conditions", err, ErrNotReady)
		}
		_, err = Deploy(ctx, c, []Arm{{Name: "static", Image: "r.example/echo@" + testDigest}, {Name: "upx", Image: "r.example/echo:upx"}}, f)
		if !errors.Is(err, ErrNoDigest) {
			t.Errorf("Deploy with a tag = %v, want %v", err, ErrNoDigest)
		}
		if d := cmp.Diff([]string{"coldstart-default", "coldstart-upx"}, serviceNames(t, c, ns)); d != "" {
			t.Errorf("services after failed deploys (-want +got):\n%s", d)
		}
	})

	t.Run("scale from zero", func(t *testing.T) { testScaleFromZero(ctx, t, c, kc, ns) })

	t.Run("cluster notes", func(t *testing.T) {
		n := ClusterNotes(ctx, c, ns)
		want := map[string]string{
			"cluster_namespace":               ns,
			"cluster_api_host":                "127.0.0.1",
			"cluster_kubernetes_version":      "v" + kubetest.KubeVersion,
			"cluster_knative_serving_version": "devel (from the CRD)",
			"cluster_nodes":                   "0",
			"cluster_node_kind":               "unknown (no nodes visible)",
		}
		if d := cmp.Diff(want, n); d != "" {
			t.Errorf("ClusterNotes (-want +got):\n%s", d)
		}
	})

	t.Run("delete removes only coldstart's", func(t *testing.T) {
		foreign, _ := NewService(Arm{Name: "mine", Image: "r.example/x@" + testDigest}, o.Service)
		foreign.Name, foreign.Labels = "users-own", map[string]string{"team": "x"}
		if _, err := c.Serving.Services(ns).Create(ctx, foreign, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		got, err := Delete(ctx, c, ns, nil)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff([]string{"coldstart-default", "coldstart-upx"}, got); d != "" {
			t.Errorf("Delete (-want +got):\n%s", d)
		}
		if d := cmp.Diff([]string{"users-own"}, serviceNames(t, c, ns)); d != "" {
			t.Errorf("left (-want +got):\n%s", d)
		}
	})
}

// playController stands in for Knative's controller on a real API server:
// it watches Services in ns and writes the status ready or failing, until the test ends.
func playController(t *testing.T, c Clients, ns string, ready func(name string) bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := c.Serving.Services(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); w.Stop(); <-done })
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			s, ok := ev.Object.(*servingv1.Service)
			if !ok || ev.Type == watch.Deleted || s.Status.ObservedGeneration == s.Generation && len(s.Status.Conditions) > 0 {
				continue
			}
			s = s.DeepCopy()
			markStatus(s, ready(s.Name))
			if _, err := c.Serving.Services(ns).UpdateStatus(ctx, s, metav1.UpdateOptions{}); err != nil && ctx.Err() == nil && !apierrors.IsNotFound(err) {
				t.Errorf("update status of %s: %v", s.Name, err)
			}
		}
	}()
}

// fakeKnative plays Knative's data and control plane for one revision: an
// activator that holds each connection until a pod is ready and then
// forwards it, and the autoscaler, Deployment controller, scheduler and
// kubelet as writes to the real API server. The "pod" is a real gRPC
// health server on loopback.
type fakeKnative struct {
	t           *testing.T
	kc          kubernetes.Interface
	ns, svc     string
	dep         string
	demand      chan struct{}
	pods        int
	mu          sync.Mutex
	backend     string
	ready       chan struct{} // closed when backend serves
	srv         *grpc.Server
	podName     string
	authorities []string // :authority of each health check the pod answered
}

func (k *fakeKnative) labels() map[string]string {
	return map[string]string{serving.ServiceLabelKey: k.svc, serving.RevisionLabelKey: k.svc + "-00001"}
}

// activate accepts probe connections like Knative's activator.
func (k *fakeKnative) activate(ctx context.Context, l net.Listener) {
	for {
		conn, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer conn.Close()
			k.mu.Lock()
			ready := k.ready
			k.mu.Unlock()
			select {
			case k.demand <- struct{}{}:
			default:
			}
			select {
			case <-ready:
			case <-ctx.Done():
				return
			}
			k.mu.Lock()
			addr := k.backend
			k.mu.Unlock()
			b, err := net.Dial("tcp", addr)
			if err != nil {
				return
			}
			defer b.Close()
			go func() { io.Copy(b, conn); b.(*net.TCPConn).CloseWrite() }()
			io.Copy(conn, b)
		}()
	}
}

func (k *fakeKnative) check(err error) bool {
	k.t.Helper()
	if err != nil {
		k.t.Errorf("play knative: %v", err)
		return false
	}
	return true
}

// scaleUp does what a scale from zero does in a cluster, in order.
func (k *fakeKnative) scaleUp(ctx context.Context) {
	deps := k.kc.AppsV1().Deployments(k.ns)
	d, err := deps.Get(ctx, k.dep, metav1.GetOptions{})
	if !k.check(err) {
		return
	}
	d.Spec.Replicas = ptr(int32(1)) // the autoscaler
	if d, err = deps.Update(ctx, d, metav1.UpdateOptions{}); !k.check(err) {
		return
	}
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1}
	if d, err = deps.UpdateStatus(ctx, d, metav1.UpdateOptions{}); !k.check(err) {
		return
	}
	k.pods++ // the ReplicaSet controller
	pods := k.kc.CoreV1().Pods(k.ns)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: k.dep + "-" + string(rune('a'+k.pods)), Labels: k.labels()},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken: ptr(false),
			Containers: []corev1.Container{
				{Name: "server", Image: "r.example/echo@" + testDigest},
				{Name: queueProxy, Image: "r.example/queue@" + testDigest},
			},
		},
	}
	if p, err = pods.Create(ctx, p, metav1.CreateOptions{}); !k.check(err) {
		return
	}
	k.podName = p.Name
	// The scheduler: binding sets spec.nodeName and PodScheduled=True.
	err = pods.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: p.Name},
		Target: corev1.ObjectReference{Kind: "Node", Name: "node-1"}}, metav1.CreateOptions{})
	if !k.check(err) {
		return
	}
	// The kubelet: start the server, report it running, then Ready.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if !k.check(err) {
		return
	}
	srv := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		k.mu.Lock()
		k.authorities = append(k.authorities, strings.Join(md.Get(":authority"), ","))
		k.mu.Unlock()
		return h(ctx, req)
	}))
	healthpb.RegisterHealthServer(srv, health.NewServer()) // "" is SERVING
	go srv.Serve(l)
	k.mu.Lock()
	k.srv = srv
	k.mu.Unlock()
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}
	if p, err = pods.Get(ctx, p.Name, metav1.GetOptions{}); !k.check(err) {
		return
	}
	p.Status.Phase = corev1.PodRunning
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "server", State: running}, {Name: queueProxy, State: running}}
	if p, err = pods.UpdateStatus(ctx, p, metav1.UpdateOptions{}); !k.check(err) {
		return
	}
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})
	if _, err = pods.UpdateStatus(ctx, p, metav1.UpdateOptions{}); !k.check(err) {
		return
	}
	d.Status.ReadyReplicas, d.Status.AvailableReplicas = 1, 1
	if _, err = deps.UpdateStatus(ctx, d, metav1.UpdateOptions{}); !k.check(err) {
		return
	}
	k.mu.Lock()
	k.backend = l.Addr().String()
	close(k.ready)
	k.mu.Unlock()
}

// scaleDown answers each reason the wait for zero gives with the step
// Knative would take next, so every rule is met in turn.
func (k *fakeKnative) scaleDown(ctx context.Context, why string) {
	deps := k.kc.AppsV1().Deployments(k.ns)
	pods := k.kc.CoreV1().Pods(k.ns)
	switch {
	case strings.Contains(why, "spec.replicas"):
		d, err := deps.Get(ctx, k.dep, metav1.GetOptions{})
		if k.check(err) {
			d.Spec.Replicas = ptr(int32(0))
			_, err = deps.Update(ctx, d, metav1.UpdateOptions{})
			k.check(err)
		}
	case strings.Contains(why, "status"):
		d, err := deps.Get(ctx, k.dep, metav1.GetOptions{})
		if k.check(err) {
			d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation}
			_, err = deps.UpdateStatus(ctx, d, metav1.UpdateOptions{})
			k.check(err)
		}
	case strings.HasSuffix(why, ": Running"):
		// Graceful delete of a bound pod: it stays, Terminating.
		k.mu.Lock()
		k.backend, k.ready = "", make(chan struct{})
		srv := k.srv
		k.mu.Unlock()
		if srv != nil {
			srv.Stop()
		}
		k.check(pods.Delete(ctx, k.podName, metav1.DeleteOptions{}))
	case strings.HasSuffix(why, ": Terminating"):
		select { // demand from the last run's probes is spent
		case <-k.demand:
		default:
		}
		k.check(pods.Delete(ctx, k.podName, metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))}))
	default:
		k.t.Errorf("play knative: no step for %q", why)
	}
}

// reasonWriter passes each "waiting for zero: REASON" line on.
type reasonWriter struct {
	t       *testing.T
	reasons chan string
}

func (w reasonWriter) Write(b []byte) (int, error) {
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		w.t.Log(sc.Text())
		if _, why, ok := strings.Cut(sc.Text(), "waiting for zero: "); ok {
			w.reasons <- why
		}
	}
	return len(b), nil
}

func testScaleFromZero(ctx context.Context, t *testing.T, c Clients, kc kubernetes.Interface, ns string) {
	k := &fakeKnative{t: t, kc: kc, ns: ns, svc: "coldstart-default", dep: "coldstart-default-00001-deployment",
		demand: make(chan struct{}, 1), ready: make(chan struct{})}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: k.dep, Labels: k.labels()},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr(int32(0)),
			Selector: &metav1.LabelSelector{MatchLabels: k.labels()},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: k.labels()},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "server", Image: "r.example/echo@" + testDigest}}},
			},
		},
	}
	if _, err := kc.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Start as deploy leaves it with initial-scale 1: one warm pod.
	k.scaleUp(ctx)

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	actx, stop := context.WithCancel(ctx)
	defer func() {
		stop()
		l.Close()
		k.mu.Lock()
		if k.srv != nil {
			k.srv.Stop()
		}
		k.mu.Unlock()
	}()
	go k.activate(actx, l)
	reasons := make(chan string, 64)
	go func() {
		for {
			select {
			case why := <-reasons:
				k.scaleDown(actx, why)
			case <-k.demand:
				k.mu.Lock()
				up := k.backend != ""
				k.mu.Unlock()
				if !up {
					k.scaleUp(actx)
				}
			case <-actx.Done():
				return
			}
		}
	}()

	var samples []prober.Sample
	err = ScaleFromZero(ctx, c, MeasureOptions{
		Namespace: ns, Service: k.svc, Arm: "default", Budget: "max", Runs: 2, Warmup: true,
		Target: l.Addr().String(), ZeroTimeout: 20 * time.Second, ProbeTimeout: 20 * time.Second,
		Log: reasonWriter{t: t, reasons: reasons},
	}, func(s prober.Sample) error { samples = append(samples, s); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) != 3 {
		t.Fatalf("got %d samples, want a warm-up and 2 runs", len(samples))
	}
	for i, s := range samples {
		if s.Run != i || s.Warmup != (i == 0) || s.Arm != "default" || s.Error != "" || s.Attempts < 1 {
			t.Errorf("sample %d = %+v", i, s)
		}
		got := map[string]float64{}
		for _, p := range s.Phases {
			got[p.Name] = p.Ms
		}
		for _, name := range append(append([]string(nil), watchPhases...), prober.PhaseFirstRPC) {
			if _, ok := got[name]; !ok {
				t.Errorf("run %d: phase %s missing: %+v", s.Run, name, s.Phases)
			}
		}
		for i := 1; i < 4; i++ { // the pod's own phases, one informer, in order
			if a, b := watchPhases[i], watchPhases[i+1]; got[b] < got[a] {
				t.Errorf("run %d: %s (%.3f ms) before %s (%.3f ms)", s.Run, b, got[b], a, got[a])
			}
		}
		if got[prober.PhaseFirstRPC] < got[PhaseDeploymentScaled] {
			t.Errorf("run %d: first RPC before the scale-up: %+v", s.Run, s.Phases)
		}
		t.Logf("run %d: first_rpc %.1f ms after %d attempts, phases %v", s.Run, s.FirstRPCMs, s.Attempts, s.Phases)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, a := range k.authorities {
		if a != "coldstart-default.bench.example.com" {
			t.Errorf("pod saw :authority %q, want the ksvc URL's host", a)
		}
	}
	if len(k.authorities) < 3 {
		t.Errorf("pod answered %d health checks, want one per cold start (3)", len(k.authorities))
	}
}
