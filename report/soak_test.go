package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSoakSection renders a real soak's results file (`steady run --soak
// 6s --soak-interval 1s --rate 200` on the test server leaking 64 KiB per
// call): the verdict with both slopes, the plots over time, a row per
// interval.
func TestSoakSection(t *testing.T) {
	r := load(t, filepath.Join("testdata", "soak"))
	if len(r.Warnings) != 0 {
		t.Errorf("warnings from the soak fixture: %v", r.Warnings)
	}
	dir := t.TempDir()
	plots, err := r.Plots(dir)
	if err != nil {
		t.Fatalf("Plots() = %v", err)
	}
	var kinds []string
	for _, p := range plots {
		kinds = append(kinds, p.File)
		if fi, err := os.Stat(filepath.Join(dir, p.File)); err != nil || fi.Size() == 0 {
			t.Errorf("plot %s: %v", p.File, err)
		}
	}
	if len(plots) != 2 || !strings.Contains(kinds[0], "soak_rss") || !strings.Contains(kinds[1], "soak_p99") {
		t.Errorf("plots %v, want the soak's RSS and p99", kinds)
	}
	var b bytes.Buffer
	if err := r.Markdown(&b, MarkdownOptions{Title: "Soak", Plots: plots, PlotsRel: "plots"}); err != nil {
		t.Fatalf("Markdown() = %v", err)
	}
	golden(t, b.Bytes())
	for _, want := range []string{"## Soak: memory and latency over time", "**leaky** (max) at 200 calls/s", "**drifting**. RSS drifting: +43.69 GiB/h (95% CI", "![server RSS over the soak", "| leaky | 6 |"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q", want)
		}
	}
}
