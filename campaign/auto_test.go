package campaign

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/coldstart-go/coldstart/prober"
)

// autoCampaign runs two arms of the test binary as a server with
// precision p and cap max, and returns what it recorded.
func autoCampaign(ctx context.Context, t *testing.T, p float64, max int, onSample func(prober.Sample)) ([]Summary, []prober.Sample, []Stop, error) {
	t.Helper()
	var samples []prober.Sample
	var stops []Stop
	c := ColdStart{
		Arms:      []Arm{selfArm("a", "health"), selfArm("b", "health")},
		Precision: p, MaxRuns: max,
		Wait:    prober.WaitOptions{Timeout: 10 * time.Second},
		Stopped: func(s Stop) error { stops = append(stops, s); return nil },
	}
	sums, err := c.Run(ctx, func(s prober.Sample) error {
		samples = append(samples, s)
		if onSample != nil {
			onSample(s)
		}
		return nil
	})
	return sums, samples, stops, err
}

// TestColdStartAutoStopsOnPrecision: with a loose precision (±90%) the
// medians are known well enough after a few rounds, long before the cap;
// the campaign says so once, with the widest interval within it.
func TestColdStartAutoStopsOnPrecision(t *testing.T) {
	const maxRuns = 40
	sums, samples, stops, err := autoCampaign(context.Background(), t, 0.9, maxRuns, nil)
	if err != nil {
		t.Fatalf("Run() = %v", err)
	}
	if len(stops) != 1 {
		t.Fatalf("Stopped called %d times, want once: %+v", len(stops), stops)
	}
	s := stops[0]
	if s.Reason != StopPrecision || s.Rounds < MinAutoRuns || s.Rounds >= maxRuns || s.Precision != 0.9 || s.MaxRuns != maxRuns {
		t.Errorf("stop = %+v, want precision after %d to %d rounds", s, MinAutoRuns, maxRuns-1)
	}
	if s.WidestHalfWidth == nil || *s.WidestHalfWidth > 0.9 || (s.WidestArm != "a" && s.WidestArm != "b") {
		t.Errorf("stop = %+v, want the widest interval within ±90%%, of arm a or b", s)
	}
	if len(samples) != 2*(s.Rounds+1) {
		t.Errorf("%d samples recorded, want 2 × (%d rounds + warm-up)", len(samples), s.Rounds)
	}
	for _, sum := range sums {
		if sum.Runs != s.Rounds {
			t.Errorf("summary %s: %d runs, want %d", sum.Arm, sum.Runs, s.Rounds)
		}
	}
	if !strings.Contains(s.String(), "every median within ±90.0%") {
		t.Errorf("Stop.String() = %q, want it to say the medians were within ±90.0%%", s.String())
	}
}

// TestColdStartAutoCap: a precision no sample reaches runs to the cap and
// says so.
func TestColdStartAutoCap(t *testing.T) {
	sums, _, stops, err := autoCampaign(context.Background(), t, 1e-9, MinAutoRuns, nil)
	if err != nil {
		t.Fatalf("Run() = %v", err)
	}
	if len(stops) != 1 || stops[0].Reason != StopMaxRuns || stops[0].Rounds != MinAutoRuns {
		t.Fatalf("stops = %+v, want one max-runs after %d rounds", stops, MinAutoRuns)
	}
	if stops[0].WidestHalfWidth == nil || *stops[0].WidestHalfWidth <= 1e-9 {
		t.Errorf("stop = %+v, want a widest interval wider than the precision", stops[0])
	}
	for _, sum := range sums {
		if sum.Runs != MinAutoRuns {
			t.Errorf("summary %s: %d runs, want %d", sum.Arm, sum.Runs, MinAutoRuns)
		}
	}
}

// TestColdStartAutoInterrupted: cancelled in the middle of round 3, the
// campaign keeps rounds 1 and 2 in its summaries, records why it stopped
// and returns the context's error.
func TestColdStartAutoInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := "" // the arm that starts round 3 (the arms take turns)
	sums, samples, stops, err := autoCampaign(ctx, t, 1e-9, 40, func(s prober.Sample) {
		if s.Run == 3 && first == "" {
			first = s.Arm
			cancel() // the other arm's start in round 3 is not taken
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run() = %v, want context.Canceled", err)
	}
	if len(stops) != 1 || stops[0].Reason != StopInterrupted || stops[0].Rounds != 2 {
		t.Fatalf("stops = %+v, want one interrupted after 2 rounds", stops)
	}
	if len(sums) != 2 {
		t.Fatalf("%d summaries, want one per arm", len(sums))
	}
	for _, sum := range sums {
		if sum.Runs != 2 {
			t.Errorf("summary %s: %d runs, want the 2 whole rounds (round 3's start left out)", sum.Arm, sum.Runs)
		}
	}
	if last := samples[len(samples)-1]; last.Run != 3 || last.Arm == first || last.Error == "" {
		t.Errorf("last sample = %s run %d error %q, want the failed start in round 3 of the arm after %s, recorded", last.Arm, last.Run, last.Error, first)
	}
}

// TestColdStartAutoMinRuns: a precision the medians reach within the
// first rounds, and MinRuns 9: the campaign stops on precision, and not
// before its ninth round.
func TestColdStartAutoMinRuns(t *testing.T) {
	var stops []Stop
	c := ColdStart{
		Arms:      []Arm{selfArm("a", "health"), selfArm("b", "health")},
		Precision: 0.9, MaxRuns: 40, MinRuns: 9,
		Wait:    prober.WaitOptions{Timeout: 10 * time.Second},
		Stopped: func(s Stop) error { stops = append(stops, s); return nil },
	}
	if _, err := c.Run(context.Background(), func(prober.Sample) error { return nil }); err != nil {
		t.Fatalf("Run() = %v", err)
	}
	if len(stops) != 1 || stops[0].Reason != StopPrecision || stops[0].Rounds < 9 || stops[0].Rounds >= 40 {
		t.Errorf("stops = %+v, want one on precision after 9 to 39 rounds", stops)
	}
}

func TestColdStartAutoBadConfig(t *testing.T) {
	for _, tt := range []struct {
		name string
		c    ColdStart
		want string
	}{
		{"runs and precision", ColdStart{Runs: 5, Precision: 0.03, MaxRuns: 60}, "want one of them"},
		{"precision 1", ColdStart{Precision: 1, MaxRuns: 60}, "precision: 1"},
		{"cap below 6", ColdStart{Precision: 0.03, MaxRuns: 5}, "max runs: 5, want at least 6"},
		{"cap below the minimum", ColdStart{Precision: 0.03, MaxRuns: 8, MinRuns: 9}, "max runs: 8, below the 9 min runs"},
		{"no runs", ColdStart{}, "runs: 0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.c.Arms = []Arm{selfArm("a", "health")}
			_, err := tt.c.Run(context.Background(), func(prober.Sample) error { return nil })
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Run() = %v, want an error with %q", err, tt.want)
			}
		})
	}
}
