package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coldstart-go/coldstart/internal/stats"
)

// pairedFaster makes the fixture's static arm under cores=0.5 start 15%
// faster than default in every run, round noise and all: what the
// paired test is for (the fixture's own rounds share no noise, and their
// 0.877× is not significant paired, p=0.055).
func pairedFaster(t *testing.T, r *Report) {
	t.Helper()
	for _, c := range r.Campaigns {
		if c.Label != "20261130-030000_coldstart" {
			continue
		}
		def := map[int]float64{}
		for _, s := range c.Samples {
			if s.Arm == "default" && s.Budget == "cores=0.5" {
				def[s.Run] = s.FirstRPCMs
			}
		}
		for i, s := range c.Samples {
			if s.Arm == "static" && s.Budget == "cores=0.5" {
				c.Samples[i].FirstRPCMs = 0.85 * def[s.Run]
			}
		}
		return
	}
	t.Fatal("no campaign 20261130-030000_coldstart")
}

// moreInstances gives the fixture's density campaign two more instances
// per arm (copies of its first two, as new processes), so that its
// comparisons hold the instances an interval needs: the fixture's own 4
// per arm are too few for the Decision to act on.
func moreInstances(t *testing.T, r *Report) {
	t.Helper()
	for _, c := range r.Campaigns {
		if c.Label != "20261130-031000_density" {
			continue
		}
		var extra []DensitySample
		for _, s := range c.DensitySamples {
			if s.Instance <= 2 {
				s.Instance += 4
				s.PID += 100
				extra = append(extra, s)
			}
		}
		c.DensitySamples = append(c.DensitySamples, extra...)
		return
	}
	t.Fatal("no campaign 20261130-031000_density")
}

// TestDecisions checks the rules on the fixtures: under cores=0.5 static
// starts 15% faster than default in every run (pairedFaster) and is
// shipped; under cpus=0 it starts alike, and idles in less PSS only on
// the density campaign's 4 instances per arm, too few to act on, so the
// baseline is shipped there; with 6 per arm (moreInstances) static is;
// upx, 8× slower, is to be avoided under both; the cluster campaign, whose
// arms no test tells apart, ships its baseline.
func TestDecisions(t *testing.T) {
	for _, tc := range []struct {
		name      string
		instances func(*testing.T, *Report)
		cpus0     string
		cpus0Why  string
	}{
		{"4 instances", func(*testing.T, *Report) {}, "default", WhyBaseline},
		{"6 instances", moreInstances, "static", WhySmaller},
	} {
		t.Run(tc.name, func(t *testing.T) { testDecisions(t, tc.instances, tc.cpus0, tc.cpus0Why) })
	}
}

func testDecisions(t *testing.T, instances func(*testing.T, *Report), cpus0, cpus0Why string) {
	r := load(t, "testdata")
	pairedFaster(t, r)
	instances(t, r)
	got := map[string]Decision{}
	for _, d := range r.Decisions() {
		got[d.Campaign.Label+" "+d.Budget] = d
	}
	for _, want := range []struct {
		key, ship, why, avoid string
	}{
		{"20261130-030000_coldstart cores=0.5", "static", WhyFaster, "upx"},
		{"20261130-030000_coldstart cpus=0", cpus0, cpus0Why, "upx"},
		{"20261130-033000_coldstart cores=1", "static", WhyBaseline, ""},
	} {
		d, ok := got[want.key]
		if !ok {
			t.Errorf("no decision for %s (have %v)", want.key, keys(got))
			continue
		}
		if d.Ship != want.ship || d.Why != want.why {
			t.Errorf("%s: ship %s (%s), want %s (%s)", want.key, d.Ship, d.Why, want.ship, want.why)
		}
		var avoid []string
		for _, a := range d.Avoid {
			avoid = append(avoid, a.A)
		}
		if strings.Join(avoid, ",") != want.avoid {
			t.Errorf("%s: avoid %v, want %q", want.key, avoid, want.avoid)
		}
		if d.Why == WhyFaster && (d.Start == nil || d.Start.Verdict != string(stats.Faster) || !d.Start.Actionable) {
			t.Errorf("%s: shipped as faster on %+v", want.key, d.Start)
		}
	}
}

// TestDecisionBaseline: --baseline static sets every arm against static,
// and default, 1/0.85 = 1.18× static's start under cores=0.5
// (pairedFaster), is to be avoided.
func TestDecisionBaseline(t *testing.T) {
	r := load(t, "testdata")
	pairedFaster(t, r)
	r.Baseline = "static"
	for _, d := range r.Decisions() {
		if d.Campaign.Label != "20261130-030000_coldstart" || d.Budget != "cores=0.5" {
			continue
		}
		if d.Baseline != "static" || d.Ship != "static" {
			t.Errorf("baseline %s, ship %s; want static, static", d.Baseline, d.Ship)
		}
		var names []string
		for _, a := range d.Avoid {
			names = append(names, a.A)
		}
		if strings.Join(names, ",") != "upx,default" {
			t.Errorf("avoid %v, want upx then default", names)
		}
		return
	}
	t.Fatal("no decision for cores=0.5")
}

// TestDecisionNothingComparable: a campaign of one arm decides nothing,
// and the block says what to measure instead of recommending.
func TestDecisionNothingComparable(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join("testdata", "20261130-030000_coldstart.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var keep []string
	for _, line := range strings.Split(string(src), "\n") {
		if !strings.Contains(line, `"arm":"static"`) && !strings.Contains(line, `"arm":"upx"`) {
			keep = append(keep, line)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "20261130-030000_coldstart.jsonl"), []byte(strings.Join(keep, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	r := load(t, dir)
	if ds := r.Decisions(); len(ds) != 0 {
		t.Fatalf("Decisions() = %d from one arm, want none", len(ds))
	}
	var b bytes.Buffer
	if err := r.Headline(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "Nothing to decide: no cold-start campaign here measured two arms") {
		t.Errorf("the Decision block does not say there is nothing to compare:\n%s", b.String())
	}
}

// TestDecisionFirst: the Decision is the report's first section.
func TestDecisionFirst(t *testing.T) {
	r := load(t, "testdata")
	var b bytes.Buffer
	if err := r.Markdown(&b, MarkdownOptions{}); err != nil {
		t.Fatal(err)
	}
	i := strings.Index(b.String(), "\n## ")
	if i < 0 || !strings.HasPrefix(b.String()[i:], "\n## Decision\n") {
		t.Errorf("first section is not the Decision:\n%.300s", b.String()[max(i, 0):])
	}
}

// TestMarkdownPages: with PagesDir the details go to pages of their own,
// linked from the document, and the document keeps the answer.
func TestMarkdownPages(t *testing.T) {
	r := load(t, "testdata")
	dir := filepath.Join(t.TempDir(), "report")
	var b bytes.Buffer
	pages, err := r.MarkdownPages(&b, MarkdownOptions{PagesDir: dir, PagesRel: "docs/report", PagesBack: "../../PERFORMANCE.md"})
	if err != nil {
		t.Fatal(err)
	}
	doc := b.String()
	for _, want := range []string{"## Decision", "## Headline: spawn → first RPC", "## Recommendations", "## Details", "(docs/report/coldstart.md)"} {
		if !strings.Contains(doc, want) {
			t.Errorf("document lacks %q", want)
		}
	}
	if strings.Contains(doc, "## Comparisons") || strings.Contains(doc, "## Density") {
		t.Errorf("detail sections left in the document")
	}
	if len(pages) < 4 {
		t.Fatalf("pages = %v, want the comparisons, cold start, density and steady at least", pages)
	}
	for _, p := range pages {
		body, err := os.ReadFile(filepath.Join(dir, p.File))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(body), "# "+p.Title+"\n\nPart of [coldstart report](../../PERFORMANCE.md)") {
			t.Errorf("%s starts %.120q", p.File, body)
		}
	}
}

func keys(m map[string]Decision) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// tieArm is one arm of tieCampaign: its start as a share of default's in
// every round, the sign its ±3% jitter takes in odd rounds, its binary's
// size and its startup CPU (0 = not read).
type tieArm struct {
	name   string
	share  float64
	sign   float64
	size   int64
	cpuMs  float64
	pssMiB float64 // idle PSS in the density campaign (0 = not measured)
}

// tieCampaign is a cold-start campaign of default and arms over 12 rounds,
// each round scaling every arm's start alike (by 1 to 3.2), with a
// density campaign of the arms that have a PSS. Two arms whose jitters
// take opposite signs start alike: their per-round ratio swings ±6%
// either way, which no test tells apart.
func tieCampaign(arms ...tieArm) *Report {
	c := &Campaign{Label: "tie", File: "tie_coldstart.jsonl"}
	d := &Campaign{Label: "tie-density", File: "tie_density.jsonl"}
	all := append([]tieArm{{name: "default", share: 1, size: 18 << 20, cpuMs: 8, pssMiB: 3.5}}, arms...)
	for _, a := range all {
		c.Artifacts = append(c.Artifacts, Artifact{Arm: a.name, SizeBytes: a.size})
		for i := range 12 {
			j := 1.0
			if i%2 == 1 {
				j += 0.03 * a.sign
			} else {
				j -= 0.03 * a.sign
			}
			s := Sample{Arm: a.name, Budget: "cpus=0", Run: i + 1, FirstRPCMs: 10 * (1 + 0.2*float64(i)) * a.share * j}
			if a.cpuMs > 0 {
				cpu := a.cpuMs * (1 + 0.001*float64(i%3))
				s.StartupCPUMs = &cpu
			}
			c.Samples = append(c.Samples, s)
		}
		if a.pssMiB > 0 {
			d.Density = append(d.Density, DensityRow{Arm: a.name, Budget: "max", Instances: 8, PSSBytes: int64(a.pssMiB * (1 << 20))})
			for i := range 8 {
				d.DensitySamples = append(d.DensitySamples, DensitySample{Arm: a.name, Budget: "max", Instance: i + 1,
					PSSBytes: int64((a.pssMiB + 0.001*float64(i)) * (1 << 20))})
			}
		}
	}
	c.fillSummaries()
	return &Report{Campaigns: []*Campaign{c, d}}
}

// TestDecisionPrefersCheaper: of the arms faster than the baseline, one
// no test tells apart from the fastest is shipped when it costs less: a
// build before a start arm, then less idle PSS, then less startup CPU,
// then a smaller binary; the Decision line and the recommendation say
// the other was alike. An arm told apart as faster is shipped whatever
// it costs.
func TestDecisionPrefersCheaper(t *testing.T) {
	const mib = 1 << 20
	for _, tt := range []struct {
		name       string
		arms       []tieArm
		ship, tied string
		rec        string // a prefix of the shipping recommendation
	}{
		{
			name: "build before start arm, alike",
			arms: []tieArm{{name: "prebound", share: 0.80, sign: 1, size: 18 * mib}, {name: "static", share: 0.81, sign: -1, size: 12 * mib}},
			ship: "static", tied: "prebound",
			rec: "Under cpus=0, ship static: it starts 1.24× faster than default [",
		},
		{
			name: "start arm resolved faster",
			arms: []tieArm{{name: "prebound", share: 0.70, sign: 1, size: 18 * mib}, {name: "static", share: 0.85, sign: 1, size: 12 * mib}},
			ship: "prebound",
			rec:  "Under cpus=0, ship prebound: it starts 1.43× faster than default [",
		},
		{
			name: "smaller binary, alike",
			arms: []tieArm{{name: "big", share: 0.80, sign: 1, size: 20 * mib}, {name: "small", share: 0.81, sign: -1, size: 10 * mib}},
			ship: "small", tied: "big",
			rec: "Under cpus=0, ship small: it starts 1.24× faster than default [",
		},
		{
			name: "less startup CPU before a smaller binary",
			arms: []tieArm{{name: "small", share: 0.80, sign: 1, size: 10 * mib, cpuMs: 10}, {name: "lean", share: 0.81, sign: -1, size: 20 * mib, cpuMs: 5}},
			ship: "lean", tied: "small",
		},
		{
			name: "less idle PSS before less startup CPU",
			arms: []tieArm{{name: "lean", share: 0.80, sign: 1, size: 10 * mib, cpuMs: 5, pssMiB: 3.5}, {name: "dense", share: 0.81, sign: -1, size: 20 * mib, cpuMs: 10, pssMiB: 3.2}},
			ship: "dense", tied: "lean",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := tieCampaign(tt.arms...)
			ds := r.Decisions()
			if len(ds) != 1 {
				t.Fatalf("%d decisions, want 1", len(ds))
			}
			d := ds[0]
			if d.Ship != tt.ship || d.Why != WhyFaster || strings.Join(d.Tied, ",") != tt.tied {
				t.Errorf("ship %s (%s), tied %v; want %s (%s), tied %q", d.Ship, d.Why, d.Tied, tt.ship, WhyFaster, tt.tied)
			}
			wantShip := "**" + tt.ship + "**"
			if tt.tied != "" {
				wantShip += " (" + tt.tied + " alike)"
			}
			if got := r.decisionRow(d)[1]; got != wantShip {
				t.Errorf("Decision line ships %q, want %q", got, wantShip)
			}
			// The recommendations ship the same arm, and say why not the other.
			recs := r.Recommendations()
			ships := recStarting(recs, "Under cpus=0, ship ")
			if len(ships) != 1 || !strings.HasPrefix(ships[0], "Under cpus=0, ship "+tt.ship+":") || (tt.rec != "" && !strings.HasPrefix(ships[0], tt.rec)) {
				t.Fatalf("shipping recommendations = %q, want one shipping %s (%q)", ships, tt.ship, tt.rec)
			}
			if tt.tied != "" && !strings.Contains(ships[0], "; "+tt.tied+" (") {
				t.Errorf("the recommendation does not name %s as alike: %s", tt.tied, ships[0])
			}
		})
	}
}

// TestDecisionThinDensity: when only a density campaign with too few
// instances says an alike arm idles in less PSS, the baseline is shipped
// and its row says what to measure; with enough instances nothing is
// left to say.
func TestDecisionThinDensity(t *testing.T) {
	for _, tc := range []struct {
		name      string
		instances func(*testing.T, *Report)
		thin      string
	}{
		{"4 instances", func(*testing.T, *Report) {}, "static"},
		{"6 instances", moreInstances, ""},
	} {
		r := load(t, "testdata")
		tc.instances(t, r)
		for _, d := range r.Decisions() {
			if d.Campaign.Label != "20261130-030000_coldstart" || d.Budget != "cpus=0" {
				continue
			}
			if got := strings.Join(d.Thin, ","); got != tc.thin {
				t.Errorf("%s: Thin %q, want %q", tc.name, got, tc.thin)
			}
			row := strings.Join(r.decisionRow(d), " | ")
			if want := "static may idle in less PSS (too few density instances to say: measure at least 6)"; (tc.thin != "") != strings.Contains(row, want) {
				t.Errorf("%s: row %q, want it to say %q: %v", tc.name, row, want, tc.thin != "")
			}
		}
	}
}
