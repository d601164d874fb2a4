package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/coldstart-go/coldstart/campaign"
	"github.com/coldstart-go/coldstart/internal/stats"
	"github.com/coldstart-go/coldstart/record"
)

// TestDensityText: density's terminal table from fixed instances carries
// each arm's PSS against the baseline's (ratio, interval, verdict) in one
// "vs BASE" column, and fits textWidth.
func TestDensityText(t *testing.T) {
	var ss []campaign.DensitySample
	rows := []campaign.DensityRow{}
	for _, a := range []struct {
		arm string
		pss int64
	}{{"default", 4 << 20}, {"static", 4 << 20}, {"upx", 40 << 20}} {
		var total int64
		for i := 0; i < 8; i++ {
			p := a.pss + int64(i)*4096
			ss = append(ss, campaign.DensitySample{Arm: a.arm, Budget: "max", Instance: i + 1, PSSBytes: p, RSSBytes: p + 8<<20})
			total += p
		}
		rows = append(rows, campaign.DensityRow{Arm: a.arm, Budget: "max", Instances: 8, N: 8, PSSBytes: a.pss, PSSAnonBytes: a.pss / 2,
			RSSBytes: a.pss + 8<<20, TotalPSSBytes: total, TotalRSSBytes: total + 64<<20, SizeBytes: 18 << 20})
	}
	base := record.CompareDensity(rows, ss, "", stats.DefaultConfidence, stats.DefaultMinEffect)
	var b bytes.Buffer
	if err := writeDensityText(&b, rows, base); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, re := range []string{
		`(?m)^8 idle instances per arm; budget max; .*baseline default$`,
		`(?m)^arm +PSS +vs default +anon +RSS +total PSS +total RSS +size$`,
		`(?m)^default +4\.0 MiB +baseline +2\.0 MiB `,
		`(?m)^static +4\.0 MiB +1\.00× \[[0-9.]+, [0-9.]+\] ~ +2\.0 MiB `,
		`(?m)^upx +40\.0 MiB +9\.9[0-9]× \[[0-9.]+, [0-9.]+\] higher +20\.0 MiB `,
	} {
		if !regexp.MustCompile(re).MatchString(got) {
			t.Errorf("density text lacks %s:\n%s", re, got)
		}
	}
	for i, line := range strings.Split(got, "\n") {
		if n := utf8.RuneCountInString(line); n > textWidth {
			t.Errorf("line %d is %d columns, want at most %d: %q", i+1, n, textWidth, line)
		}
	}
}
