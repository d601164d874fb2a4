package report

import (
	"bytes"
	"encoding/xml"
	"flag"
	"github.com/coldstart-go/coldstart/campaign"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/perf/benchfmt"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// golden compares got with testdata/<TestName>.golden, or rewrites it.
func golden(t *testing.T, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", t.Name()+".golden")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run go test -update): %v", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("output differs from %s (-want +got):\n%s", path, diff)
	}
}

func load(t *testing.T, paths ...string) *Report {
	t.Helper()
	r, err := Load(paths...)
	if err != nil {
		t.Fatalf("Load(%q) = %v", paths, err)
	}
	return r
}

// renderFixture loads the results files in testdata/<fixture>, which must
// read without warnings, draws their plots (each a non-empty file) and
// renders the report with them, compared with this test's golden file. It
// returns the plots and the Markdown.
func renderFixture(t *testing.T, fixture, title string) ([]Plot, string) {
	t.Helper()
	r := load(t, filepath.Join("testdata", fixture))
	if len(r.Warnings) != 0 {
		t.Errorf("warnings from the %s fixture: %v", fixture, r.Warnings)
	}
	dir := t.TempDir()
	plots, err := r.Plots(dir)
	if err != nil {
		t.Fatalf("Plots() = %v", err)
	}
	for _, p := range plots {
		if fi, err := os.Stat(filepath.Join(dir, p.File)); err != nil || fi.Size() == 0 {
			t.Errorf("plot %s: %v", p.File, err)
		}
	}
	var b bytes.Buffer
	if err := r.Markdown(&b, MarkdownOptions{Title: title, Plots: plots, PlotsRel: "plots"}); err != nil {
		t.Fatalf("Markdown() = %v", err)
	}
	golden(t, b.Bytes())
	return plots, b.String()
}

func TestMarkdown(t *testing.T) {
	r := load(t, "testdata")
	if len(r.Warnings) != 0 {
		t.Errorf("warnings from the good fixtures: %v", r.Warnings)
	}
	plots, err := r.Plots(t.TempDir())
	if err != nil {
		t.Fatalf("Plots() = %v", err)
	}
	var b bytes.Buffer
	if err := r.Markdown(&b, MarkdownOptions{Title: "Performance", Plots: plots, PlotsRel: "plots"}); err != nil {
		t.Fatalf("Markdown() = %v", err)
	}
	golden(t, b.Bytes())
}

func TestHeadline(t *testing.T) {
	r := load(t, "testdata")
	var b bytes.Buffer
	if err := r.Headline(&b); err != nil {
		t.Fatalf("Headline() = %v", err)
	}
	golden(t, b.Bytes())
}

func TestBenchstat(t *testing.T) {
	r := load(t, "testdata")
	var b bytes.Buffer
	if err := r.Benchstat(&b); err != nil {
		t.Fatalf("Benchstat() = %v", err)
	}
	golden(t, b.Bytes())

	// Every line reads back as a result, and names keep their budget
	// whole (cpus=0-1 must not turn into GOMAXPROCS 1).
	want := 0
	for _, c := range r.Campaigns {
		for _, s := range c.Samples {
			if !s.Warmup && s.Error == "" {
				want++
			}
		}
		want += len(c.DensitySamples) + len(c.Steady)
	}
	rd := benchfmt.NewReader(bytes.NewReader(b.Bytes()), "report.txt")
	n := 0
	budgets := map[string]bool{}
	for rd.Scan() {
		switch rec := rd.Result().(type) {
		case *benchfmt.SyntaxError:
			t.Errorf("benchfmt: %v", rec)
		case *benchfmt.Result:
			n++
			if !strings.HasPrefix(string(rec.Name), "ColdStart/") && !strings.HasPrefix(string(rec.Name), "IdleInstance/") && !strings.HasPrefix(string(rec.Name), "Steady/") {
				t.Errorf("result name %q", rec.Name)
			}
			_, parts := rec.Name.Parts()
			for _, p := range parts {
				if strings.HasPrefix(string(p), "-") {
					t.Errorf("%s: read a GOMAXPROCS suffix %q", rec.Name, p)
				}
				if b, ok := strings.CutPrefix(string(p), "/budget="); ok {
					budgets[b] = true
				}
			}
		}
	}
	if err := rd.Err(); err != nil {
		t.Fatal(err)
	}
	if n != want {
		t.Errorf("benchfmt read %d results, want %d (one per counted sample, idle instance and steady step)", n, want)
	}
	for _, b := range []string{"cpus=0", "cpus=0-1", "cores=0.5", "cores=1", "max"} {
		if !budgets[b] {
			t.Errorf("no result with budget=%s (have %v)", b, budgets)
		}
	}
}

// TestBenchstatCompares runs the real benchstat (golang.org/x/perf at the
// version in go.mod) on two campaigns, the second with upx 20% faster.
func TestBenchstatCompares(t *testing.T) {
	if testing.Short() {
		t.Skip("builds benchstat")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "benchstat")
	build := exec.Command(gobin, "build", "-o", bin, "golang.org/x/perf/cmd/benchstat")
	if out, err := build.CombinedOutput(); err != nil {
		t.Skipf("build benchstat: %v\n%s", err, out)
	}
	r := load(t, "testdata/20261130-030000_coldstart.jsonl")
	var old, nu bytes.Buffer
	if err := r.Benchstat(&old); err != nil {
		t.Fatal(err)
	}
	c := r.Campaigns[0]
	c.Provenance.Commit = "0123456789abcdef" // another commit must still compare
	for i := range c.Samples {
		if c.Samples[i].Arm == "upx" {
			c.Samples[i].FirstRPCMs *= 0.8
		}
	}
	if err := r.Benchstat(&nu); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"old.txt": old.Bytes(), "new.txt": nu.Bytes()} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, "old.txt", "new.txt")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("benchstat old.txt new.txt: %v\n%s", err, out)
	}
	var upx, static string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "ColdStart/budget=cpus=0/arm=upx ") && upx == "" {
			upx = line
		}
		if strings.HasPrefix(line, "ColdStart/budget=cpus=0/arm=static ") && static == "" {
			static = line
		}
	}
	if !strings.Contains(upx, "-20.00%") {
		t.Errorf("benchstat's upx row = %q, want -20.00%%; output:\n%s", upx, out)
	}
	if !strings.Contains(static, "~") {
		t.Errorf("benchstat's static row = %q, want ~ (no change); output:\n%s", static, out)
	}
}

func TestPlots(t *testing.T) {
	r := load(t, "testdata")
	dir := t.TempDir()
	plots, err := r.Plots(dir)
	if err != nil {
		t.Fatalf("Plots() = %v", err)
	}
	// 2 budgets local + 1 Knative CDF, 1 density, 2 latency + throughput +
	// CPU per call; a forest per campaign with arm comparisons (local and
	// Knative cold starts, density, steady) and the Knative waterfall.
	if len(plots) != 13 {
		t.Errorf("Plots() wrote %d plots, want 13: %+v", len(plots), plots)
	}
	for _, p := range plots {
		f, err := os.Open(filepath.Join(dir, p.File))
		if err != nil {
			t.Fatal(err)
		}
		root, paths, err := parseSVG(f)
		f.Close()
		if err != nil {
			t.Errorf("%s: not valid XML: %v", p.File, err)
			continue
		}
		if root != "svg" || paths < 3 {
			t.Errorf("%s: root <%s>, %d paths; want an <svg> with something drawn", p.File, root, paths)
		}
	}
}

func TestPlotsPNG(t *testing.T) {
	r := load(t, "testdata/20261130-031000_density.jsonl")
	dir := t.TempDir()
	plots, err := r.PlotsAs(dir, "png")
	if err != nil {
		t.Fatalf("PlotsAs(png) = %v", err)
	}
	if len(plots) != 2 {
		t.Fatalf("PlotsAs(png) wrote %d plots, want 2 (the density forest and bars)", len(plots))
	}
	f, err := os.Open(filepath.Join(dir, plots[0].File))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", plots[0].File, err)
	}
	if b := img.Bounds(); b.Dx() < 100 || b.Dy() < 100 {
		t.Errorf("%s is %v, want a plot-sized image", plots[0].File, b)
	}
	if _, err := r.PlotsAs(dir, "gif"); err == nil {
		t.Errorf("PlotsAs(gif) = nil error, want one")
	}
}

func parseSVG(r io.Reader) (root string, paths int, err error) {
	d := xml.NewDecoder(r)
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return root, paths, nil
		}
		if err != nil {
			return root, paths, err
		}
		if se, ok := tok.(xml.StartElement); ok {
			if root == "" {
				root = se.Name.Local
			}
			if se.Name.Local == "path" {
				paths++
			}
		}
	}
}

// swapArms exchanges two arms' figures in a campaign by exchanging their
// names.
func swapArms(c *Campaign, a, b string) {
	sw := func(s *string) {
		switch *s {
		case a:
			*s = b
		case b:
			*s = a
		}
	}
	for i := range c.Summaries {
		sw(&c.Summaries[i].Arm)
	}
	for i := range c.Samples {
		sw(&c.Samples[i].Arm)
	}
	for i := range c.Density {
		sw(&c.Density[i].Arm)
	}
	for i := range c.DensitySamples {
		sw(&c.DensitySamples[i].Arm)
	}
	for i := range c.Steady {
		sw(&c.Steady[i].Arm)
	}
	for i := range c.SteadyRounds {
		sw(&c.SteadyRounds[i].Arm)
	}
}

func recText(rs []Recommendation) string {
	var b strings.Builder
	for _, r := range rs {
		b.WriteString(r.String() + "\n")
	}
	return b.String()
}

func TestRecommendationsFollowData(t *testing.T) {
	tests := []struct {
		name       string
		file, a, b string
		before     []string
		after      []string
	}{
		{
			name: "cold start", file: "20261130-030000_coldstart", a: "default", b: "static",
			before: []string{"Under cores=0.5, static starts fastest, 1.18× faster than default (15.8 vs 18.8 ms median; static/default 0.846× [0.788, 0.966], p=0.028, n=8+8)"},
			after:  []string{"Under cores=0.5, default starts fastest, 1.18× faster than static (15.8 vs 18.8 ms median; default/static 0.846× [0.788, 0.966], p=0.028, n=8+8)"},
		},
		{
			name: "density", file: "20261130-031000_density", a: "static", b: "upx",
			before: []string{"static packs densest: 2.1 MiB", "no trade-off: static packs densest"},
			after:  []string{"upx packs densest: 2.1 MiB", "a trade-off: upx packs densest, but the fastest start is default/static under cpus=0"},
		},
		{
			name: "steady", file: "20261130-032000_steady", a: "default", b: "static",
			before: []string{"Under cpus=0-1 over grpc, static spends the least server CPU per call at sequential 8B c1: 110 µs against 118 µs for default (static/default 0.938× [0.901, 0.976], p=0.008, 5+5 rounds)"},
			after:  []string{"Under cpus=0-1 over grpc, default spends the least server CPU per call at sequential 8B c1: 110 µs against 118 µs for static (default/static 0.938× [0.901, 0.976], p=0.008, 5+5 rounds)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := load(t, "testdata")
			got := recText(r.Recommendations())
			for _, s := range tt.before {
				if !strings.Contains(got, s) {
					t.Errorf("recommendations lack %q before the swap:\n%s", s, got)
				}
			}
			for _, c := range r.Campaigns {
				if c.Label == tt.file {
					swapArms(c, tt.a, tt.b)
				}
			}
			swapped := recText(r.Recommendations())
			for _, s := range tt.after {
				if !strings.Contains(swapped, s) {
					t.Errorf("recommendations lack %q after swapping %s and %s:\n%s", s, tt.a, tt.b, swapped)
				}
			}
			for _, s := range tt.before {
				if strings.Contains(swapped, s) {
					t.Errorf("recommendations still say %q after swapping %s and %s", s, tt.a, tt.b)
				}
			}
		})
	}
}

func TestBadInput(t *testing.T) {
	r := load(t, "testdata/bad")
	var got []string
	for _, w := range r.Warnings {
		got = append(got, w.String())
	}
	f1, f2 := filepath.Join("testdata", "bad", "20261130-040000_coldstart.jsonl"), filepath.Join("testdata", "bad", "20261130-040500_coldstart.jsonl")
	want := []string{
		f1 + `:3: skipped summary record: field "median_ms" holds a JSON string`,
		f1 + `:4: skipped: unknown kind "probe_v0"`,
		f1 + `:5: skipped: no "kind"`,
		f1 + `:7: skipped: not valid JSON (truncated or hand-edited?): invalid character ' ' after decimal point in numeric literal`,
		f2 + `:1: schema "coldstart/v2", want "coldstart/v1": file skipped`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	if len(r.Campaigns) != 1 || len(r.Campaigns[0].Summaries) != 2 {
		t.Fatalf("Load kept %d campaigns, want 1 with the 2 good summaries", len(r.Campaigns))
	}
	var b bytes.Buffer
	if err := r.Markdown(&b, MarkdownOptions{}); err != nil {
		t.Fatal(err)
	}
	golden(t, b.Bytes())
}

func TestReadFillsMissingSummaries(t *testing.T) {
	// An interrupted campaign: samples, no summary lines.
	in := `{"kind":"provenance","schema":"coldstart/v1","started_at":"2026-11-30T03:00:00Z"}
{"kind":"sample","arm":"static","budget":"max","run":0,"warmup":true,"first_rpc_ms":50}
{"kind":"sample","arm":"static","budget":"max","run":1,"first_rpc_ms":8,"pss_bytes":100}
{"kind":"sample","arm":"static","budget":"max","run":2,"first_rpc_ms":6,"pss_bytes":100}
{"kind":"sample","arm":"static","budget":"max","run":3,"first_rpc_ms":7,"pss_bytes":200,"future_field":1}
{"kind":"sample","arm":"static","budget":"max","run":5,"first_rpc_ms":9,"pss_bytes":null}
{"kind":"sample","arm":"static","budget":"max","run":4,"first_rpc_ms":0,"error":"not ready"}
`
	c, ws, err := Read("x.jsonl", strings.NewReader(in))
	if err != nil || len(ws) != 0 {
		t.Fatalf("Read() = %v, warnings %v", err, ws)
	}
	// The failed PSS reading (null) is missing, not a 0 in the median.
	pss := int64(100)
	want := []Summary{{Summary: campaign.Summary{Arm: "static", Budget: "max", Runs: 4, N: 4, MedianMs: 7.5, P90Ms: 9, MinMs: 6, MaxMs: 9,
		PSSBytes: &pss, Missing: 4, Confidence: 0.95, PhasesMs: map[string]float64{}}, FromSamples: true}}
	if diff := cmp.Diff(want, c.Summaries); diff != "" {
		t.Errorf("summaries (-want +got):\n%s", diff)
	}
}

func TestDoubt(t *testing.T) {
	tests := []struct {
		name string
		s    Summary
		want string
	}{
		{"quiet", Summary{Summary: campaign.Summary{Runs: 20, MedianMs: 8, P90Ms: 9, MinMs: 7, MaxMs: 12}}, ""},
		{"wide range", Summary{Summary: campaign.Summary{Runs: 20, MedianMs: 8, P90Ms: 9, MinMs: 7, MaxMs: 22}}, "max 3.1× min"},
		{"long tail", Summary{Summary: campaign.Summary{Runs: 20, MedianMs: 8, P90Ms: 17, MinMs: 7, MaxMs: 18}}, "p90 2.1× median"},
		{"few runs", Summary{Summary: campaign.Summary{Runs: 3, MedianMs: 8, P90Ms: 9, MinMs: 7, MaxMs: 9}}, "3 runs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.s.Doubt(); got != tt.want {
				t.Errorf("%+v.Doubt() = %q, want %q", tt.s, got, tt.want)
			}
		})
	}
}

func TestRecommendationsSkipEmptyFigures(t *testing.T) {
	r := &Report{Campaigns: []*Campaign{{
		Label: "c",
		Summaries: []Summary{
			{Summary: campaign.Summary{Arm: "a", Budget: "max", Runs: 5, MedianMs: 0}},
			{Summary: campaign.Summary{Arm: "b", Budget: "max", Runs: 5, MedianMs: 9, MinMs: 8, MaxMs: 10, P90Ms: 10}},
		},
		Steady: []SteadyRow{
			{Arm: "a", Budget: "max", Protocol: "grpc", Scenario: "sequential", Concurrency: 1, CallsPerS: 100, P50Us: 100},
			{Arm: "b", Budget: "max", Protocol: "grpc", Scenario: "sequential", Concurrency: 1, CallsPerS: 110, P50Us: 90, ServerCPUUsPerCall: 50},
		},
	}}}
	got := recText(r.Recommendations())
	for _, bad := range []string{"Inf", "NaN", "CPU per call"} {
		if strings.Contains(got, bad) {
			t.Errorf("recommendations from rows without figures say %q:\n%s", bad, got)
		}
	}
}

// Arm names do not identify binaries: a JVM campaign's "default" takes no
// idle PSS from the sample server's density campaign, and start-against-
// density conclusions stay within one server.
func TestDensityMatchesBinaryNotName(t *testing.T) {
	sum := func(arm string, med float64) Summary {
		return Summary{Summary: campaign.Summary{Arm: arm, Budget: "max", Runs: 5, MedianMs: med, MinMs: med, MaxMs: med, P90Ms: med}}
	}
	art := func(arm, sha string) Artifact { return Artifact{Arm: arm, SHA256: sha} }
	echo := &Campaign{Label: "echo",
		Artifacts: []Artifact{art("default", "e1"), art("static", "e2")},
		Summaries: []Summary{sum("default", 10), sum("static", 8)}}
	jvm := &Campaign{Label: "jvm",
		Artifacts: []Artifact{art("default", "j1"), art("snapshot", "j1")},
		Summaries: []Summary{sum("default", 200), sum("snapshot", 80)}}
	dens := &Campaign{Label: "dens",
		Artifacts: []Artifact{art("default", "e1"), art("static", "e2")},
		Density: []DensityRow{
			{Arm: "default", Budget: "max", Instances: 8, PSSBytes: 4 << 20, RSSBytes: 14 << 20},
			{Arm: "static", Budget: "max", Instances: 8, PSSBytes: 3 << 20, RSSBytes: 12 << 20},
		}}
	r := &Report{Campaigns: []*Campaign{echo, jvm, dens}}
	if _, _, ok := r.densityFor(echo, "default", "max"); !ok {
		t.Error("the sample server's default found no density row of the same binary")
	}
	if _, d, ok := r.densityFor(jvm, "default", "max"); ok {
		t.Errorf("the JVM campaign's default took the sample server's density row %+v", d)
	}
	got := recText(r.Recommendations())
	if !strings.Contains(got, "Of the arms in coldstart#1 and density, no trade-off: static packs densest") {
		t.Errorf("recommendations lack the sample server's start-against-density conclusion:\n%s", got)
	}
	if strings.Contains(got, "coldstart#2 and density") || strings.Contains(got, "snapshot/max (coldstart#2)") {
		t.Errorf("recommendations join the JVM campaign to the sample server's density:\n%s", got)
	}
}
