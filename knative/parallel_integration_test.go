//go:build integration

package knative

import (
	"context"
	"testing"
	"time"

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
	const ns = "bench"
	c, _ := clusterClients(ctx, t, env, ns)
	playController(t, c, ns, always(true))
	// A real watch resumes from its list: no event is lost before it.
	testParallelUnschedulable(ctx, t, c, ns, func() {})
}
