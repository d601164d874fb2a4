package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coldstart-go/coldstart/record"
)

// costFile is a `coldstart cost` results file: provenance, two rows of one
// traffic model (one on the front) and its answer.
func costFile(t *testing.T) string {
	t.Helper()
	f := newJSONL(t)
	add := f.add
	add("provenance", map[string]any{"schema": "coldstart/v1", "tool": "coldstart", "started_at": "2026-12-01T12:00:00Z"})
	add(record.CostKind, record.CostRow{Traffic: "gamma:1/h,cv=2", Seed: 1, DurationHours: 168, Arm: "static", Platform: "knative", Budget: "knative",
		StartSamples: 10, Policy: "knative", Requests: 179, Cold: 145, ColdPct: 81, AddedP50Ms: 804, AddedP99Ms: 1117, AddedP999Ms: 1117,
		InstanceHoursPerDay: 0.52, IdleGiBHoursPerDay: 0.0016, IdleBytes: 3 << 20, IdleSource: "local PSS (density, 8 idle instances)", Front: true})
	add(record.CostKind, record.CostRow{Traffic: "gamma:1/h,cv=2", Seed: 1, DurationHours: 168, Arm: "static", Platform: "knative", Budget: "knative",
		StartSamples: 10, Policy: "knative:min=1", Requests: 179, InstanceHoursPerDay: 24, IdleGiBHoursPerDay: 0.074, IdleBytes: 3 << 20, Front: true})
	add(record.CostAnswerKind, record.CostAnswer{Traffic: "gamma:1/h,cv=2", Constraint: "p99<=300ms", Found: true, Arm: "static",
		Policy: "knative:min=1", Text: "p99<=300ms: knative:min=1 with static; 0.0742 GiB-h/day idle"})
	path := f.write("20261201-120000_cost.jsonl")
	return path
}

// TestCostSection: the cost rows are read, and the section shows each
// traffic model's table, its front and the answer, and asks for its plot.
func TestCostSection(t *testing.T) {
	r, err := Load(costFile(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Warnings) > 0 || len(r.Campaigns) != 1 || len(r.Campaigns[0].Cost) != 2 || len(r.Campaigns[0].CostAnswers) != 1 {
		t.Fatalf("Load: warnings %v, %d campaigns, want the cost file's 2 rows and 1 answer", r.Warnings, len(r.Campaigns))
	}
	var b strings.Builder
	var asked []string
	r.costSection(&mdw{w: &b}, func(c *Campaign, kind string) { asked = append(asked, c.Label+" "+kind) })
	got := b.String()
	for _, want := range []string{
		"## Scale-to-zero cost\n",
		"### 20261201-120000_cost — `gamma:1/h,cv=2`\n",
		"179 requests over 7 days (seed 1); starts drawn from the Knative campaign's scales from zero (10 measured); idle memory 3.0 MiB, local PSS (density, 8 idle instances).",
		"| static | `knative` | 81.00% | 804 | 1117 | 1117 | 0.52 | 0.0016 | 0.00 | ★ |",
		"**Front:** static knative (p99 1117 ms, 0.0016 GiB-h/day); static knative:min=1 (p99 0.00 ms, 0.074 GiB-h/day).",
		"**Answer:** p99<=300ms: knative:min=1 with static; 0.0742 GiB-h/day idle.",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("cost section lacks %q:\n%s", want, got)
		}
	}
	if len(asked) != 1 || asked[0] != "20261201-120000_cost cost" {
		t.Errorf("plots asked for %q, want the cost plot once", asked)
	}
	ps, err := costPlots(r.Campaigns[0])
	if err != nil || len(ps) != 1 {
		t.Fatalf("costPlots = %d plots, %v; want 1", len(ps), err)
	}
	file := filepath.Join(t.TempDir(), "cost.svg")
	if err := writeFigure(framed{p: ps[0].p}, ps[0].title, file, "svg"); err != nil {
		t.Fatal(err)
	}
	svg, _ := os.ReadFile(file)
	for _, want := range []string{"Pareto front", "static", "GiB-hours"} {
		if !strings.Contains(string(svg), want) {
			t.Errorf("cost plot lacks %q", want)
		}
	}
}
