package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"flag"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/perf/benchfmt"

	"github.com/coldstart-go/coldstart/campaign"
	"github.com/coldstart-go/coldstart/internal/stats"
	"github.com/coldstart-go/coldstart/record"
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

// recStarting returns the texts of the recommendations that start with
// prefix: a verdict is anchored at the start of its text.
func recStarting(rs []Recommendation, prefix string) []string {
	var out []string
	for _, r := range rs {
		if strings.HasPrefix(r.Text, prefix) {
			out = append(out, r.Text)
		}
	}
	return out
}

// grow doubles every campaign's density samples and steady rounds (the
// rounds renumbered after the last): the same readings taken as often
// again, enough for an interval where the fixtures hold too few.
func grow(r *Report) {
	for _, c := range r.Campaigns {
		c.DensitySamples = append(c.DensitySamples, c.DensitySamples...)
		last := 0
		for _, s := range c.SteadyRounds {
			last = max(last, s.Round)
		}
		for _, s := range c.SteadyRounds[:len(c.SteadyRounds):len(c.SteadyRounds)] {
			s.Round += last
			c.SteadyRounds = append(c.SteadyRounds, s)
		}
	}
}

// TestRecommendationsFollowData: a verdict names the arm the figures
// favour against the baseline, and swapping two arms' figures swaps it.
// The cold-start cases make static start 15% faster under cores=0.5 in
// every run (pairedFaster): the fixture's own 0.877× is significant only
// unpaired, and the report compares the arms paired by run.
func TestRecommendationsFollowData(t *testing.T) {
	tests := []struct {
		name       string
		file, a, b string
		grow       bool
		faster     bool     // pairedFaster
		before     []string // prefixes of verdicts before the swap, gone after it
		after      []string // and after it
	}{
		{
			name: "cold start", file: "20261130-030000_coldstart", a: "default", b: "static", faster: true,
			before: []string{"Under cores=0.5 in coldstart#1, ship static: it starts 1.18× faster than default [1.18, 1.18], p=0.008; 2.1 vs 2.3 MiB idle PSS; 8.0 vs 10.7 MiB binary"},
			after:  []string{"Under cores=0.5 in coldstart#1, avoid static: it starts 1.18× slower than default [1.18, 1.18], p="},
		},
		{
			name: "density", file: "20261130-031000_density", a: "default", b: "static", grow: true, faster: true,
			before: []string{"For idle memory, prefer static: it takes 0.91× default's PSS per idle instance [0.89, 0.94]",
				"No trade-off in coldstart#1 and density: static starts fastest or alike under every budget and packs densest or alike"},
			after: []string{"For idle memory, avoid static: it takes 1.10× default's PSS per idle instance [1.07, 1.12], p<0.001",
				"Trade-off in coldstart#1 and density: default packs densest, but static starts fastest under cores=0.5;"},
		},
		{
			name: "steady", file: "20261130-032000_steady", a: "default", b: "static", grow: true,
			before: []string{"Under cpus=0-1 over grpc, static saves server CPU: 0.95× default's per call at sequential 8B c1 [0.90, 0.97], p=0.006; 110 vs 118 µs."},
			after:  []string{"Under cpus=0-1 over grpc, static costs more server CPU: 1.06× default's per call at sequential 8B c1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := load(t, "testdata")
			if tt.grow {
				grow(r)
			}
			if tt.faster {
				pairedFaster(t, r)
			}
			got := r.Recommendations()
			for _, s := range tt.before {
				if len(recStarting(got, s)) != 1 {
					t.Errorf("no recommendation starts %q before the swap:\n%s", s, recText(got))
				}
			}
			for _, c := range r.Campaigns {
				if c.Label == tt.file {
					swapArms(c, tt.a, tt.b)
				}
			}
			swapped := r.Recommendations()
			for _, s := range tt.after {
				if len(recStarting(swapped, s)) != 1 {
					t.Errorf("no recommendation starts %q after swapping %s and %s:\n%s", s, tt.a, tt.b, recText(swapped))
				}
			}
			for _, s := range tt.before {
				if len(recStarting(swapped, s)) != 0 {
					t.Errorf("recommendations still say %q after swapping %s and %s", s, tt.a, tt.b)
				}
			}
		})
	}
}

// TestRecommendationsNeedAnInterval: a comparison with fewer runs a side
// than a median interval needs (the fixtures' 4 density instances and 5
// steady rounds, coldstart#2's 5 runs) is not recommended on; it is held
// as too few runs, and with the same readings taken twice it is acted on.
func TestRecommendationsNeedAnInterval(t *testing.T) {
	r := load(t, "testdata")
	recs, hs := r.recommend()
	for _, rec := range recs {
		// A cold-start verdict may quote the density medians beside it;
		// no verdict may come from density, steady or coldstart#2.
		if strings.HasPrefix(rec.Text, "For idle memory") || strings.Contains(strings.ToLower(rec.Text), "trade-off") {
			t.Errorf("a density verdict from 4 instances an arm: %s", rec.Text)
		}
		for _, row := range rec.Rows {
			if strings.HasPrefix(row, "steady ") || strings.HasPrefix(row, "coldstart#2 ") {
				t.Errorf("recommendation rests on too few runs (%s): %s", row, rec.Text)
			}
		}
	}
	tooFew := map[string]int{}
	for _, h := range hs {
		if h.why == whyTooFew {
			tooFew[h.ref]++
			if h.row.NA >= stats.MinRunsForInterval(r.confidence()) && h.row.NB >= stats.MinRunsForInterval(r.confidence()) {
				t.Errorf("held as too few runs with %d+%d: %+v", h.row.NA, h.row.NB, h.row)
			}
		}
	}
	for _, ref := range []string{"density", "steady", "coldstart#2"} {
		if tooFew[ref] == 0 {
			t.Errorf("no %s comparison held as %q: %v", ref, whyTooFew, tooFew)
		}
	}
	grow(r)
	if got := r.Recommendations(); len(recStarting(got, "For idle memory, prefer static:")) != 1 || len(recStarting(got, "Under cpus=0-1 over grpc, static saves server CPU:")) != 1 {
		t.Errorf("with twice the readings, the density and steady verdicts are missing:\n%s", recText(got))
	}
}

// TestRecommendationProse: every recommendation, on the fixtures and on
// the published results, says its verdict in at most maxProse characters
// and keeps its citations out of the text.
func TestRecommendationProse(t *testing.T) {
	reports := map[string]*Report{"fixtures": load(t, "testdata"), "pull fixture": load(t, filepath.Join("testdata", "pull"))}
	grown := load(t, "testdata")
	grow(grown)
	reports["fixtures, grown"] = grown
	if b, err := os.ReadFile(filepath.Join("..", "docs", "published.json")); err == nil {
		var pub struct{ Files []string }
		if err := json.Unmarshal(b, &pub); err != nil {
			t.Fatal(err)
		}
		var paths []string
		for _, f := range pub.Files {
			paths = append(paths, filepath.Join("..", f))
		}
		reports["published"] = load(t, paths...)
	} else {
		t.Errorf("read the published results' list: %v", err)
	}
	for name, r := range reports {
		recs := r.Recommendations()
		if len(recs) == 0 {
			t.Errorf("%s: no recommendations", name)
		}
		for _, rec := range recs {
			if n := utf8.RuneCountInString(rec.Text); n > maxProse {
				t.Errorf("%s: %d characters, want ≤ %d: %s", name, n, maxProse, rec.Text)
			}
			if len(rec.Rows) == 0 {
				t.Errorf("%s: cites no rows: %s", name, rec.Text)
			}
			for _, bad := range []string{"rows:", ".jsonl", "doubted", "[^", "NaN", "Inf", "∞"} {
				if strings.Contains(rec.Text, bad) {
					t.Errorf("%s: text holds %q: %s", name, bad, rec.Text)
				}
			}
			if strings.Contains(rec.Text, "starts fastest") && !strings.HasPrefix(rec.Text, "No trade-off") && !strings.HasPrefix(rec.Text, "Trade-off") {
				t.Errorf("%s: says an arm starts fastest outside a trade-off verdict: %s", name, rec.Text)
			}
		}
	}
}

// TestTradeoffAgainstBaseline: on the published results, the arm named
// as both starting fastest and packing densest is static, not image,
// which packs as densely but starts 5.4–5.7× slower than default.
func TestTradeoffAgainstBaseline(t *testing.T) {
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
	recs := load(t, paths...).Recommendations()
	want := "No trade-off in coldstart#1 and density#1: static starts fastest or alike under every budget and packs densest or alike; " +
		"3.2 vs 3.5 MiB idle PSS against default; image packs as densely but starts 5.35–5.69× slower than default."
	if got := recStarting(recs, "No trade-off in coldstart#1 "); len(got) != 1 || got[0] != want {
		t.Errorf("trade-off verdict = %q, want %q", got, want)
	}
	if got := recStarting(recs, "Under cores=0.5 in coldstart#2, ship static: it starts 1.20× faster than default [1.15, 1.28], p<0.001"); len(got) != 1 {
		t.Errorf("no verdict for static under cores=0.5 against default:\n%s", recText(recs))
	}
	for _, rec := range recs {
		if strings.Contains(rec.Text, "knative over grpc") {
			t.Errorf("a recommendation rests on the 1+1-round Knative steady campaign: %s", rec.Text)
		}
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

// TestRecommendationsSkipEmptyFigures: rows without figures (an arm with
// no median, a step with no server CPU) yield no verdict and no Inf or
// NaN, while the rows beside them that have figures still do.
func TestRecommendationsSkipEmptyFigures(t *testing.T) {
	c := &Campaign{Label: "c"}
	for i := range 8 {
		d := float64(i%4) / 10
		c.Samples = append(c.Samples,
			Sample{Arm: "b", Budget: "max", Run: i + 1, FirstRPCMs: 9 + d},
			Sample{Arm: "c", Budget: "max", Run: i + 1, FirstRPCMs: 30 + d})
		for _, s := range []SteadyRow{
			{Arm: "a", Budget: "max", Protocol: "grpc", Scenario: "throughput", Concurrency: 32, CallsPerS: 1000 + 10*d, P50Us: 100},
			{Arm: "b", Budget: "max", Protocol: "grpc", Scenario: "throughput", Concurrency: 32, CallsPerS: 1500 + 10*d, P50Us: 90, ServerCPUUsPerCall: fp(50)},
		} {
			c.SteadyRounds = append(c.SteadyRounds, SteadyRound{SteadyRow: s, Round: i + 1})
		}
	}
	c.fillSummaries()
	c.Summaries = append(c.Summaries, Summary{Summary: campaign.Summary{Arm: "a", Budget: "max", Runs: 5, MedianMs: 0}})
	c.Steady = []SteadyRow{
		{Arm: "a", Budget: "max", Protocol: "grpc", Scenario: "throughput", Concurrency: 32, CallsPerS: 1000, P50Us: 100},
		{Arm: "b", Budget: "max", Protocol: "grpc", Scenario: "throughput", Concurrency: 32, CallsPerS: 1500, P50Us: 90, ServerCPUUsPerCall: fp(50)},
	}
	r := &Report{Campaigns: []*Campaign{c}}
	recs := r.Recommendations()
	for _, want := range []string{
		"Under max, avoid c: it starts 3.3",
		"Under max over grpc at 32 in flight, b serves more: 1.50× a's calls/s",
	} {
		if len(recStarting(recs, want)) != 1 {
			t.Errorf("no recommendation starts %q:\n%s", want, recText(recs))
		}
	}
	got := recText(recs)
	for _, bad := range []string{"Inf", "NaN", "CPU", "coldstart a/", "0.00 vs 0.00"} {
		if strings.Contains(got, bad) {
			t.Errorf("recommendations from rows without figures say %q:\n%s", bad, got)
		}
	}
}

// Arm names do not identify binaries: a JVM campaign's "default" takes no
// idle PSS from the sample server's density campaign, and start-against-
// density conclusions stay within one server.
func TestDensityMatchesBinaryNotName(t *testing.T) {
	// runs gives arm 8 counted cold starts around med ms.
	runs := func(c *Campaign, arm string, med float64) {
		for i := range 8 {
			c.Samples = append(c.Samples, Sample{Arm: arm, Budget: "max", Run: i + 1, FirstRPCMs: med * (1 + float64(i%4-2)/100)})
		}
	}
	idle := func(c *Campaign, arm string, pss int64) {
		for i := range 8 {
			c.DensitySamples = append(c.DensitySamples, DensitySample{Arm: arm, Budget: "max", Instance: i, PSSBytes: pss + int64(i%4)<<12})
		}
		c.Density = append(c.Density, DensityRow{Arm: arm, Budget: "max", Instances: 8, PSSBytes: pss, RSSBytes: 4 * pss})
	}
	art := func(arm, sha string) Artifact { return Artifact{Arm: arm, SHA256: sha} }
	echo := &Campaign{Label: "echo", Artifacts: []Artifact{art("default", "e1"), art("static", "e2")}}
	runs(echo, "default", 10)
	runs(echo, "static", 8)
	jvm := &Campaign{Label: "jvm", Artifacts: []Artifact{art("default", "j1"), art("snapshot", "j1")}}
	runs(jvm, "default", 200)
	runs(jvm, "snapshot", 80)
	dens := &Campaign{Label: "dens", Artifacts: []Artifact{art("default", "e1"), art("static", "e2")}}
	idle(dens, "default", 4<<20)
	idle(dens, "static", 3<<20)
	echo.fillSummaries()
	jvm.fillSummaries()
	r := &Report{Campaigns: []*Campaign{echo, jvm, dens}}
	if _, _, ok := r.densityFor(echo, "default", "max"); !ok {
		t.Error("the sample server's default found no density row of the same binary")
	}
	if _, d, ok := r.densityFor(jvm, "default", "max"); ok {
		t.Errorf("the JVM campaign's default took the sample server's density row %+v", d)
	}
	recs := r.Recommendations()
	if len(recStarting(recs, "No trade-off in coldstart#1 and density: static starts fastest or alike under every budget and packs densest or alike")) != 1 {
		t.Errorf("recommendations lack the sample server's start-against-density conclusion:\n%s", recText(recs))
	}
	if len(recStarting(recs, "Under max in coldstart#1, ship static: it starts 1.25× faster than default")) != 1 {
		t.Errorf("recommendations lack the sample server's verdict with its idle PSS:\n%s", recText(recs))
	}
	if got := recStarting(recs, "Under max in coldstart#2, ship snapshot:"); len(got) != 1 || strings.Contains(got[0], "PSS") {
		t.Errorf("the JVM campaign's verdict = %q, want one without the sample server's idle PSS", got)
	}
	if got := recText(recs); strings.Contains(got, "coldstart#2 and density") {
		t.Errorf("recommendations join the JVM campaign to the sample server's density:\n%s", got)
	}
}

// TestTLSNote: a campaign probed over TLS says so beside its table, and
// flags certificates that were not verified.
func TestTLSNote(t *testing.T) {
	for _, tt := range []struct {
		client, want string
	}{
		{`{"kind":"tls_client","cacert":"/etc/ca.pem","cacert_sha256":["0123456789abcdef0123"],"insecure_skip_verify":false}`,
			"; verified against `/etc/ca.pem` (SHA-256 0123456789abcdef…)."},
		{`{"kind":"tls_client","insecure_skip_verify":true}`,
			"**the server's certificate was NOT verified** (--insecure-skip-verify)"},
	} {
		in := `{"kind":"provenance","schema":"coldstart/v1","started_at":"2026-11-30T03:00:00Z"}
` + tt.client + `
{"kind":"sample","arm":"static","budget":"max","run":1,"first_rpc_ms":8,"phases":[{"name":"tls_handshake","ms":6}],"tls":{"ms":2.5,"version":"TLS 1.3","cipher":"TLS_AES_128_GCM_SHA256"}}
{"kind":"summary","arm":"static","budget":"max","runs":1,"median_ms":8,"probe":"grpcs-health","tls_handshake_ms":2.5}
`
		c, ws, err := Read("x.jsonl", strings.NewReader(in))
		if err != nil || len(ws) != 0 {
			t.Fatalf("Read() = %v, warnings %v", err, ws)
		}
		var b strings.Builder
		if err := (&Report{Campaigns: []*Campaign{c}}).Markdown(&b, MarkdownOptions{}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), "Probes over TLS, each a new client") || !strings.Contains(b.String(), tt.want) {
			t.Errorf("Markdown lacks the TLS note %q:\n%s", tt.want, b.String())
		}
	}
}

// TestTLSNoteSteady: steady load over TLS is said beside the steady
// table, an unverified certificate flagged there too.
func TestTLSNoteSteady(t *testing.T) {
	row, err := json.Marshal(record.SteadyRow{Arm: "default", Budget: "max", Protocol: "grpc", Scenario: "sequential", Concurrency: 1, Calls: 100, CallsPerS: 5000})
	if err != nil {
		t.Fatal(err)
	}
	in := `{"kind":"provenance","schema":"coldstart/v1","tool":"steady","started_at":"2026-11-30T03:00:00Z"}
{"kind":"tls_client","insecure_skip_verify":true}
{"kind":"step",` + string(row[1:]) + "\n"
	c, ws, err := Read("x.jsonl", strings.NewReader(in))
	if err != nil || len(ws) != 0 || len(c.Steady) != 1 {
		t.Fatalf("Read() = %v, warnings %v, %d steady rows", err, ws, len(c.Steady))
	}
	var b strings.Builder
	if err := (&Report{Campaigns: []*Campaign{c}}).Markdown(&b, MarkdownOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "Load over TLS, each connection a full handshake") || !strings.Contains(b.String(), "NOT verified") {
		t.Errorf("Markdown lacks the steady TLS note:\n%s", b.String())
	}
}
