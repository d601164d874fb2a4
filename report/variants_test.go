package report

import (
	"strings"
	"testing"

	"github.com/coldstart-go/coldstart/internal/stats"
	"github.com/coldstart-go/coldstart/record"
)

// TestVariantComparisons: a variant (named so by its artifact) is set
// against its own arm, as kind "variants", paired by round, and not
// against the baseline; the Decision picks among the other arms only, and
// the Builds section says what the variant sets.
func TestVariantComparisons(t *testing.T) {
	base := []float64{10.2, 9.8, 10.5, 10.1, 9.9, 10.7, 10.3, 10.0, 9.7, 10.4, 10.6, 9.6}
	c := &Campaign{Label: "v"}
	v := record.Variant{Of: "static", Env: []string{"GOGC=50"}, Args: []string{"--num-stream-workers=2"}}
	c.Artifacts = []Artifact{{Arm: "default"}, {Arm: "static"}, {Arm: "static.gc", Variant: v}}
	for i, x := range base {
		c.Samples = append(c.Samples,
			Sample{Arm: "default", Budget: "max", Run: i + 1, FirstRPCMs: x},
			Sample{Arm: "static", Budget: "max", Run: i + 1, FirstRPCMs: x * 1.01},
			Sample{Arm: "static.gc", Budget: "max", Run: i + 1, FirstRPCMs: x * 1.01 * 0.8})
	}
	c.fillSummaries()
	r := &Report{Campaigns: []*Campaign{c}}
	var variant, plain int
	for _, row := range r.Comparisons() {
		switch {
		case row.Kind == KindVariants && row.Metric == "first_rpc_ms":
			variant++
			if row.A != "static.gc" || row.B != "static" || row.Verdict != string(stats.Faster) || row.Test != stats.PairedWilcoxon {
				t.Errorf("variant row %+v, want static.gc faster than static, paired", row)
			}
		case row.Kind == "arms" && row.A == "static.gc":
			t.Errorf("the variant against the baseline: %+v", row)
		case row.Kind == "arms" && row.A == "static" && row.B == "default":
			plain++
		}
	}
	if variant != 1 || plain != 1 {
		t.Errorf("%d variant rows and %d of static against default, want 1 and 1", variant, plain)
	}
	for _, d := range r.Decisions() {
		if d.Ship == "static.gc" || d.Baseline != "default" {
			t.Errorf("decision %+v: a variant shipped, or not against default", d)
		}
	}
	var b strings.Builder
	if err := r.Markdown(&b, MarkdownOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| static.gc | static | `GOGC=50` | `--num-stream-workers=2` |",
		"| budget=max | first_rpc_ms | static.gc | static |",
		"| static.gc | max | ",
		"vs static: 0.80",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q", want)
		}
	}
}
