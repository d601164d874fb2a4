package record

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSummarizeLeavesOutMissing: a reading that failed (nil) is counted as
// missing and left out of its median; the first-RPC median carries its
// interval once there are enough runs.
func TestSummarizeLeavesOutMissing(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	i := func(v int64) *int64 { return &v }
	var ss []Sample
	for n, ms := range []float64{10, 11, 12, 13, 14, 15, 16} {
		s := Sample{Arm: "a", Budget: "max", Run: n + 1, FirstRPCMs: ms, StartupCPUMs: f(5), RSSBytes: i(100), PSSBytes: i(80)}
		if n == 3 { // /proc could not be read for this run
			s.StartupCPUMs, s.RSSBytes, s.PSSBytes = nil, nil, nil
		}
		ss = append(ss, s)
	}
	ss = append(ss, Sample{Arm: "a", Run: 0, Warmup: true, FirstRPCMs: 99}, Sample{Arm: "a", Run: 9, Error: "not ready"})
	got := Summarize(ss)
	lo, hi := 10.0, 16.0
	want := Summary{Runs: 7, N: 7, MedianMs: 13, MedianCILowMs: &lo, MedianCIHighMs: &hi, Confidence: 0.95, P90Ms: 16, MinMs: 10, MaxMs: 16,
		StartupCPUMs: f(5), RSSBytes: i(100), PSSBytes: i(80), Missing: 1, PhasesMs: map[string]float64{}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Summarize (-want +got):\n%s", diff)
	}
	none := Summarize([]Sample{{Arm: "a", Run: 1, FirstRPCMs: 10}, {Arm: "a", Run: 2, FirstRPCMs: 12}})
	if none.StartupCPUMs != nil || none.PSSBytes != nil || none.Missing != 2 || none.MedianCILowMs != nil {
		t.Errorf("Summarize without readings = cpu %v pss %v missing %d ci %v, want nil, nil, 2, nil (2 runs give no interval)",
			none.StartupCPUMs, none.PSSBytes, none.Missing, none.MedianCILowMs)
	}
}
