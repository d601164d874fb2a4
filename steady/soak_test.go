package steady

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/coldstart-go/coldstart/internal/stats"
	"github.com/coldstart-go/coldstart/internal/testservers"
)

// TestSoakCatchesLeak soaks a test server that leaks 128 KiB of resident
// memory per call: the soak must call it drifting, and the leak's real
// rate (128 KiB × the calls per second achieved) must lie inside the RSS
// slope's 95% interval.
func TestSoakCatchesLeak(t *testing.T) {
	if testing.Short() {
		t.Skip("a 4-second soak")
	}
	const leak = 128 << 10
	arm := Arm{Name: "leaky", Path: testservers.Build(t), Args: []string{"-mode", "grpc", "-listen-port", "{port}", "-leak-per-call", "131072"}}
	var rows []SoakRow
	var sums []SoakSummary
	cfg := Config{Arms: []Arm{arm}, Client: ClientLean, Rate: 400, Soak: 4 * time.Second, SoakInterval: 400 * time.Millisecond, MaxInFlight: 16, Warmup: 3000}
	err := RunSoak(context.Background(), cfg, func(r SoakRow) error { rows = append(rows, r); return nil }, func(s SoakSummary) error { sums = append(sums, s); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) < 8 || len(sums) != 1 {
		t.Fatalf("%d rows, %d summaries; want ≥ 8 and 1", len(rows), len(sums))
	}
	for _, r := range rows {
		t.Logf("interval %d at %.2fs: %d calls, rss %d", r.Interval, r.AtSeconds, r.Calls, *r.RSSBytes)
	}
	s := sums[0]
	// The leak's real rate over the span the slope is fitted on: the calls
	// after the first reading, over the time from the first to the last.
	var calls int64
	for _, r := range rows[1:] {
		calls += r.Calls
	}
	truth := leak * float64(calls) / (rows[len(rows)-1].AtSeconds - rows[0].AtSeconds) * 3600
	t.Logf("RSS %s; true leak %s/h; p99 %s", s.RSS.Text, signedBytes(truth), s.P99.Text)
	if s.RSS.Verdict != Drifting || s.Verdict != Drifting {
		t.Errorf("verdicts RSS %s, soak %s; want drifting", s.RSS.Verdict, s.Verdict)
	}
	// The truth has an error of its own: each interval's calls are
	// counted at AtSeconds, its RSS read a moment later, and a leak this
	// even makes the slope's interval narrower (±0.2% seen) than that
	// skew. 1% of slack on each side is far below any other rate.
	if truth < s.RSS.Lo*0.99 || truth > s.RSS.Hi*1.01 {
		t.Errorf("true leak rate %.0f B/h outside the RSS slope's interval [%.0f, %.0f], with 1%% slack", truth, s.RSS.Lo, s.RSS.Hi)
	}
	if !strings.HasPrefix(s.RSS.Text, "drifting: +") || !strings.Contains(s.RSS.Text, "/h") {
		t.Errorf("RSS text %q, want \"drifting: +… /h …\"", s.RSS.Text)
	}
	// Each whole window sends its schedule's calls, 400/s × 0.4 s = 160:
	// counted, not divided by the window's wall time, which a busy machine
	// stretches when the last call returns late. The last window may be
	// cut short by the soak's end.
	for i, r := range rows {
		short := i < len(rows)-1 && math.Abs(float64(r.Calls)-160) > 32
		if r.Scenario != SoakStep || r.Errors != 0 || r.RSSBytes == nil || r.ServerCPUUsPerCall == nil || short || r.Calls == 0 {
			t.Errorf("interval %d: %s, %d calls (%.0f calls/s), %d errors (%s), rss %v", r.Interval, r.Scenario, r.Calls, r.CallsPerS, r.Errors, r.FirstError, r.RSSBytes)
		}
	}
}

func TestFitTrend(t *testing.T) {
	// y = 5 + 2t exactly: slope 7200/h with a zero-width interval.
	ts := []float64{0, 1, 2, 3, 4}
	ys := []float64{5, 7, 9, 11, 13}
	b, lo, hi, ok := fitTrend(ts, ys)
	if !ok || math.Abs(b-7200) > 1e-6 || math.Abs(lo-7200) > 1e-6 || math.Abs(hi-7200) > 1e-6 {
		t.Errorf("fitTrend(exact line) = %v [%v, %v] %v, want 7200 [7200, 7200]", b, lo, hi, ok)
	}
	// Noise around a flat line: the interval holds zero; t(0.975, 3) = 3.182.
	ys = []float64{10, 11, 9, 11, 9}
	b, lo, hi, _ = fitTrend(ts, ys)
	if lo > 0 || hi < 0 {
		t.Errorf("fitTrend(flat noise) = %v [%v, %v], want an interval around 0", b, lo, hi)
	}
	// se = sqrt(SSR/(n-2)/Sxx): SSR 3.6, Sxx 10 → 0.3464; × 3.1824 × 3600.
	if w := (hi - lo) / 2; math.Abs(w-0.34641*3.18245*3600) > 1 {
		t.Errorf("half-width %v, want %v", w, 0.34641*3.18245*3600)
	}
	if _, _, _, ok := fitTrend(ts[:2], ys[:2]); ok {
		t.Error("fitTrend with 2 points: ok, want not enough")
	}
	tr := newTrend("rss_bytes", "bytes/h", ts, []float64{0, 1 << 20, 2 << 20, 3 << 20, 4 << 20}, 1<<20, signedBytes)
	if tr.Verdict != Drifting || !strings.HasPrefix(tr.Text, "drifting: +3.52 GiB/h") {
		t.Errorf("trend %+v", tr)
	}
	// Falling beyond the material rate is no leak or slowdown.
	tr = newTrend("p99_us", "µs/h", ts, []float64{400, 300, 200, 100, 0}, 1, signedUs)
	if tr.Verdict != Stable || !strings.HasPrefix(tr.Text, "stable (falling): -360.00 ms/h") {
		t.Errorf("falling trend %+v", tr)
	}
}

// TestSoakAuto soaks two real servers with SoakAuto, each capped at 8 s
// of 400 ms windows: one that does not leak, against a target its slope
// meets within the fewest windows (over seconds its RSS still climbs tens
// of MiB/h as its heap settles: ±71 MiB/h after 6 windows, seen), and one
// that leaks 128 KiB per call, against a target it cannot meet within
// the cap (±99 MiB/h after 20 windows, seen). Each must end as the rule
// says, checked against the half-width of every prefix of its own rows:
// the first prefix of at least stats.MinAutoRounds rows within the target
// ends the soak (precision), and a soak that reaches the cap had none
// (max-soak).
func TestSoakAuto(t *testing.T) {
	if testing.Short() {
		t.Skip("two soaks of up to 8 seconds")
	}
	bin := testservers.Build(t)
	for _, tc := range []struct {
		name   string
		args   []string
		target float64 // bytes/h
		want   string
	}{
		{"quiet", nil, 1 << 30, SoakStopPrecision},
		{"leaky", []string{"-leak-per-call", "131072"}, 16 << 20, SoakStopMaxSoak},
	} {
		t.Run(tc.name, func(t *testing.T) {
			arm := Arm{Name: tc.name, Path: bin, Args: append([]string{"-mode", "grpc", "-listen-port", "{port}"}, tc.args...)}
			var rows []SoakRow
			var sums []SoakSummary
			cfg := Config{Arms: []Arm{arm}, Client: ClientLean, Rate: 400, Soak: 8 * time.Second, SoakInterval: 400 * time.Millisecond,
				SoakAuto: true, soakTarget: tc.target, MaxInFlight: 16, Warmup: 3000}
			err := RunSoak(context.Background(), cfg, func(r SoakRow) error { rows = append(rows, r); return nil }, func(s SoakSummary) error { sums = append(sums, s); return nil })
			if err != nil {
				t.Fatal(err)
			}
			if len(sums) != 1 || sums[0].Stop == nil {
				t.Fatalf("%d summaries (%+v), want 1 with a stop", len(sums), sums)
			}
			st := *sums[0].Stop
			t.Logf("%d rows; %s; RSS %s", len(rows), st, sums[0].RSS.Text)
			for i := range rows {
				if hw := rssHalfWidth(rows[:i+1]); hw != nil {
					t.Logf("after %d rows: ±%.1f MiB/h", i+1, *hw/(1<<20))
				}
			}
			first := 0 // the first prefix, of enough rows, within the target
			for n := stats.MinAutoRounds; n <= len(rows); n++ {
				if hw := rssHalfWidth(rows[:n]); hw != nil && *hw <= st.TargetPerHour {
					first = n
					break
				}
			}
			switch st.Reason {
			case SoakStopPrecision:
				if first != len(rows) || st.Windows != len(rows) {
					t.Errorf("stopped on precision after %d windows (%d rows); the first prefix within ±%.0f MiB/h has %d rows", st.Windows, len(rows), st.TargetPerHour/(1<<20), first)
				}
			case SoakStopMaxSoak:
				if first != 0 || rows[len(rows)-1].AtSeconds < 7 {
					t.Errorf("stopped at the cap after %.1f s; the first prefix within the target has %d rows (0 = none)", rows[len(rows)-1].AtSeconds, first)
				}
			default:
				t.Errorf("reason %q", st.Reason)
			}
			if st.Reason != tc.want {
				t.Errorf("reason %q, want %q", st.Reason, tc.want)
			}
			if sums[0].Intervals != len(rows) {
				t.Errorf("summary counts %d intervals, rows %d", sums[0].Intervals, len(rows))
			}
		})
	}
}

// TestSoakAutoInterrupted: a soak that stops on precision, cancelled
// after its third window, keeps the three and says it was interrupted.
func TestSoakAutoInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("a soak of about 1.5 seconds")
	}
	arm := Arm{Name: "leaky", Path: testservers.Build(t), Args: []string{"-mode", "grpc", "-listen-port", "{port}", "-leak-per-call", "65536"}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var rows []SoakRow
	var sums []SoakSummary
	cfg := Config{Arms: []Arm{arm}, Client: ClientLean, Rate: 200, Soak: 8 * time.Second, SoakInterval: 400 * time.Millisecond,
		SoakAuto: true, MaxInFlight: 16, Warmup: 200}
	err := RunSoak(ctx, cfg, func(r SoakRow) error {
		rows = append(rows, r)
		if len(rows) == 3 {
			cancel()
		}
		return nil
	}, func(s SoakSummary) error { sums = append(sums, s); return nil })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("RunSoak = %v, want context.Canceled", err)
	}
	if len(rows) != 3 || len(sums) != 1 || sums[0].Stop == nil {
		t.Fatalf("%d rows, summaries %+v; want 3 rows and one summary with a stop", len(rows), sums)
	}
	st := sums[0].Stop
	if st.Reason != SoakStopInterrupted || st.Windows != 3 || sums[0].Intervals != 3 || st.HalfWidthPerHour == nil {
		t.Errorf("stop %+v over %d intervals, want interrupted after 3, with the 3 rows' half-width", st, sums[0].Intervals)
	}
	if s := st.String(); !strings.HasPrefix(s, "stopped after 3 windows (interrupted): the RSS slope known within ±") {
		t.Errorf("Stop.String() = %q", s)
	}
}
