package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPullSection renders a real `coldstart pull` results file: the
// first-deploy table, break-evens, second deploy, plots and the
// recommendation that cites them.
func TestPullSection(t *testing.T) {
	r := load(t, filepath.Join("testdata", "pull"))
	if len(r.Warnings) != 0 {
		t.Errorf("warnings from the pull fixture: %v", r.Warnings)
	}
	dir := t.TempDir()
	plots, err := r.Plots(dir)
	if err != nil {
		t.Fatalf("Plots() = %v", err)
	}
	var kinds []string
	for _, p := range plots {
		kinds = append(kinds, p.Kind)
		if fi, err := os.Stat(filepath.Join(dir, p.File)); err != nil || fi.Size() == 0 {
			t.Errorf("plot %s: %v", p.File, err)
		}
	}
	if strings.Join(kinds, ",") != "pull,breakeven" {
		t.Errorf("plots of kinds %v, want pull,breakeven", kinds)
	}
	var b bytes.Buffer
	if err := r.Markdown(&b, MarkdownOptions{Title: "Pull", Plots: plots, PlotsRel: "plots"}); err != nil {
		t.Fatalf("Markdown() = %v", err)
	}
	golden(t, b.Bytes())
	for _, want := range []string{"## Image pull", "Break-even", "Second deploy", "Image pull, gzip layers, on a node without the image: upx"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("Markdown lacks %q", want)
		}
	}
}
