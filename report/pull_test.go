package report

import (
	"strings"
	"testing"
)

// TestPullSection renders a real `coldstart pull` results file: the
// first-deploy table, break-evens, second deploy, plots and the
// recommendation that cites them.
func TestPullSection(t *testing.T) {
	plots, md := renderFixture(t, "pull", "Pull")
	var kinds []string
	for _, p := range plots {
		kinds = append(kinds, p.Kind)
	}
	if strings.Join(kinds, ",") != "pull,breakeven" {
		t.Errorf("plots of kinds %v, want pull,breakeven", kinds)
	}
	for _, want := range []string{"## Image pull", "Break-even", "Second deploy", "Image pull, gzip layers, on a node without the image: upx"} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q", want)
		}
	}
}
