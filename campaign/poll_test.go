package campaign

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/coldstart-go/coldstart/launch"
	"github.com/coldstart-go/coldstart/prober"
)

func TestPollSeen(t *testing.T) {
	tests := []struct {
		name        string
		ready, poll float64
		interval    time.Duration
		want        float64
	}{
		{"ready between polls waits for the next", 9, 0.5, 25 * time.Millisecond, 25.5},
		{"ready exactly at a poll is seen by it", 50, 0.5, 25 * time.Millisecond, 50.5},
		{"just after a poll waits a whole interval", 25.001, 1, 25 * time.Millisecond, 51},
		{"activator", 9, 2, 200 * time.Millisecond, 202},
		{"kubelet-min", 1200, 2, time.Second, 2002},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PollSeen(tt.ready, tt.poll, tt.interval); got != tt.want {
				t.Errorf("PollSeen(%v, %v, %v) = %v, want %v", tt.ready, tt.poll, tt.interval, got, tt.want)
			}
		})
	}
}

func TestParsePollIntervals(t *testing.T) {
	got, err := ParsePollIntervals("25ms, knative-activator,1s")
	if err != nil {
		t.Fatal(err)
	}
	want := []PollInterval{{"25ms", 25 * time.Millisecond}, {"knative-activator", 200 * time.Millisecond}, {"1s", time.Second}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParsePollIntervals (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"fast", "0s", "-1s", "kubelet-max"} {
		if _, err := ParsePollIntervals(bad); err == nil || !strings.Contains(err.Error(), "knative-queue-proxy") {
			t.Errorf("ParsePollIntervals(%q) = %v, want an error listing the presets", bad, err)
		}
	}
	if got, err := ParsePollIntervals(""); err != nil || got != nil {
		t.Errorf("ParsePollIntervals(\"\") = %v, %v, want none", got, err)
	}
}

func TestPolled(t *testing.T) {
	ss := []prober.Sample{
		{Run: 0, Warmup: true, FirstRPCMs: 100, ReadyAttemptMs: 99},
		{Run: 1, FirstRPCMs: 10, ReadyAttemptMs: 9},    // seen 25+1 = 26, delay 16
		{Run: 2, FirstRPCMs: 12, ReadyAttemptMs: 10},   // seen 25+2 = 27, delay 15
		{Run: 3, FirstRPCMs: 30, ReadyAttemptMs: 29.5}, // seen 50+0.5 = 50.5, delay 20.5
		{Run: 4, Error: "server exited"},
	}
	got := Polled(ss, []PollInterval{{"25ms", 25 * time.Millisecond}})
	want := []Poll{{Name: "25ms", IntervalMs: 25, PollMs: 1, TrueMs: 12, SeenMs: 27, DelayMs: 16, SharePct: 100 * 15 / 27.0}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Polled (-want +got):\n%s", diff)
	}
}

// A real campaign: each summary says what a platform polling every 25 ms
// would have seen, by the rule, from the samples' own ready attempts.
func TestColdStartPollsAndKeepGoing(t *testing.T) {
	var got []prober.Sample
	c := ColdStart{
		Arms:      []Arm{selfArm("crashy", "crash"), selfArm("good", "health")},
		Runs:      3,
		Wait:      prober.WaitOptions{Timeout: 10 * time.Second},
		KeepGoing: true,
		Polls:     []PollInterval{{"25ms", 25 * time.Millisecond}},
	}
	sums, err := c.Run(context.Background(), func(s prober.Sample) error { got = append(got, s); return nil })
	if !errors.Is(err, launch.ErrExited) || !strings.Contains(err.Error(), "crashy") {
		t.Fatalf("Run() error = %v, want the crashy arm's exit", err)
	}
	crashy := 0
	for _, s := range got {
		if s.Arm == "crashy" {
			crashy++
		}
	}
	if crashy != 1 {
		t.Errorf("crashy arm started %d times, want once (then left out)", crashy)
	}
	var good *Summary
	for i := range sums {
		if sums[i].Arm == "good" {
			good = &sums[i]
		}
	}
	if good == nil || good.Runs != 3 || len(good.Polls) != 1 {
		t.Fatalf("good arm's summary %+v, want 3 runs and one poll row", good)
	}
	p := good.Polls[0]
	if p.PollMs <= 0 || p.SeenMs < p.TrueMs || p.DelayMs < 0 || p.DelayMs > 25+p.PollMs || p.SharePct < 0 || p.SharePct >= 100 {
		t.Errorf("poll row %+v: want a positive poll time, seen ≥ true, a delay under one interval", p)
	}
	for _, s := range got {
		if s.Arm == "good" && (s.ReadyAttemptMs <= 0 || s.ReadyAttemptMs >= s.FirstRPCMs) {
			t.Errorf("sample %+v: the ready attempt must start after t0 and before the first RPC ends", s)
		}
	}
}
