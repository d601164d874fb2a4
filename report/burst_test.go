package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coldstart-go/coldstart/record"
)

// burstFile is a `coldstart run --burst` results file of two arms at
// N=1, 2, 4 and 8 under cores=1 over 6 rounds: fast's p50 doubles from
// N=4 on, slow's only at 8, and fast serves all 8 sooner. With
// summaries false it is an interrupted campaign's, without them.
func burstFile(t *testing.T, summaries bool) string {
	t.Helper()
	f := newJSONL(t)
	add := f.add
	add("provenance", map[string]any{"schema": "coldstart/v1", "tool": "coldstart", "started_at": "2026-12-02T02:00:00Z"})
	jitter := []float64{1, 1.06, 0.97, 1.03, 0.99, 1.05}
	var bursts []record.Burst
	for run, j := range jitter {
		for _, x := range []struct {
			arm       string
			n         int
			p50, last float64
		}{
			{"fast", 1, 10, 10}, {"slow", 1, 20, 20},
			{"fast", 2, 14, 16}, {"slow", 2, 24, 26},
			{"fast", 4, 30, 40}, {"slow", 4, 30, 44},
			{"fast", 8, 60, 90}, {"slow", 8, 80, 120},
		} {
			cpu, peak := 12.5*float64(x.n), int64(x.n)*(3<<20)
			b := record.Burst{Arm: x.arm, Budget: "cores=1", N: x.n, Run: run + 1, P50Ms: x.p50 * j, P99Ms: x.last * j, MaxMs: x.last * j,
				AllReadyMs: x.last * j * 1.01, GroupCPUMs: &cpu, GroupMemPeakBytes: &peak}
			bursts = append(bursts, b)
			add(record.BurstInstanceKind, record.BurstInstance{Arm: x.arm, Budget: b.Budget, N: x.n, Run: b.Run, Instance: 1, FirstRPCMs: b.P50Ms})
			add(record.BurstKind, b)
		}
	}
	if summaries {
		for _, s := range record.SummarizeBursts(bursts, nil, "slow", 0.95, 0.05) {
			add(record.BurstSummaryKind, s)
		}
	}
	return f.write("20261202-020000_coldstart.jsonl")
}

// TestBurstSection: the bursts are read, and the section shows the table
// per budget with each arm's knee, the recommendation at the largest N,
// and asks for the plot, which draws p50 and max on a log2 axis of N.
func TestBurstSection(t *testing.T) {
	for _, summaries := range []bool{true, false} {
		r, err := Load(burstFile(t, summaries))
		if err != nil {
			t.Fatal(err)
		}
		r.Baseline = "slow"
		if len(r.Warnings) > 0 || len(r.Campaigns) != 1 || len(r.Campaigns[0].Bursts) != 48 {
			t.Fatalf("Load: warnings %v, %d campaigns; want the file's 48 bursts", r.Warnings, len(r.Campaigns))
		}
		var b strings.Builder
		var asked []string
		r.burstSection(&mdw{w: &b}, func(c *Campaign, kind string) { asked = append(asked, c.Label+" "+kind) })
		got := b.String()
		for _, want := range []string{
			"## Bursts: many starts at once in one budget\n",
			"**Knee**: the smallest N whose p50 is more than 2× N=1's with significance",
			"### cores=1 — 20261202-020000_coldstart\n",
			"| arm | N | rounds | p50 ms | p99 ms | max ms | all ms [95% CI] | all vs slow | p50 vs N=1 | group CPU ms | group peak |",
			"| fast | 1 | 6 | 10.2 | 10.2 | 10.2 | 10.3 [9.80–10.7] | 0.50× [0.50, 0.50] faster (p 0.020) | baseline | 12.5 | 3.0 MiB |",
			"| fast | 4 | 6 | 30.5 | 40.6 | 40.6 | 41.0 [39.2–42.8] | 0.91× [0.91, 0.91] faster (p 0.031) | 3.00× [3.00, 3.00] slower (p 0.020) **knee** | 50.0 | 12.0 MiB |",
			"| slow | 1 | 6 | 20.3 | 20.3 | 20.3 | 20.5 [19.6–21.4] | baseline | baseline | 12.5 | 3.0 MiB |",
			"**Recommendation:** under a burst of 8 at cores=1, fast answers the last start after 92.3 ms; slow after 123 ms. " +
				"For bursts of 8, fast serves all 8 sooner than slow: 0.75× [0.75, 0.75] faster (p 0.026).",
			"\n*Measured 2026-12-02 02:00 UTC (`20261202-020000_coldstart.jsonl`)",
		} {
			if !strings.Contains(got, want) {
				t.Errorf("summaries %v: burst section lacks %q:\n%s", summaries, want, got)
			}
		}
		// fast's knee at 4 (3×), slow's at 8 (4×); one knee per arm.
		if n := strings.Count(got, "**knee**"); n != 2 {
			t.Errorf("%d knees marked, want 2 (fast at 4, slow at 8):\n%s", n, got)
		}
		for _, row := range []string{"| fast | 4 |", "| slow | 8 |"} {
			i := strings.Index(got, row)
			if i < 0 || !strings.Contains(got[i:i+strings.Index(got[i:], "\n")], "**knee**") {
				t.Errorf("row %q not marked as the knee", row)
			}
		}
		if len(asked) != 1 || asked[0] != "20261202-020000_coldstart burst" {
			t.Errorf("plots asked for %q, want the burst plot once", asked)
		}
		ps, err := r.burstPlots(r.Campaigns[0])
		if err != nil || len(ps) != 1 {
			t.Fatalf("burstPlots = %d plots, %v; want 1", len(ps), err)
		}
		file := filepath.Join(t.TempDir(), "burst.svg")
		if err := writeFigure(framed{p: ps[0].p}, ps[0].title, file, "svg"); err != nil {
			t.Fatal(err)
		}
		svg, _ := os.ReadFile(file)
		for _, want := range []string{"fast p50", "slow max", "knee: p50 &gt; 2× N=1&#39;s", ">8<", "(log2)"} {
			if !strings.Contains(string(svg), want) {
				t.Errorf("burst plot lacks %q", want)
			}
		}
	}
}

func TestBurstRecommendationWithoutWinner(t *testing.T) {
	ratio := 1.01
	sums := []BurstSummary{
		{Arm: "default", Budget: "cores=2", N: 4, Runs: 6, AllReadyMs: 50, VsBaseline: record.VsBaseline{Baseline: "default", Verdict: record.VerdictBaseline}},
		{Arm: "static", Budget: "cores=2", N: 4, Runs: 6, AllReadyMs: 49, VsBaseline: record.VsBaseline{Baseline: "default", Ratio: &ratio, Verdict: "no difference detected"}},
	}
	got := burstRecommendation("cores=2", sums)
	want := "under a burst of 4 at cores=2, static answers the last start after 49.0 ms; default after 50.0 ms. No arm serves all 4 significantly sooner than default."
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
