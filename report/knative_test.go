package report

import "testing"

func TestBudgetWidth(t *testing.T) {
	for _, tt := range []struct {
		b    string
		want int
	}{
		{"cpus=0", 1}, {"cpus=0-1", 2}, {"cpus=0,2-3", 3}, {"cores=0.5", 0}, {"cpus=0,cores=1", 0},
		{"cpus=0,mem=64M", 0}, {"max", 1<<31 - 1}, {"", 1<<31 - 1}, {"knative", 0}, {"cpus=x", 0},
	} {
		if got := budgetWidth(tt.b); got != tt.want {
			t.Errorf("budgetWidth(%q) = %d, want %d", tt.b, got, tt.want)
		}
	}
}

func TestDominantStep(t *testing.T) {
	got := dominantStep(map[string]float64{"deployment_scaled": 20, "pod_scheduled": 110, "sandbox_ready": 600,
		"container_started": 820, "first_rpc": 840, "pod_ready": 2000})
	if want := "pod_scheduled → sandbox_ready (490)"; got != want {
		t.Errorf("dominantStep = %q, want %q (pod_ready after first_rpc is not the cold start's)", got, want)
	}
	if got := dominantStep(nil); got != "" {
		t.Errorf("dominantStep(nil) = %q", got)
	}
}
