package stats

import (
	"math"
	"strings"
	"testing"
)

// rounds are n synthetic rounds around 100 whose spread shrinks with
// spread: round i is 100 × (1 ± spread·(i mod 3)), alternating sides.
func rounds(n int, spread float64) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		d := spread * float64(i%3)
		if i%2 == 1 {
			d = -d
		}
		xs[i] = 100 * (1 + d)
	}
	return xs
}

// TestAutoStopSynthetic feeds the rule rounds one at a time, as a run
// does, and checks where it stops: a tight series stops on precision at
// the first round that may (MinAutoRounds), a wide one at the cap, and a
// series without an interval keeps the others from stopping.
func TestAutoStopSynthetic(t *testing.T) {
	for _, tt := range []struct {
		name      string
		series    [][]float64 // every round of every series; the rule sees a prefix
		precision float64
		max       int
		min       int
		want      Stopping
		wantAt    int // rounds counted when it stopped
	}{
		{"tight stops at the first round that may", [][]float64{rounds(40, 0.001), rounds(40, 0.002)}, 0.03, 40, 0, Precise, MinAutoRounds},
		{"wide runs to the cap", [][]float64{rounds(40, 0.001), rounds(40, 0.2)}, 0.03, 12, 0, AtCap, 12},
		{"cap equal to the minimum", [][]float64{rounds(40, 0.3)}, 0.01, MinAutoRounds, 0, AtCap, MinAutoRounds},
		{"loose precision with a wide series", [][]float64{rounds(40, 0.2)}, 0.5, 40, 0, Precise, MinAutoRounds},
		{"a raised minimum holds a precise stop", [][]float64{rounds(40, 0.001)}, 0.03, 40, 9, Precise, 9},
		{"a minimum below the floor changes nothing", [][]float64{rounds(40, 0.001)}, 0.03, 40, 3, Precise, MinAutoRounds},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := AutoStop{Precision: tt.precision, Max: tt.max, Min: tt.min}
			for n := 1; n <= tt.max; n++ {
				var prefix [][]float64
				for _, xs := range tt.series {
					prefix = append(prefix, xs[:n])
				}
				w, _ := Widest(prefix, DefaultConfidence)
				got := a.After(n, w)
				if got == GoOn {
					continue
				}
				if got != tt.want || n != tt.wantAt {
					t.Fatalf("stopped %v after %d rounds (widest ±%.3g), want %v after %d", got, n, w, tt.want, tt.wantAt)
				}
				if got == Precise && !(w <= tt.precision) {
					t.Errorf("stopped on precision with the widest interval ±%.3g, beyond ±%g", w, tt.precision)
				}
				return
			}
			t.Fatalf("never stopped in %d rounds", tt.max)
		})
	}
}

func TestWidest(t *testing.T) {
	tight, wide := rounds(10, 0.001), rounds(10, 0.1)
	w, at := Widest([][]float64{tight, wide, tight}, DefaultConfidence)
	if at != 1 || !(w > HalfWidth(tight, DefaultConfidence)) || w != HalfWidth(wide, DefaultConfidence) {
		t.Errorf("Widest(tight, wide, tight) = %v, %d; want the wide series' half-width, at 1", w, at)
	}
	// Five rounds have no 95% interval: the widest is unbounded, and the
	// rule does not stop on it, however loose the precision.
	w, at = Widest([][]float64{tight, tight[:5]}, DefaultConfidence)
	if !math.IsInf(w, 1) || at != 1 {
		t.Errorf("Widest with a 5-round series = %v, %d; want +Inf at 1", w, at)
	}
	if got := (AutoStop{Precision: 0.99, Max: 60}).After(10, w); got != GoOn {
		t.Errorf("After(10, +Inf) = %v, want GoOn", got)
	}
	if w, at := Widest(nil, DefaultConfidence); w != 0 || at != -1 {
		t.Errorf("Widest(nil) = %v, %d; want 0, -1", w, at)
	}
	if hw := HalfWidth([]float64{0, 0, 0, 0, 0, 0, 0}, DefaultConfidence); !math.IsInf(hw, 1) {
		t.Errorf("HalfWidth of zeros = %v, want +Inf (no relative width of a zero median)", hw)
	}
}

func TestAutoStopBadInput(t *testing.T) {
	for _, p := range []float64{0, 1, -0.1, 3, math.NaN()} {
		if err := CheckPrecision(p); err == nil || !strings.Contains(err.Error(), "between 0 and 1") {
			t.Errorf("CheckPrecision(%v) = %v, want an error", p, err)
		}
	}
	if err := CheckPrecision(0.03); err != nil {
		t.Errorf("CheckPrecision(0.03) = %v", err)
	}
	if err := CheckMaxRounds(MinAutoRounds - 1); err == nil || !strings.Contains(err.Error(), "want at least 6") {
		t.Errorf("CheckMaxRounds(5) = %v, want at least 6", err)
	}
	if err := CheckMaxRounds(MinAutoRounds); err != nil {
		t.Errorf("CheckMaxRounds(6) = %v", err)
	}
	if n := MinRunsForInterval(DefaultConfidence); n != MinAutoRounds {
		t.Errorf("MinRunsForInterval(0.95) = %d, MinAutoRounds %d: keep them the same", n, MinAutoRounds)
	}
}
