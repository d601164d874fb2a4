package report

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestLoadBoundVerdicts reads a real steady run of the sample server
// (testdata/loadbound: arms default and static under cpus=0 and
// cores=0.5, gRPC and HTTP/1.1, sequential and throughput at 32 in
// flight, 6 rounds of 500 ms). Under cpus=0 the generator, not the server,
// set the pace of the throughput steps: every calls/s comparison of those
// steps says so (load_bound, naming the side), no other comparison does,
// and the tables mark it. The fixture's own shares decide which steps
// those are, so the test checks the rule, not a figure.
func TestLoadBoundVerdicts(t *testing.T) {
	r := load(t, filepath.Join("testdata", "loadbound"))
	if len(r.Warnings) != 0 {
		t.Fatalf("warnings: %v", r.Warnings)
	}
	c := r.Campaigns[0]
	bound := map[string]bool{} // "arm budget protocol scenario"
	for _, s := range c.Steady {
		if s.ServerCPUShare == nil {
			t.Fatalf("row %s %s %s %s has no server CPU share", s.Arm, s.Budget, s.Protocol, s.Scenario)
		}
		bound[strings.Join([]string{s.Arm, s.Budget, string(s.Protocol), string(s.Scenario)}, " ")] = s.LoadBound()
	}
	// What the fixture shows: the throughput steps under cpus=0 are
	// load-bound, those under the quota are not, sequential never is.
	for _, arm := range []string{"default", "static"} {
		for _, p := range []string{"grpc", "http1"} {
			if !bound[arm+" cpus=0 "+p+" throughput"] || bound[arm+" cores=0.5 "+p+" throughput"] || bound[arm+" cpus=0 "+p+" sequential"] {
				t.Errorf("%s %s: load-bound %v", arm, p, bound)
			}
		}
	}
	marked := 0
	for _, row := range r.Comparisons() {
		want := false
		if row.Metric == "calls_per_s" {
			for k, b := range bound {
				f := strings.Fields(k) // arm budget protocol scenario
				if !b || !strings.Contains(row.Scope, f[3]) {
					continue
				}
				switch row.Kind {
				case "arms":
					want = want || row.Scope == "budget="+f[1]+" "+f[2]+" "+f[3]+" 8B c32"+map[string]string{"grpc": "", "http1": " conns32"}[f[2]] && (row.A == f[0] || row.B == f[0])
				case KindProtocols:
					want = want || strings.HasPrefix(row.Scope, "arm="+f[0]+" budget="+f[1]+" ")
				case "budgets":
					want = want || strings.HasPrefix(row.Scope, "arm="+f[0]+" "+f[2]+" ") && (row.A == f[1] || row.B == f[1])
				}
			}
		}
		if got := row.LoadBound != ""; got != want {
			t.Errorf("%s %s %s vs %s: load_bound %q, want it %v", row.Scope, row.Metric, row.A, row.B, row.LoadBound, want)
		}
		if row.LoadBound != "" {
			marked++
			if !strings.HasPrefix(row.LoadBound, row.A+": ") && !strings.HasPrefix(row.LoadBound, row.B+": ") {
				t.Errorf("%s: load_bound %q names neither side", row.Scope, row.LoadBound)
			}
		}
	}
	if marked == 0 {
		t.Error("no comparison marked load-bound")
	}
	// No recommendation rests on a load-bound calls/s: each is held,
	// saying why.
	recs, hs := r.recommend()
	for _, rec := range recs {
		if strings.Contains(rec.Text, "calls/s") && strings.Contains(rec.Text, "cpus=0") && strings.Contains(rec.Text, "throughput") {
			t.Errorf("a recommendation on a load-bound step: %s", rec.Text)
		}
	}
	heldBound := 0
	for _, h := range hs {
		if h.row.Metric == "calls_per_s" && h.row.LoadBound != "" {
			heldBound++
			if !strings.HasPrefix(h.why, "load-bound, ") {
				t.Errorf("%s %s vs %s held as %q, want load-bound", h.row.Scope, h.row.A, h.row.B, h.why)
			}
		}
	}
	if heldBound == 0 {
		t.Errorf("no load-bound calls/s comparison held: %+v", hs)
	}
	var b strings.Builder
	if err := r.Markdown(&b, MarkdownOptions{Title: "Steady"}); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"| default † | cpus=0 | grpc | throughput |",
		" (load-bound) | ",
		`"(load-bound)" marks a calls/s comparison where a side's closed loop left its server below 90%`,
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	for _, s := range c.Steady {
		if got := strings.Contains(steadyDoubt(s), "load's limit"); got != s.LoadBound() {
			t.Errorf("%s %s %s %s: doubt %q, load-bound %v", s.Arm, s.Budget, s.Protocol, s.Scenario, steadyDoubt(s), s.LoadBound())
		}
	}
}

// TestServerCPUShareOfOldFiles: the same fixture with the shares and
// limits taken out, as steady wrote files before it recorded them. Rows
// without a quota get their share back from GOMAXPROCS (the recorded one
// to rounding); rows under the quota get none, since GOMAXPROCS does not
// say what a quota allows.
func TestServerCPUShareOfOldFiles(t *testing.T) {
	src := filepath.Join("testdata", "loadbound", "20261206-221159_steady.jsonl")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	old := regexp.MustCompile(`,"server_cpu_limit":[0-9.e+-]+,"server_cpu_share":[0-9.e+-]+`).ReplaceAll(data, nil)
	if bytes.Contains(old, []byte("server_cpu_share")) {
		t.Fatal("the fixture's shares were not all taken out")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, filepath.Base(src)), old, 0o644); err != nil {
		t.Fatal(err)
	}
	now, before := load(t, src).Campaigns[0], load(t, dir).Campaigns[0]
	for i, s := range before.Steady {
		want := now.Steady[i]
		switch {
		case strings.Contains(s.Budget, "cores="):
			if s.ServerCPUShare != nil {
				t.Errorf("%s %s: share %g under a quota, want none", s.Arm, s.Budget, *s.ServerCPUShare)
			}
		case s.ServerCPUShare == nil || math.Abs(*s.ServerCPUShare-*want.ServerCPUShare) > 1e-6*(*want.ServerCPUShare) || s.ServerCPULimit != want.ServerCPULimit:
			t.Errorf("%s %s %s %s: share %v of %g, recorded %g of %g", s.Arm, s.Budget, s.Protocol, s.Scenario, s.ServerCPUShare, s.ServerCPULimit,
				*want.ServerCPUShare, want.ServerCPULimit)
		}
	}
}
