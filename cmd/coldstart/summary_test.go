package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/coldstart-go/coldstart/campaign"
	"github.com/coldstart-go/coldstart/internal/stats"
	"github.com/coldstart-go/coldstart/record"
	"github.com/coldstart-go/coldstart/report"
)

var updateText = flag.Bool("update-text", false, "rewrite testdata/*.txt from the current terminal output")

// publishedColdText renders a published cold-start file's summaries as
// `coldstart run` prints them at a terminal, verdicts computed afresh
// from its samples.
func publishedColdText(t *testing.T, file string, o coldTextOptions) string {
	t.Helper()
	r, err := report.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	c := r.Campaigns[0]
	var sums []campaign.Summary
	for _, s := range c.Summaries {
		sums = append(sums, s.Summary)
	}
	record.CompareToBaseline(sums, c.Samples, "", o.Confidence, o.MinEffect)
	var b bytes.Buffer
	if err := writeColdText(&b, sums, o); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestColdText checks run's terminal output on the published five-arm,
// three-budget campaign: no line wider than 100 columns, a verdict line
// per budget, and the text as committed in testdata.
func TestColdText(t *testing.T) {
	file := filepath.Join("..", "..", "results", "20261201-112156_coldstart.jsonl")
	o := coldTextOptions{Confidence: stats.DefaultConfidence, Warmup: true, MinEffect: stats.DefaultMinEffect}
	got := publishedColdText(t, file, o)
	for i, line := range strings.Split(got, "\n") {
		if n := utf8.RuneCountInString(line); n > textWidth {
			t.Errorf("line %d is %d columns, want at most %d: %q", i+1, n, textWidth, line)
		}
	}
	for _, b := range []string{"cpus=0", "cpus=0-1", "cores=0.5"} {
		if !strings.Contains(got, "\n"+b+": ") {
			t.Errorf("no verdict line for budget %s in:\n%s", b, got)
		}
	}
	// upx is 13× the baseline's start under every budget: a verdict the
	// line must carry whatever the noise.
	if !strings.Contains(got, "upx ") || !strings.Contains(got, "slower than default (p<0.001)") {
		t.Errorf("upx's verdict against default is missing:\n%s", got)
	}
	golden := filepath.Join("testdata", "coldtext.txt")
	if *updateText {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test -run TestColdText -update-text writes it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("terminal output changed (-want +got); -update-text rewrites it:\n%s", diff)
	}
}

// TestColdTextFewRuns: below the runs an interval needs, the row says so
// instead of leaving the interval blank.
func TestColdTextFewRuns(t *testing.T) {
	var ss []record.Sample
	for i, ms := range []float64{10, 11, 12, 20, 21, 22} {
		arm := "default"
		if i >= 3 {
			arm = "static"
		}
		ss = append(ss, record.Sample{Arm: arm, Budget: "max", Run: i%3 + 1, FirstRPCMs: ms})
	}
	sums := []campaign.Summary{record.Summarize(ss[:3]), record.Summarize(ss[3:])}
	sums[0].Arm, sums[1].Arm = "default", "static"
	sums[0].Budget, sums[1].Budget = "max", "max"
	record.CompareToBaseline(sums, ss, "", 0.95, 0.05)
	var b bytes.Buffer
	if err := writeColdText(&b, sums, coldTextOptions{Confidence: 0.95, MinEffect: 0.05}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "11.0 (no CI: 3 runs < 6)") {
		t.Errorf("the row does not say why it has no interval:\n%s", b.String())
	}
	if !strings.Contains(b.String(), "static ~ default") {
		t.Errorf("3+3 runs resolve nothing, want ~:\n%s", b.String())
	}
}

// TestWriteDidNotFit: per arm, the first N the cluster could not hold at
// once is named with how many of its pods it placed and why, once;
// bursts that fit say nothing.
func TestWriteDidNotFit(t *testing.T) {
	two := 2
	bursts := []record.Burst{
		{Arm: "static", N: 1, Run: 1},
		{Arm: "static", N: 5, Run: 0, Unschedulable: "pod p: Unschedulable: 0/1 nodes are available: 1 Insufficient cpu", ScheduledAtOnce: &two},
		{Arm: "upx", N: 5, Run: 1},
		{Arm: "static", N: 5, Run: 1, Unschedulable: "pod q: Unschedulable: again", ScheduledAtOnce: &two},
	}
	var b strings.Builder
	if err := writeDidNotFit(&b, bursts); err != nil {
		t.Fatal(err)
	}
	want := "static: N=5 did not fit at once: 2 of 5 pods scheduled (pod p: Unschedulable: 0/1 nodes are available: 1 Insufficient cpu); N ≥ 5 not run after it\n"
	if b.String() != want {
		t.Errorf("got %q\nwant %q", b.String(), want)
	}
}
