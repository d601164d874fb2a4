package report

import (
	"encoding/json"
	"os"
	"path/filepath"
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

// loadPublished loads the results docs/published.json names.
func loadPublished(t *testing.T) *Report {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "docs", "published.json"))
	if err != nil {
		t.Fatalf("read the published results' list: %v", err)
	}
	var pub struct{ Files []string }
	if err := json.Unmarshal(b, &pub); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range pub.Files {
		paths = append(paths, filepath.Join("..", f))
	}
	return load(t, paths...)
}

// roundNoise is a campaign of two arms over 12 rounds where each round
// scales both arms' starts alike, by 1 to 3.2: fast starts 10% faster than
// default in every round, which only a test pairing the rounds can see
// through the spread.
func roundNoise() *Campaign {
	c := &Campaign{Label: "rounds"}
	for i := range 12 {
		scale := 1 + 0.2*float64(i)
		jitter := 1 + 0.002*float64(i%3)
		c.Samples = append(c.Samples,
			Sample{Arm: "default", Budget: "cpus=0", Run: i + 1, FirstRPCMs: 10 * scale},
			Sample{Arm: "fast", Budget: "cpus=0", Run: i + 1, FirstRPCMs: 9 * scale * jitter})
	}
	c.fillSummaries()
	return c
}

// sameVerdict: two rows of one comparison say the same.
func sameVerdict(a, b ComparisonRow) bool {
	return a.Verdict == b.Verdict && a.Test == b.Test && a.PValue == b.PValue && a.NA == b.NA && a.NB == b.NB &&
		a.Actionable == b.Actionable && ratioText(a) == ratioText(b)
}

// TestVerdictsFollowTheTable: where the paired and the unpaired test
// disagree, the recommendations and the Decision say what the
// comparisons table says, both ways: fast, 10% faster in every round
// through a 3× round-to-round spread, is shipped although Mann–Whitney
// sees no difference; the fixture's static under cores=0.5, 0.877×
// unpaired at p=0.028, is not shipped, as paired it is not told apart
// from default. On the fixtures and the published results, every row a
// rule looked at is the table's row.
func TestVerdictsFollowTheTable(t *testing.T) {
	conf := stats.DefaultConfidence
	find := func(rows []ComparisonRow, campaign, scope, metric, a, b string) (ComparisonRow, bool) {
		for _, row := range rows {
			if row.Campaign == campaign && row.Scope == scope && row.Metric == metric && row.A == a && row.B == b {
				return row, true
			}
		}
		return ComparisonRow{}, false
	}

	t.Run("paired faster, unpaired alike", func(t *testing.T) {
		c := roundNoise()
		r := &Report{Campaigns: []*Campaign{c}}
		if u := stats.Compare(coldSamples(c)[[2]string{"fast", "cpus=0"}], coldSamples(c)[[2]string{"default", "cpus=0"}], conf); u.Significant() {
			t.Fatalf("Mann–Whitney tells the arms apart (p=%.3f): the fixture no longer tests a disagreement", u.P)
		}
		row, ok := find(r.Comparisons(), "rounds", "budget=cpus=0", "first_rpc_ms", "fast", "default")
		if !ok || row.Test != stats.PairedWilcoxon || row.Verdict != string(stats.Faster) || !row.Actionable {
			t.Fatalf("table row = %+v, want paired, faster, actionable", row)
		}
		recs := r.Recommendations()
		if got := recStarting(recs, "Under cpus=0, ship fast: it starts 1.11× faster than default ["); len(got) != 1 {
			t.Errorf("no verdict shipping fast:\n%s", recText(recs))
		}
		ds := r.Decisions()
		if len(ds) != 1 || ds[0].Ship != "fast" || ds[0].Why != WhyFaster || ds[0].Start == nil || !sameVerdict(*ds[0].Start, row) {
			t.Errorf("decisions = %+v, want fast shipped on the table's row", ds)
		}
	})

	t.Run("unpaired faster, paired alike", func(t *testing.T) {
		r := load(t, "testdata")
		var c *Campaign
		for _, x := range r.Campaigns {
			if x.Label == "20261130-030000_coldstart" {
				c = x
			}
		}
		if c == nil {
			t.Fatal("no campaign 20261130-030000_coldstart")
		}
		xs := coldSamples(c)
		if u := stats.Compare(xs[[2]string{"static", "cores=0.5"}], xs[[2]string{"default", "cores=0.5"}], conf); !u.Actionable(r.minEffect()) {
			t.Fatalf("Mann–Whitney does not find static faster (p=%.3f): the fixture no longer tests a disagreement", u.P)
		}
		row, ok := find(r.Comparisons(), c.Label, "budget=cores=0.5", "first_rpc_ms", "static", "default")
		if !ok || row.Test != stats.PairedWilcoxon || row.Verdict != string(stats.NoDifference) {
			t.Fatalf("table row = %+v, want paired, no difference detected", row)
		}
		recs, hs := r.recommend()
		for _, rec := range recs {
			if strings.HasPrefix(rec.Text, "Under cores=0.5 in coldstart#1, ship static") || strings.Contains(rec.Text, "static starts fastest under cores=0.5") {
				t.Errorf("a recommendation has static faster under cores=0.5 against the table's %q: %s", row.Verdict, rec.Text)
			}
		}
		var held bool
		for _, h := range hs {
			held = held || (h.row.Campaign == c.Label && h.row.Scope == row.Scope && h.row.A == "static" && h.why == whyNoDifference && sameVerdict(h.row, row))
		}
		if !held {
			t.Errorf("static under cores=0.5 is not held as %q on the table's row", whyNoDifference)
		}
		for _, d := range r.Decisions() {
			if d.Campaign == c && d.Budget == "cores=0.5" && d.Why == WhyFaster {
				t.Errorf("the Decision ships %s under cores=0.5 as faster; the table finds no arm faster", d.Ship)
			}
		}
	})

	grown := load(t, "testdata")
	grow(grown)
	for name, r := range map[string]*Report{"fixtures": load(t, "testdata"), "fixtures, grown": grown, "published": loadPublished(t)} {
		rows := r.Comparisons()
		check := func(what string, cr ComparisonRow) {
			t.Helper()
			if cr.NA == 0 || cr.NB == 0 {
				return // no samples: nothing was tested
			}
			row, ok := find(rows, cr.Campaign, cr.Scope, cr.Metric, cr.A, cr.B)
			if ok && !sameVerdict(cr, row) {
				t.Errorf("%s: %s %s %s %s vs %s: %s %s p=%v %s, the table's row %s %s p=%v %s", name, what, cr.Scope, cr.Metric, cr.A, cr.B,
					cr.Verdict, cr.Test, cr.PValue, ratioText(cr), row.Verdict, row.Test, row.PValue, ratioText(row))
			}
		}
		_, hs := r.recommend()
		for _, h := range hs {
			check("held", h.row)
		}
		for _, p := range r.StartPicks() {
			for _, cr := range p.Compared {
				check("start pick", cr)
				if _, ok := find(rows, cr.Campaign, cr.Scope, cr.Metric, cr.A, cr.B); !ok && cr.NA > 0 {
					t.Errorf("%s: the start pick compares %s with %s under %s, which the table does not", name, cr.A, cr.B, cr.Scope)
				}
			}
		}
		for _, d := range r.Decisions() {
			if d.Start != nil {
				check("decision", *d.Start)
			}
			for _, a := range d.Avoid {
				check("decision avoid", a)
			}
		}
	}
}
