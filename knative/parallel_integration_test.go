//go:build integration

package knative

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/coldstart-go/coldstart/internal/kubetest"
)

// TestClusterParallelUnschedulable runs testParallelUnschedulable against
// a real kube-apiserver with etcd and Knative's Service CRD: the pods,
// their scheduler's status and their deletion go through real API calls,
// and the fit watch reads them through real label-selected watches.
func TestClusterParallelUnschedulable(t *testing.T) {
	if testing.Short() {
		t.Skip("starts kube-apiserver and etcd (~7 s)")
	}
	env := kubetest.Start(t)
	if err := env.InstallCRDs(serviceCRD(t)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 80*time.Second)
	defer cancel()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := Kubeconfig{Path: kubeconfig}.Load()
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 200, 400
	c, err := NewClients(cfg)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const ns = "bench"
	if _, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// No controller creates the default ServiceAccount; pods need it.
	if _, err := kc.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	playController(t, c, ns, always(true))
	// A real watch resumes from its list: no event is lost before it.
	testParallelUnschedulable(ctx, t, c, ns, func() {})
}
