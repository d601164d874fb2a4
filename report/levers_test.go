package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coldstart-go/coldstart/internal/stats"
	"github.com/coldstart-go/coldstart/record"
)

// TestPlatformLevers: on a Knative campaign whose lever variant takes
// 40 ms longer from pod_scheduled to sandbox_ready than its arm (each
// round's noise shared by both, as a burst of steal is), the table names
// that step with an interval covering +40 and the first RPC slower; the
// control, the arm's start under another name, moves no step.
func TestPlatformLevers(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var lines []any
	lines = append(lines, map[string]any{"kind": "provenance", "schema": "coldstart/v1", "tool": "coldstart",
		"notes": map[string]string{"cluster_nodes": "1"}})
	type step struct {
		name string
		ms   float64
	}
	steps := []step{{"activator_received", 2}, {"deployment_scaled", 200}, {"pod_created", 40}, {"pod_scheduled", 5},
		{"sandbox_ready", 460}, {"container_started", 190}, {"first_rpc", 5}}
	var samples []record.Sample
	for run := 1; run <= 12; run++ {
		round := 1 + 0.2*rng.Float64() // the round's noise, shared
		for _, arm := range []string{"default", "default-no-token", "default-control", "default-pull-10mbit"} {
			s := record.Sample{Arm: arm, Budget: "knative", Run: run}
			if arm == "default-pull-10mbit" {
				// Run 5's image was on the node: the registry sent none of it.
				s.ImagePull = &record.ImagePull{Image: "127.0.0.1:5000/x@sha256:00", Bytes: 5 << 20, ServedBytes: 5<<20 + 4096, Bandwidth: "10Mbit"}
				if run == 5 {
					s.ImagePull.ServedBytes = 0
				}
			}
			at := 0.0
			for _, st := range steps {
				d := st.ms * round * (1 + 0.02*rng.NormFloat64())
				if arm == "default-no-token" && st.name == "sandbox_ready" {
					d += 40
				}
				at += d
				s.Phases = append(s.Phases, record.Phase{Name: st.name, Ms: at})
			}
			s.FirstRPCMs = at
			samples = append(samples, s)
			lines = append(lines, struct {
				Kind string `json:"kind"`
				record.Sample
			}{"sample", s})
		}
	}
	byArm := map[string][]record.Sample{}
	for _, s := range samples {
		byArm[s.Arm] = append(byArm[s.Arm], s)
	}
	variants := map[string]record.Variant{
		"default-no-token":    {Of: "default", Platform: []string{"automountServiceAccountToken: false"}},
		"default-control":     {Of: "default", Platform: []string{"nothing (control)"}, Control: true},
		"default-pull-10mbit": {Of: "default", Platform: []string{"a new revision every start, its image pulled at 10Mbit (initial-scale 0)"}},
	}
	var sums []record.Summary
	for _, arm := range []string{"default", "default-no-token", "default-control", "default-pull-10mbit"} {
		s := record.SummarizeAt(byArm[arm], stats.DefaultConfidence)
		s.Arm, s.Budget, s.Variant = arm, "knative", variants[arm]
		sums = append(sums, s)
	}
	record.CompareToBaseline(sums, samples, "default", stats.DefaultConfidence, stats.DefaultMinEffect)
	for _, s := range sums {
		lines = append(lines, struct {
			Kind string `json:"kind"`
			record.Summary
		}{"summary", s})
	}
	path := filepath.Join(t.TempDir(), "20261202-120000_coldstart-knative.jsonl")
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for _, l := range lines {
		if err := enc.Encode(l); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	r := load(t, path)
	var out bytes.Buffer
	r.platformLevers(&mdw{w: &out})
	got := out.String()
	row := func(prefix string) string {
		for _, line := range strings.Split(got, "\n") {
			if strings.HasPrefix(line, prefix) {
				return line
			}
		}
		t.Fatalf("no row %q in:\n%s", prefix, got)
		return ""
	}
	nt := row("| default-no-token | default | automountServiceAccountToken: false |")
	if !strings.Contains(nt, "| slower") || !strings.Contains(nt, "pod_scheduled → sandbox_ready +") {
		t.Errorf("no-token row %q: want slower, moved at pod_scheduled → sandbox_ready", nt)
	}
	var lo, hi float64
	if i := strings.Index(nt, "sandbox_ready +"); i >= 0 {
		var d float64
		if _, err := fmtSscanShift(nt[i+len("sandbox_ready "):], &d, &lo, &hi); err != nil || !(lo <= 40 && 40 <= hi) {
			t.Errorf("shift %q: interval [%v, %v] does not cover the true +40 ms (%v)", nt[i:], lo, hi, err)
		}
	}
	if pr := row("| default-pull-10mbit | default | a new revision every start, its image pulled at 10Mbit (initial-scale 0); image 5.0 MiB, pulled whole in 11 of 12 starts |"); pr == "" {
		t.Error("no pull row")
	}
	ct := row("| default-control | default | nothing (control) |")
	if !strings.Contains(ct, "no difference detected") || !strings.Contains(ct, "none (largest:") {
		t.Errorf("control row %q: want no difference and no step moved", ct)
	}
}

// fmtSscanShift reads "+40.2 [+31.0, +49.5] …", signedMs's form, into
// the shift and its interval.
func fmtSscanShift(s string, d, lo, hi *float64) (int, error) {
	s = strings.NewReplacer("−", "-", "+", "", "[", "", "]", "", ",", "").Replace(s)
	return fmt.Sscan(s, d, lo, hi)
}
