package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/coldstart-go/coldstart/record"
)

// TestVerdictSectionPaired: a summary with the paired fields shows both
// tests' counts, -runs auto's rounds and a gate's tries; one without them
// (files written before) shows as it did.
func TestVerdictSectionPaired(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	i := func(v int) *int { return &v }
	old := VerdictSummary{Experiment: "aa", Truth: "none", Campaigns: 20, RunsPerArm: 10, Detected: 1, DetectedRate: 0.05, DetectableAt20: f(0.2)}
	nw := VerdictSummary{Experiment: "sleep", Truth: "+2ms", Campaigns: 20, Detected: 5, DetectedRate: 0.25,
		PairedDetected: i(19), PairedDetectedRate: f(0.95), TruthDiffMs: f(2.2), TruthRatio: f(1.25), DiffCovered: 18, RatioCovered: 17,
		PairedDiffCovered: i(19), PairedRatioCovered: i(20), DetectableAt20: f(0.16), DetectableUnpairedAt20: f(0.14), DetectablePairedAt20: f(0.04),
		DetectableUnpairedAtRuns: f(0.09), DetectablePairedAtRuns: f(0.03),
		Precision: 0.03, MaxRuns: 60, RunsMin: 12, RunsMax: 60, RunsMedian: f(31)}
	g := VerdictSummary{Experiment: "gate-aa", Truth: "none", Campaigns: 40, RunsPerArm: 20, GateFails: i(1), GatePasses: i(39), GateIncomparable: i(0), GateBusy: i(3),
		PairedDetected: i(2), PairedDetectedRate: f(0.05)}
	r := &Report{Campaigns: []*Campaign{{File: "x_verdict.jsonl", VerdictSummaries: []record.VerdictSummary{old, nw, g}}}}
	var b bytes.Buffer
	r.verdictSection(&mdw{w: &b})
	out := b.String()
	for _, want := range []string{
		"| aa | none | 20 × 10+10 | 1/20 (5%) | – | 20.0% |",
		"| 20 × auto (±3.0%, ≤ 60: 12–60, median 31) | 5/20 (25%); paired 19/20 (95%) | 18/20 (diff 2.20 ms), 17/20 (ratio 1.250); paired 19/20, 20/20 | 16.0% (within a campaign: unpaired 14.0%, paired 4.0%); at its own runs: unpaired 9.0%, paired 3.0% |",
		"| gate-aa | none | 40 × 20+20 | gate failed 1/40, passed 39/40; 0/40 (0%); paired 2/40 (5%) |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("verdict section lacks %q:\n%s", want, out)
		}
	}
}
