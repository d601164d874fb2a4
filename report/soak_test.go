package report

import (
	"strings"
	"testing"
)

// TestSoakSection renders a real soak's results file (`steady run --soak
// 6s --soak-interval 1s --rate 200` on the test server leaking 64 KiB per
// call): the verdict with both slopes, the plots over time, a row per
// interval.
func TestSoakSection(t *testing.T) {
	plots, md := renderFixture(t, "soak", "Soak")
	var files []string
	for _, p := range plots {
		files = append(files, p.File)
	}
	if len(plots) != 2 || !strings.Contains(files[0], "soak_rss") || !strings.Contains(files[1], "soak_p99") {
		t.Errorf("plots %v, want the soak's RSS and p99", files)
	}
	for _, want := range []string{"## Soak: memory and latency over time", "**leaky** (max) at 200 calls/s", "**drifting**. RSS drifting: +43.69 GiB/h (95% CI", "![server RSS over the soak", "| leaky | 6 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}
