package steady

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/coldstart-go/coldstart/internal/stats"
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

// autoRounds runs two arms (one binary under two names) through one
// sequential step with rounds left open at precision p and cap max, and
// returns what it recorded and every Stop.
func autoRounds(ctx context.Context, t *testing.T, p float64, max int, log io.Writer) (*collect, []Stop, error) {
	t.Helper()
	a := sampleArm(t)
	b := a
	a.Name, b.Name = "a", "b"
	c := &collect{}
	var stops []Stop
	cfg := Config{
		Arms: []Arm{a, b}, Precision: p, MaxRounds: max, Scenarios: []Scenario{Sequential},
		Warmup: 100, Calls: 300, Log: log,
		Stopped: func(s Stop) error { stops = append(stops, s); return nil },
	}
	err := Run(ctx, cfg, c.record)
	return c, stops, err
}

// TestRoundsAuto: with a loose precision (±90%) every arm's calls/s and
// server CPU per call are known well enough after a few rounds, long
// before the cap; with one no window reaches, the step runs to
// the cap. Each says so once, and every row of medians records why.
func TestRoundsAuto(t *testing.T) {
	for _, tt := range []struct {
		name      string
		precision float64
		max       int
		reason    string
		rounds    int
	}{
		{"precision", 0.9, 40, StopPrecision, 0}, // rounds: from MinAutoRounds to 39
		{"cap", 1e-9, stats.MinAutoRounds, StopMaxRounds, stats.MinAutoRounds},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, stops, err := autoRounds(context.Background(), t, tt.precision, tt.max, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(stops) != 1 {
				t.Fatalf("Stopped called %d times, want once: %+v", len(stops), stops)
			}
			s := stops[0]
			if tt.reason == StopPrecision && s.Rounds >= stats.MinAutoRounds && s.Rounds < tt.max {
				tt.rounds = s.Rounds // any round from the first that may stop, before the cap
			}
			if s.Reason != tt.reason || s.Rounds != tt.rounds || s.Precision != tt.precision || s.MaxRounds != tt.max || !strings.HasPrefix(s.Step, "grpc sequential") {
				t.Errorf("stop = %+v, want %s after %d rounds of the grpc sequential step", s, tt.reason, tt.rounds)
			}
			if s.WidestHalfWidth == nil || (s.WidestArm != "a" && s.WidestArm != "b") || (s.WidestFigure != FigureCallsPerS && s.WidestFigure != FigureServerCPU) {
				t.Errorf("stop = %+v, want the widest interval, of arm a or b", s)
			}
			if len(c.windows) != 2*tt.rounds {
				t.Errorf("%d windows, want 2 × %d rounds", len(c.windows), tt.rounds)
			}
			if len(c.rows) != 2 {
				t.Fatalf("%d rows of medians, want 2", len(c.rows))
			}
			for _, r := range c.rows {
				if r.Rounds != tt.rounds || r.Stopped != tt.reason || r.Precision != tt.precision || r.MaxRounds != tt.max {
					t.Errorf("row %s: rounds %d stopped %q precision %v max %d, want %d, %q, %v, %d", r.Arm, r.Rounds, r.Stopped, r.Precision, r.MaxRounds, tt.rounds, tt.reason, tt.precision, tt.max)
				}
			}
		})
	}
}

// TestRoundsAutoInterrupted: cancelled in round 3, a step with rounds left
// open keeps what it measured and says it was interrupted after the two
// whole rounds.
func TestRoundsAutoInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := onMeasure(func(n int) {
		if n == 6 { // round 3's second window
			cancel()
		}
	})
	c, stops, err := autoRounds(ctx, t, 1e-9, 40, log)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	if len(stops) != 1 || stops[0].Reason != StopInterrupted || stops[0].Rounds != 2 {
		t.Fatalf("stops = %+v, want one interrupted after 2 rounds", stops)
	}
	if !strings.Contains(stops[0].String(), "interrupted after 2 rounds, kept") {
		t.Errorf("Stop.String() = %q", stops[0].String())
	}
	for _, r := range c.rows {
		if r.Stopped != StopInterrupted {
			t.Errorf("row %s: stopped %q, want interrupted", r.Arm, r.Stopped)
		}
	}
}

// TestRoundsAutoBadConfig: the precision and the cap are checked, and a
// fixed number of rounds does not go with them.
func TestRoundsAutoBadConfig(t *testing.T) {
	arm := []Arm{{Name: "a", Path: "/bin/true"}}
	for _, tt := range []struct {
		cfg  Config
		want string
	}{
		{Config{Arms: arm, Precision: 1, MaxRounds: 30}, "Precision: 1, want a fraction of the median between 0 and 1"},
		{Config{Arms: arm, Precision: -0.5, MaxRounds: 30}, "Precision: -0.5, want"},
		{Config{Arms: arm, Precision: 0.03, MaxRounds: 5}, "MaxRounds: 5, want at least 6"},
		{Config{Arms: arm, Precision: 0.03, MaxRounds: 30, Rounds: 5}, "Rounds: 5 rounds with a precision to run until: give one or the other (Precision)"},
		{Config{Arms: arm, Precision: 0.03, MaxRounds: 30, Soak: time.Hour, Rate: 10}, "Precision: a soak loads one open loop in intervals"},
	} {
		err := tt.cfg.Validate()
		var oe *OptionError
		if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.As(err, &oe) {
			t.Errorf("Validate(%+v) = %v, want an OptionError with %q", tt.cfg, err, tt.want)
		}
	}
}
