package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/coldstart-go/coldstart/record"
)

// TestReplaySection: a replay file's policies are tabled real beside
// simulated; the verdict counts the policies the simulator agreed for and
// names each it missed, with the direction it erred in. The requests and
// pods are read, not skipped as unknown.
func TestReplaySection(t *testing.T) {
	rows := []record.Replay{
		{Traffic: "gamma:4/min,cv=2", Seed: 1, DurationS: 1800, Arm: "static", Policy: "knative:window=6s", Service: "coldstart-static-replay1",
			Requests: 126, Cold: 50, SimCold: 53, ColdDiffPct: 6, Agrees: true, AnsweredWarm: 4, Starts: 31, SimStarts: 32, PodSeconds: 640, SimInstanceSeconds: 647, DrainSeconds: 900, ColdMedianMs: 805},
		{Traffic: "gamma:4/min,cv=2", Seed: 1, DurationS: 1800, Arm: "static", Policy: "knative:delay=30s,window=6s", Service: "coldstart-static-replay2",
			Requests: 126, Cold: 30, SimCold: 22, ColdDiffPct: -26.7, Agrees: false, Starts: 16, SimStarts: 12, PodSeconds: 1000, SimInstanceSeconds: 1100, ColdMedianMs: 810, Errors: 1},
		// A file that averages its simulations: the mean, and one run's spread.
		{Traffic: "gamma:4/min,cv=2", Seed: 1, DurationS: 1800, Arm: "static", Policy: "knative:window=20s", Service: "coldstart-static-replay3",
			Requests: 126, Cold: 35, SimCold: 32, SimColdMean: 31.8, SimColdP5: 29, SimColdP95: 35, SimRuns: 200, ColdDiffPct: -9.1, Agrees: true,
			Starts: 18, SimStarts: 17, PodSeconds: 900, SimInstanceSeconds: 880, ColdMedianMs: 1400},
	}
	f := newJSONL(t)
	f.add("provenance", map[string]any{"schema": "coldstart/v1", "tool": "coldstart"})
	f.add(record.ReplayRequestKind, record.ReplayRequest{Policy: "knative:window=6s", Index: 0, Cold: true, LatencyMs: 805})
	f.add(record.ReplayPodKind, record.ReplayPod{Policy: "knative:window=6s", Pod: "p", SeenS: 0.2})
	for _, r := range rows {
		f.add(record.ReplayKind, r)
	}
	r := load(t, f.write("20261202-170000_replay.jsonl"))
	if len(r.Warnings) > 0 {
		t.Errorf("warnings: %v", r.Warnings)
	}
	c := r.Campaigns[0]
	if len(c.Replays) != 3 || len(c.ReplayRequests) != 1 || len(c.ReplayPods) != 1 {
		t.Fatalf("read %d replays, %d requests, %d pods; want 3, 1, 1", len(c.Replays), len(c.ReplayRequests), len(c.ReplayPods))
	}
	var out bytes.Buffer
	r.replaySection(&mdw{w: &out}, func(*Campaign, string) {})
	got := out.String()
	for _, want := range []string{
		"## The simulator against the real autoscaler",
		"| `knative:window=6s` | 126 | 50 | 53 | +6.0% | yes | 31 / 32 | 640 / 647 | 900 | 805 | 4 | 0 |",
		"| `knative:delay=30s,window=6s` | 126 | 30 | 22 | -26.7% | **no** |",
		"| `knative:window=20s` | 126 | 35 | 31.8 [29–35] | -9.1% | yes | 18 / 17 |",
		"**The simulator agreed for 2 of 3 policies.** Off by more than the tolerance: `knative:delay=30s,window=6s` (22 simulated, 30 real: fewer).",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in:\n%s", want, got)
		}
	}
	plots, err := r.Plots(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range plots {
		if p.Kind == "replay" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d replay plots, want 1: %+v", n, plots)
	}
}
