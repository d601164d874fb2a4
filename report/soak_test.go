package report

import (
	"strings"
	"testing"
)

// TestSoakSection renders two real soaks' results files (`steady run
// --soak 6s --soak-interval 1s --rate 200` on the test server leaking 64
// KiB per call, and `--soak auto --soak-interval 500ms --max-soak 5s` on
// it): the verdict with both slopes, why a soak that stops on precision
// ended, the plots over time, a row per interval.
func TestSoakSection(t *testing.T) {
	plots, md := renderFixture(t, "soak", "Soak")
	var files []string
	for _, p := range plots {
		files = append(files, p.File)
	}
	if len(plots) != 4 || !strings.Contains(files[0], "soak_rss") || !strings.Contains(files[1], "soak_p99") {
		t.Errorf("plots %v, want each soak's RSS and p99", files)
	}
	for _, want := range []string{"## Soak: memory and latency over time", "**leaky** (max) at 200 calls/s", "**drifting**. RSS drifting: +43.69 GiB/h (95% CI", "![server RSS over the soak", "| leaky | 6 |",
		"**leaky-auto** (max) at 200 calls/s for 0.1 min, 10 intervals", "Soaked until precise: stopped at the cap (5 s, 10 windows): the RSS slope known within ±458.97 MiB/h, short of ±0.50 MiB/h."} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}
