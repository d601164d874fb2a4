package cost

import (
	"strings"
	"testing"
	"time"

	"github.com/coldstart-go/coldstart/record"
)

// TestReplayPolicy: a replay's policy takes the cluster's grace period
// and starts at zero; what a replay cannot run is refused, saying why.
func TestReplayPolicy(t *testing.T) {
	k, err := ReplayPolicy("knative:window=6s,delay=30s", 6*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if k.Grace != 6*time.Second || k.Window != 6*time.Second || k.Delay != 30*time.Second || k.Initial != 0 || !k.AllowZeroInitial {
		t.Errorf("policy %+v: want the cluster's 6s grace, window 6s, delay 30s, initial 0", k)
	}
	if k, err := ReplayPolicy("knative:grace=6s", 6*time.Second); err != nil || k.Grace != 6*time.Second {
		t.Errorf("grace= the cluster's: %+v, %v", k, err)
	}
	for _, tt := range []struct{ spec, want string }{
		{"knative:grace=30s", "grace=30s, but scale-to-zero-grace-period is cluster-wide and the cluster's config-autoscaler says 6s"},
		{"knative:initial=1", "initial-scale acts when a revision is created"},
		{"knative:min=1", "min=1 never reaches zero"},
		{"keepalive:10m", "knative policies only"},
		{"knative:window=1s", "Knative rejects it: stable-window = 1s"},
	} {
		if _, err := ReplayPolicy(tt.spec, 6*time.Second); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err %v, want %q", tt.spec, err, tt.want)
		}
	}
}

// TestSimulateReplay: requests a minute apart under a 6 s window each
// find the revision at zero in the simulator; the replay's record agrees
// with a real count within 10% and not beyond.
func TestSimulateReplay(t *testing.T) {
	k, err := ReplayPolicy("knative:window=6s", 6*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var arrivals []float64
	for i := range 10 {
		arrivals = append(arrivals, 30+60*float64(i))
	}
	for _, tt := range []struct {
		real   int64
		agrees bool
		diff   float64
	}{{10, true, 0}, {11, true, -100.0 / 11}, {12, false, -200.0 / 12}, {0, false, 100}} {
		rp := record.Replay{Policy: k.Short(), Cold: tt.real}
		if err := SimulateReplay(&rp, arrivals, 620, k, []float64{800, 900}, 5, 0, 1); err != nil {
			t.Fatal(err)
		}
		if rp.SimCold != 10 || rp.SimColdMean != 10 || rp.SimColdP5 != 10 || rp.SimColdP95 != 10 || rp.SimRuns != ReplaySims ||
			rp.SimStarts != 10 || rp.StartSamples != 2 || rp.PolicySpec != k.String() {
			t.Errorf("simulated %+v: want 10 cold in each of %d runs, 10 starts, from 2 samples", rp, ReplaySims)
		}
		if rp.Agrees != tt.agrees || rp.ColdDiffPct-tt.diff > 1e-9 || tt.diff-rp.ColdDiffPct > 1e-9 {
			t.Errorf("real %d: diff %.2f%% agrees %v, want %.2f%% %v", tt.real, rp.ColdDiffPct, rp.Agrees, tt.diff, tt.agrees)
		}
	}
	rp := record.Replay{Policy: "p"}
	if err := SimulateReplay(&rp, arrivals, 620, k, nil, 5, 0, 1); err == nil || !strings.Contains(err.Error(), "no start sample") {
		t.Errorf("no cold latencies: err %v", err)
	}
}

// TestReplayPolicyUnknownGrace: before the cluster's grace is read (0),
// a policy is checked for all but its grace, which it keeps.
func TestReplayPolicyUnknownGrace(t *testing.T) {
	k, err := ReplayPolicy("knative:grace=30s,window=6s", 0)
	if err != nil || k.Grace != 30*time.Second {
		t.Errorf("grace unknown: %+v, %v; want grace 30s kept", k, err)
	}
	if _, err := ReplayPolicy("knative:min=1", 0); err == nil || !strings.Contains(err.Error(), "never reaches zero") {
		t.Errorf("min=1 with grace unknown: err %v", err)
	}
}
