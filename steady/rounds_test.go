package steady

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/coldstart-go/coldstart/launch"
)

func (s *spy) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.insts)
}

// TestRounds: two arms (one binary under two names), three rounds: each
// server started once, the order rotated each round, every window recorded
// with its round and what else the machine did, then one row of medians
// per arm with the number of rounds.
func TestRounds(t *testing.T) {
	a := sampleArm(t)
	b := a
	a.Name, b.Name = "a", "b"
	sp := &spy{Launcher: launch.Process{}}
	var c collect
	cfg := Config{
		Arms: []Arm{a, b}, Rounds: 3, Scenarios: []Scenario{Sequential},
		Warmup: 100, Calls: 300, Launcher: sp,
	}
	if err := Run(context.Background(), cfg, c.record); err != nil {
		t.Fatal(err)
	}
	if n := sp.count(); n != 2 {
		t.Errorf("started %d servers, want 2 (each arm once per budget)", n)
	}
	var order []string
	for _, w := range c.windows {
		order = append(order, w.Arm)
		if w.Noise == nil || w.Noise.Seconds <= 0 {
			t.Errorf("window %s round %d: no noise record: %+v", w.Arm, w.Round, w.Noise)
		}
	}
	if diff := cmp.Diff([]string{"a", "b", "b", "a", "a", "b"}, order); diff != "" {
		t.Errorf("window order (-want +got):\n%s", diff)
	}
	if len(c.rows) != 2 {
		t.Fatalf("rows of medians: %d, want 2", len(c.rows))
	}
	for _, r := range c.rows {
		if r.Rounds != 3 || r.Round != 0 || r.CallsPerSCI == nil || r.Missing != 0 || r.ServerCPUUsPerCall == nil {
			t.Errorf("row %s: rounds %d round %d ci %v missing %d cpu %v, want 3 rounds, an interval, nothing missing", r.Arm, r.Rounds, r.Round, r.CallsPerSCI, r.Missing, r.ServerCPUUsPerCall)
		}
	}
}

// TestRoundsInterrupted: an interrupt in round 2 keeps round 1's windows
// and the medians over the rounds finished.
func TestRoundsInterrupted(t *testing.T) {
	a := sampleArm(t)
	b := a
	a.Name, b.Name = "a", "b"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := onMeasure(func(n int) {
		if n == 4 { // round 2's second window
			cancel()
		}
	})
	var c collect
	cfg := Config{
		Arms: []Arm{a, b}, Rounds: 5, Scenarios: []Scenario{Throughput}, Concurrency: []int{4},
		Warmup: 100, Calls: 20000, Log: log,
	}
	err := Run(ctx, cfg, c.record)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	if len(c.windows) != 3 {
		t.Errorf("windows kept: %d, want 3 (round 1's two and round 2's first)", len(c.windows))
	}
	rounds := map[string]int{}
	for _, r := range c.rows {
		rounds[r.Arm] = r.Rounds
	}
	if diff := cmp.Diff(map[string]int{"a": 1, "b": 2}, rounds); diff != "" {
		t.Errorf("rounds per arm in the rows of medians (-want +got):\n%s", diff)
	}
}

func TestSummarizeRoundsLeavesOutMissing(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	i := func(v int64) *int64 { return &v }
	rs := []Row{
		{Arm: "a", Round: 1, CallsPerS: 100, ServerCPUUsPerCall: f(10), RSSBytes: i(1000), PSSBytes: i(900), PeakRSSBytes: i(1100), Calls: 10},
		{Arm: "a", Round: 2, CallsPerS: 110, ServerCPUUsPerCall: nil, Calls: 10}, // /proc unreadable
		{Arm: "a", Round: 3, CallsPerS: 90, ServerCPUUsPerCall: f(12), RSSBytes: i(1200), PSSBytes: i(1000), PeakRSSBytes: i(1300), Calls: 10, Errors: 1},
	}
	r := SummarizeRounds(rs, 0.95)
	if r.CallsPerS != 100 || r.Rounds != 3 || r.Missing != 1 || r.Errors != 1 || r.Round != 0 {
		t.Errorf("SummarizeRounds = calls/s %v rounds %d missing %d errors %d round %d, want 100, 3, 1, 1, 0", r.CallsPerS, r.Rounds, r.Missing, r.Errors, r.Round)
	}
	// The median of the two readings (10, 12), not of (0, 10, 12).
	if r.ServerCPUUsPerCall == nil || *r.ServerCPUUsPerCall != 11 || r.RSSBytes == nil || *r.RSSBytes != 1100 {
		t.Errorf("SummarizeRounds server CPU %v rss %v, want 11 and 1100 (failed readings left out)", r.ServerCPUUsPerCall, r.RSSBytes)
	}
	none := SummarizeRounds([]Row{{Arm: "a", Round: 1, CallsPerS: 5}}, 0.95)
	if none.ServerCPUUsPerCall != nil || none.PSSBytes != nil || none.Missing != 1 {
		t.Errorf("SummarizeRounds without readings: cpu %v pss %v missing %d, want nil, nil, 1", none.ServerCPUUsPerCall, none.PSSBytes, none.Missing)
	}
}
