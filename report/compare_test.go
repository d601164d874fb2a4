package report

import (
	"strings"
	"testing"

	"github.com/coldstart-go/coldstart/internal/stats"
)

// TestComparisons: the same readings under two arm names come out "no
// difference detected" and nothing is recommended on them; a 2 ms shift
// is detected, with an interval that covers it; two campaigns of the same
// arm and budget are compared with each other.
func TestComparisons(t *testing.T) {
	base := []float64{10.2, 9.8, 10.5, 10.1, 9.9, 10.7, 10.3, 10.0, 9.7, 10.4, 10.6, 9.6}
	campaign := func(label string, arms map[string][]float64, order ...string) *Campaign {
		c := &Campaign{Label: label}
		for _, a := range order {
			for i, v := range arms[a] {
				c.Samples = append(c.Samples, Sample{Arm: a, Budget: "cpus=0", Run: i + 1, FirstRPCMs: v})
			}
		}
		c.fillSummaries()
		return c
	}
	plus := func(xs []float64, d float64) []float64 {
		out := make([]float64, len(xs))
		for i, x := range xs {
			out[i] = x + d
		}
		return out
	}
	r := &Report{Campaigns: []*Campaign{
		campaign("aa", map[string][]float64{"a": base, "b": base}, "a", "b"),
		campaign("ab", map[string][]float64{"a": base, "sleep2ms": plus(base, 2)}, "a", "sleep2ms"),
	}}
	rows := r.Comparisons()
	find := func(kind, campaign, a string) ComparisonRow {
		for _, c := range rows {
			if c.Kind == kind && c.Campaign == campaign && c.A == a {
				return c
			}
		}
		t.Fatalf("no %s comparison of %s in %s: %+v", kind, a, campaign, rows)
		return ComparisonRow{}
	}
	aa := find("arms", "aa", "b")
	if aa.Verdict != string(stats.NoDifference) || aa.Actionable || aa.NA != 12 || aa.NB != 12 || aa.Metric != "first_rpc_ms" {
		t.Errorf("A/A comparison = %+v, want no difference detected over 12+12", aa)
	}
	ab := find("arms", "ab", "sleep2ms")
	if ab.Verdict != string(stats.Slower) || !ab.Actionable {
		t.Errorf("A/B (+2 ms) comparison = %+v, want slower, actionable", ab)
	}
	if ab.cmp.DiffLow > 2 || ab.cmp.DiffHigh < 2 {
		t.Errorf("A/B (+2 ms): difference interval [%v, %v] does not cover 2", ab.cmp.DiffLow, ab.cmp.DiffHigh)
	}
	across := find("campaigns", "aa → ab", "ab")
	if across.Verdict != string(stats.NoDifference) || across.B != "aa" {
		t.Errorf("campaign comparison of arm a = %+v, want no difference detected, b = aa", across)
	}
	// Arms of one campaign ran in the same runs: paired; two campaigns'
	// runs are not one campaign's rounds: unpaired.
	if aa.Test != stats.PairedWilcoxon || ab.Test != stats.PairedWilcoxon || across.Test != stats.MannWhitney {
		t.Errorf("tests: A/A %q, A/B %q, across campaigns %q; want %s, %s, %s", aa.Test, ab.Test, across.Test,
			stats.PairedWilcoxon, stats.PairedWilcoxon, stats.MannWhitney)
	}
	// Against the baseline a: sleep2ms is to be avoided; b, with the same
	// readings, is not recommended on but held as no difference.
	recs, hs := r.recommend()
	if got := recStarting(recs, "Under cpus=0 in coldstart#2, avoid sleep2ms: it starts 1.20× slower than a ["); len(got) != 1 {
		t.Errorf("no verdict against sleep2ms:\n%s", recText(recs))
	}
	for _, rec := range recs {
		if strings.Contains(rec.Text, "coldstart#1") || strings.Contains(rec.Text, " b ") {
			t.Errorf("a recommendation on the A/A campaign: %s", rec.Text)
		}
	}
	var aaHeld bool
	for _, h := range hs {
		if h.ref == "coldstart#1" && h.row.A == "b" && h.row.B == "a" && h.why == whyNoDifference {
			aaHeld = true
		}
	}
	if !aaHeld {
		t.Errorf("the A/A comparison is not held as %q: %+v", whyNoDifference, hs)
	}
}
