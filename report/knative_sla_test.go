package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coldstart-go/coldstart/record"
)

// TestKnativeParallelSLA: per arm and N, the rounds that met Knative's
// benchmark limits for that N, none where it defines none, and the pods'
// own start against Kubernetes' 5 s SLO.
func TestKnativeParallelSLA(t *testing.T) {
	f := newJSONL(t)
	add := f.add
	add("provenance", map[string]any{"schema": "coldstart/v1", "tool": "coldstart", "notes": map[string]string{"cluster_nodes": "1"}})
	for run := 1; run <= 3; run++ {
		for _, n := range []int{1, 5, 7, 25} {
			// N=1 answers in 40 ms (within 50 ms) in rounds 1 and 2 only;
			// N=5 takes 800 ms; the pods start in 300 ms, except one of
			// N=7's, in 6 s.
			first := 800.0
			if n == 1 && run < 3 {
				first = 40
			}
			if n == 25 {
				first = 1500 // within N=25's 2 s and 5 s
			}
			for i := 1; i <= n; i++ {
				started := 300.0
				if n == 7 && i == 7 {
					started = 6000
				}
				add(record.BurstInstanceKind, record.BurstInstance{Arm: "static", Budget: "knative", N: n, Run: run, Instance: i,
					FirstRPCMs: first, Phases: []record.Phase{{Name: "pod_created", Ms: 10}, {Name: "container_started", Ms: 10 + started}, {Name: "first_rpc", Ms: first}}})
			}
			add(record.BurstKind, record.Burst{Arm: "static", Budget: "knative", N: n, Run: run, P50Ms: first, P95Ms: first, P99Ms: first, MaxMs: first, AllReadyMs: first})
		}
	}
	r := load(t, f.write("20261202-130000_coldstart-knative.jsonl"))
	var out bytes.Buffer
	r.knativeParallelSLA(&mdw{w: &out}, r.Campaigns[0])
	got := out.String()
	for _, want := range []string{
		"| static | 1 | 3 | 40.0 | 40.0 | p95 ≤ 50 ms, max ≤ 50 ms: missed (2 of 3 rounds) | 300 (within 5 s) |",
		"| static | 5 | 3 | 800 | 800 | p95 ≤ 50 ms, max ≤ 50 ms: missed (0 of 3 rounds) | 300 (within 5 s) |",
		"| static | 7 | 3 | 800 | 800 | no SLA at this N | 6000 (beyond 5 s) |",
		"| static | 25 | 3 | 1500 | 1500 | p95 ≤ 2 s, max ≤ 5 s: met (3 of 3 rounds) |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no row %q in:\n%s", want, got)
		}
	}
}

// TestKnativeParallelDidNotFit: a burst the cluster could not hold at
// once, warm-up or counted, is a row saying how many of N the node held
// and the scheduler's reason, not a missing one, and the section says
// where each arm stopped, also for an arm with no N that fit.
func TestKnativeParallelDidNotFit(t *testing.T) {
	two, none := 2, 0
	lines := []string{
		`{"kind":"provenance","schema":"coldstart/v1","tool":"coldstart","notes":{"cluster_nodes":"1","parallel":"N Services"}}`,
	}
	insufficient := "pod coldstart-static-copy4-00001-deployment-x: Unschedulable: 0/1 nodes are available: 1 Insufficient cpu."
	bursts := []record.Burst{
		{Arm: "static", Budget: "knative", N: 1, Run: 0, Warmup: true, P50Ms: 900, P95Ms: 900, MaxMs: 900, AllReadyMs: 900},
		{Arm: "static", Budget: "knative", N: 5, Run: 0, Warmup: true, Failed: 3, Error: "N=5 does not fit", Unschedulable: insufficient, ScheduledAtOnce: &two},
		{Arm: "upx", Budget: "knative", N: 1, Run: 0, Warmup: true, Failed: 1, Error: "N=1 does not fit", ScheduledAtOnce: &none,
			Unschedulable: "pod coldstart-upx-copy1-00001-deployment-y: Unschedulable: 0/1 nodes are available: 1 node(s) had untolerated taint {gpu: }."},
	}
	for run := 1; run <= 2; run++ {
		bursts = append(bursts, record.Burst{Arm: "static", Budget: "knative", N: 1, Run: run, P50Ms: 40, P95Ms: 40, P99Ms: 40, MaxMs: 40, AllReadyMs: 40})
	}
	for _, b := range bursts {
		raw, _ := json.Marshal(b)
		lines = append(lines, `{"kind":"burst",`+string(raw[1:]))
	}
	path := filepath.Join(t.TempDir(), "20261202-170000_coldstart-knative.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := load(t, path)
	var out strings.Builder
	r.burstSection(&mdw{w: &out}, func(*Campaign, string) {})
	got := out.String()
	for _, want := range []string{
		"| static | 1 | 2 | 40.0 | 40.0 | p95 ≤ 50 ms, max ≤ 50 ms: met (2 of 2 rounds) |",
		"| static | 5 | 0 | – | – | did not fit: the node held 2 of 5 at once: N=5 did not fit (pod coldstart-static-copy4-00001-deployment-x: Unschedulable: 0/1 nodes are available: 1 Insufficient cpu) | – | – |",
		"| upx | 1 | 0 | – | – | did not fit: the node held 0 of 1 at once: N=1 did not fit (pod coldstart-upx-copy1-00001-deployment-y: Unschedulable: 0/1 nodes are available: 1 node(s) had untolerated taint {gpu: }) |",
		"**Where the cluster stopped:** static: the node held 2 of 5 at once: N=5 did not fit (pod coldstart-static-copy4-00001-deployment-x: Unschedulable: 0/1 nodes are available: 1 Insufficient cpu); upx: the node held 0 of 1 at once: N=1 did not fit (",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in:\n%s", want, got)
		}
	}

	// A counted round that did not fit beside rounds that did: the row
	// keeps the rounds that fit and names the one that did not.
	lines = append(lines, `{"kind":"burst",`+func() string {
		raw, _ := json.Marshal(record.Burst{Arm: "static", Budget: "knative", N: 1, Run: 3, Failed: 1, Error: "N=1 does not fit", Unschedulable: insufficient, ScheduledAtOnce: &none})
		return string(raw[1:])
	}())
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = load(t, path)
	out.Reset()
	r.knativeParallelSLA(&mdw{w: &out}, r.Campaigns[0])
	if want := "| static | 1 | 2 | 40.0 | 40.0 | p95 ≤ 50 ms, max ≤ 50 ms: met (2 of 2 rounds); round 3 did not fit: the node held 0 of 1 at once: N=1 did not fit (pod coldstart-static-copy4"; !strings.Contains(out.String(), want) {
		t.Errorf("no %q in:\n%s", want, out.String())
	}
}

// TestRequestBursts: a --burst-requests campaign lists, per counted
// burst, the pods made and when the first and last were Ready, not the
// SLAs of N Services.
func TestRequestBursts(t *testing.T) {
	r1, r2 := 700.0, 1900.0
	lines := []string{
		`{"kind":"provenance","schema":"coldstart/v1","tool":"coldstart","notes":{"cluster_nodes":"1","burst_requests":"20 requests at once","container_concurrency_static":"1"}}`,
	}
	for _, b := range []record.Burst{
		{Arm: "static", Budget: "knative", N: 20, Run: 0, Warmup: true, Pods: []record.PodTime{{Pod: "w", CreatedMs: 10}}},
		{Arm: "static", Budget: "knative", N: 20, Run: 1, P50Ms: 800, P95Ms: 1950, MaxMs: 2000, AllReadyMs: 2000,
			Pods: []record.PodTime{{Pod: "a", CreatedMs: 50, ReadyMs: &r1}, {Pod: "b", CreatedMs: 900, ReadyMs: &r2}, {Pod: "c", CreatedMs: 950}}},
	} {
		raw, _ := json.Marshal(b)
		lines = append(lines, `{"kind":"burst",`+string(raw[1:]))
	}
	path := filepath.Join(t.TempDir(), "20261202-140000_coldstart-knative.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := load(t, path)
	var out bytes.Buffer
	r.knativeParallelSLA(&mdw{w: &out}, r.Campaigns[0])
	got := out.String()
	if !strings.Contains(got, "| static | 1 | 1 | 20 | 3 (2 Ready) | 700 | 1900 | 800 | 1950 | 2000 |") || strings.Contains(got, "SLA") || strings.Contains(got, "| 0 | 20 |") {
		t.Errorf("request bursts table:\n%s", got)
	}
}
