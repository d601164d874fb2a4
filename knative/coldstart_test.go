package knative

import (
	"context"
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"

	"github.com/coldstart-go/coldstart/prober"
)

// TestColdStartServiceNames: each arm is the Service NamePrefix+arm, any
// arm name (a user's Service), looked up in the campaign's namespace.
func TestColdStartServiceNames(t *testing.T) {
	// No status.address: found, then refused for want of an address,
	// before anything is watched or probed.
	svc := &servingv1.Service{ObjectMeta: metav1.ObjectMeta{Name: "bench-myservice", Namespace: "bench"}}
	c := fakeCluster(t, "bench", true, svc)
	none := func(prober.Sample) error { t.Error("a sample was recorded"); return nil }

	cs := ColdStart{Clients: c, Namespace: "bench", Arms: []string{"myservice"}, NamePrefix: "bench-", Runs: 1}
	sums, err := cs.Run(context.Background(), none)
	if !errors.Is(err, ErrNoTarget) || !strings.Contains(err.Error(), "probe service bench/bench-myservice") || len(sums) != 0 {
		t.Errorf("Run with prefix bench- = %v, %v; want %v for bench/bench-myservice, no summaries", sums, err, ErrNoTarget)
	}
	cs.NamePrefix = DefaultServiceOptions().NamePrefix
	if _, err := cs.Run(context.Background(), none); err == nil || !strings.Contains(err.Error(), "get service bench/coldstart-myservice") {
		t.Errorf("Run with deploy's default prefix = %v, want the lookup of bench/coldstart-myservice to fail", err)
	}
}

// TestColdStartNotes: the results say how the probes went and where the
// trace phases come from.
func TestColdStartNotes(t *testing.T) {
	c := fakeCluster(t, "bench", true)
	n := ColdStart{Clients: c, Namespace: "bench"}.Notes(context.Background())
	if n["cluster_namespace"] != "bench" || n["probe_via"] != "ingress" || n["probe_path"] != "" || n["trace_phases"] != "" {
		t.Errorf("notes through the ingress = %v", n)
	}
	tc, err := ListenTraces("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	tc.listen, tc.sentTo = "10.0.0.1:9411", "http://10.0.0.1:9411/api/v2/spans"
	n = ColdStart{Clients: c, Namespace: "bench", Target: "10.0.0.2:81", Activator: true, Traces: tc}.Notes(context.Background())
	if n["probe_via"] != "activator" || !strings.Contains(n["probe_path"], "activator Service 10.0.0.2:81") ||
		!strings.Contains(n["trace_phases"], "sends to http://10.0.0.1:9411/api/v2/spans (received at 10.0.0.1:9411)") {
		t.Errorf("notes through the activator, with traces = %v", n)
	}
}
