package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

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

// The idle pods' table: each arm's pod from a run --on knative file
// (results/20261202-101723_coldstart-knative.jsonl, read on the knode),
// its containers and sandbox in MiB, beside the same arm's local PSS from
// the published density file, the figures taken from the files.
func TestPodMemoryTable(t *testing.T) {
	r := load(t, "../results/20261201-112156_coldstart.jsonl", "../results/20261201-112312_density.jsonl", "../results/20261202-101723_coldstart-knative.jsonl")
	var kn *Campaign
	for _, c := range r.Campaigns {
		if len(c.PodMemory) > 0 {
			kn = c
		}
	}
	if kn == nil || len(kn.PodMemory) != 3 {
		t.Fatalf("pod_memory rows not read: %v", kn)
	}
	var b bytes.Buffer
	m := &mdw{w: &b}
	r.knativeSection(m)
	got := b.String()
	if !strings.Contains(got, "**What an idle instance holds there**") {
		t.Fatalf("no idle pod table:\n%s", got)
	}
	for _, pm := range kn.PodMemory {
		pss, file := localPSSOf(r.Campaigns, pm.Arm)
		if pss == 0 || !strings.Contains(file, "density") {
			t.Errorf("%s: local PSS %d from %q, want the density file's", pm.Arm, pss, file)
		}
		var qp uint64
		for _, c := range pm.Containers {
			if c.Name == "queue-proxy" {
				qp = *c.WorkingSetBytes
			}
		}
		want := fmt.Sprintf("| %s | ", pm.Arm)
		row := ""
		for _, line := range strings.Split(got, "\n") {
			if strings.HasPrefix(line, want) && strings.Contains(line, mib(int64(qp))) {
				row = line
			}
		}
		if row == "" || !strings.Contains(row, mib(*pm.SandboxBytes)) || !strings.Contains(row, mib(pss)) ||
			!strings.Contains(row, fmt.Sprintf("%.1f×", float64(*pm.PodWorkingSetBytes)/float64(pss))) {
			t.Errorf("%s: row %q lacks queue-proxy %s, sandbox %s, local %s or their ratio", pm.Arm, row, mib(int64(qp)), mib(*pm.SandboxBytes), mib(pss))
		}
	}
}
