package gate

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"

	"github.com/coldstart-go/coldstart/internal/noise"
	"github.com/coldstart-go/coldstart/internal/provenance"
	"github.com/coldstart-go/coldstart/record"
	"github.com/coldstart-go/coldstart/report"
)

// These tests judge records built in memory, so that each rule is seen
// alone and exactly; cmd/coldstart's tests run the gate on real
// campaigns.

func prov() report.Provenance {
	return report.Provenance{Schema: report.Schema, Provenance: provenance.Provenance{
		Tool: "coldstart", CPUModel: "Test CPU", Cores: 2, MemBytes: 8 << 30, Kernel: "6.1.0", CgroupMode: "v2", ToolVersion: "v1.0.0",
		Args: []string{"coldstart", "run"}}}
}

var pidSeq = 1000

// starts are n counted cold starts of arm under budget, spawn → first RPC
// around ms (±10%, seeded), each a process of its own.
func starts(r *rand.Rand, arm, budget string, n int, ms float64) []record.Sample {
	var out []record.Sample
	for i := 1; i <= n; i++ {
		v := ms * (0.9 + 0.2*r.Float64())
		cpu, pss := 5+r.Float64(), int64(10<<20+r.IntN(1<<16))
		pidSeq++
		out = append(out, record.Sample{Arm: arm, Budget: budget, Run: i, FirstRPCMs: v, ReadyAttemptMs: v - 0.2,
			Phases:       []record.Phase{{Name: record.PhaseStarted, Ms: 0.5}, {Name: record.PhaseAccepting, Ms: v - 0.3}, {Name: record.PhaseFirstRPC, Ms: v}},
			StartupCPUMs: &cpu, PSSBytes: &pss, PID: pidSeq, Attempts: 2})
	}
	return out
}

func campaignOf(file string, samples ...[]record.Sample) *report.Campaign {
	c := &report.Campaign{File: file, Provenance: prov()}
	arms := map[string]bool{}
	for _, ss := range samples {
		c.Samples = append(c.Samples, ss...)
		for _, s := range ss {
			if !arms[s.Arm+s.Budget] {
				arms[s.Arm+s.Budget] = true
				c.Summaries = append(c.Summaries, report.Summary{Summary: record.Summary{Arm: s.Arm, Budget: s.Budget, Probe: "grpc-health", SizeBytes: 20 << 20}})
			}
		}
	}
	return c
}

func input(cs ...*report.Campaign) *Input { return &Input{Paths: []string{cs[0].File}, Campaigns: cs} }

func TestRefusal(t *testing.T) {
	ok := record.Sample{FirstRPCMs: 10, ReadyAttemptMs: 9,
		Phases: []record.Phase{{Name: record.PhaseStarted, Ms: 1}, {Name: record.PhaseAccepting, Ms: 8}, {Name: record.PhaseFirstRPC, Ms: 10}}}
	for _, tt := range []struct {
		name      string
		edit      func(*record.Sample)
		pidReused bool
		want      string
	}{
		{"a real cold start", func(*record.Sample) {}, false, ""},
		{"no time", func(s *record.Sample) { s.FirstRPCMs = 0 }, false, RefusedNoTime},
		{"phase before t0", func(s *record.Sample) { s.Phases[0].Ms = -0.1 }, false, RefusedBeforeT0},
		{"connected before the process started", func(s *record.Sample) { s.Phases[1].Ms = 0.5 }, false, RefusedBeforeStart},
		{"ready attempt before the process started", func(s *record.Sample) { s.ReadyAttemptMs = 0.5 }, false, RefusedBeforeStart},
		{"PID another start had", func(*record.Sample) {}, true, RefusedPIDReused},
		// Knative's starts have no process_started: nothing to set the
		// answers against.
		{"no process_started", func(s *record.Sample) { s.Phases = s.Phases[1:] }, false, ""},
	} {
		s := ok
		s.Phases = append([]record.Phase(nil), ok.Phases...)
		tt.edit(&s)
		if got := refusal(s, tt.pidReused); got != tt.want {
			t.Errorf("%s: refusal = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// A start of twice the time fails the gate on spawn → first RPC (median
// and p90) and on accepting, which moved with it; startup CPU and PSS,
// which did not move, pass; the same data against itself passes.
func TestCompareFindsARegression(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	base := campaignOf("base.jsonl", starts(r, "default", "max", 10, 10))
	nw := campaignOf("new.jsonl", starts(r, "default", "max", 10, 20))
	res, err := Compare(input(base), input(nw), Options{MaxRegression: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome() != Fail {
		t.Errorf("outcome %v, want Fail", res.Outcome())
	}
	got := map[string]Verdict{}
	for _, row := range res.Rows {
		got[row.Figure] = row.Verdict
	}
	for fig, want := range map[string]Verdict{
		"first RPC median": Regression, "first RPC p90": Regression, "phase accepting": Regression,
		"startup CPU": NoChange, "PSS at first RPC": NoChange, "binary size": Same,
	} {
		if got[fig] != want {
			t.Errorf("%s: %q, want %q (rows %+v)", fig, got[fig], want, res.Rows)
		}
	}
	if _, ok := got["phase process_started"]; !ok {
		t.Error("no process_started row")
	}
	var md bytes.Buffer
	if err := res.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(md.String()), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "**Fail:** 3 figures worse by more than 5%") {
		t.Errorf("last line %q, want the verdict", last)
	}
	if !strings.Contains(md.String(), "| default | max | first RPC median |") {
		t.Errorf("no first RPC row in\n%s", md.String())
	}

	same, err := Compare(input(base), input(base), Options{MaxRegression: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	if same.Outcome() != Pass || len(same.Regressions()) > 0 {
		t.Errorf("base against itself: %v, rows %+v", same.Outcome(), same.Rows)
	}
	// Eight starts a side are too few for the p90 (it would be their
	// largest): that row is not tested, the others are.
	few, err := Compare(input(campaignOf("b8.jsonl", starts(r, "default", "max", 8, 10))), input(campaignOf("n8.jsonl", starts(r, "default", "max", 8, 20))), Options{MaxRegression: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range few.Rows {
		if row.Figure == "first RPC p90" && (row.Verdict != TooFew || row.Need != 10) {
			t.Errorf("p90 of 8 starts: %q, need %d; want too few, 10", row.Verdict, row.Need)
		}
		if row.Figure == "first RPC median" && row.Verdict != Regression {
			t.Errorf("median of 8 starts, 2×: %q, want a regression", row.Verdict)
		}
	}
	// A tolerance above the change passes it, however significant.
	lax, _ := Compare(input(base), input(nw), Options{MaxRegression: 1.5})
	if lax.Outcome() != Pass {
		t.Errorf("2× with --max-regression 1.5: %v, want Pass", lax.Outcome())
	}
}

// Holm: a figure whose own p-value is below the level, but not once all
// tested figures are counted, is no regression.
func TestHolmAdjustsTheFamily(t *testing.T) {
	rows := []Row{
		{Figure: "a", Ratio: 1.5, RawP: 0.02},
		{Figure: "b", Ratio: 1.0, RawP: 0.9},
		{Figure: "c", Ratio: 1.0, RawP: 0.9},
		{Figure: "size", Ratio: 1.2, Test: TestExact},
	}
	if n := judge(rows, Options{MaxRegression: 0.05}); n != 3 {
		t.Errorf("judged %d tests, want 3 (the exact row is none)", n)
	}
	if rows[0].P != 0.06 || rows[0].Verdict != NoChange {
		t.Errorf("row a: p %v %q, want 0.06 (3 × 0.02) and no change", rows[0].P, rows[0].Verdict)
	}
	if rows[3].Verdict != Regression {
		t.Errorf("size 1.2×: %q, want a regression (exact)", rows[3].Verdict)
	}
}

func TestIncomparable(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	mk := func(edit func(*report.Campaign)) *report.Campaign {
		c := campaignOf("new.jsonl", starts(r, "default", "max", 8, 10))
		if edit != nil {
			edit(c)
		}
		return c
	}
	base := campaignOf("base.jsonl", starts(r, "default", "max", 8, 10))
	for _, tt := range []struct {
		name string
		new  *report.Campaign
		want string
	}{
		{"cpu", mk(func(c *report.Campaign) { c.Provenance.CPUModel = "Other CPU" }), `CPU model: base "Test CPU", new "Other CPU"`},
		{"kernel", mk(func(c *report.Campaign) { c.Provenance.Kernel = "6.8.0" }), `kernel: base "6.1.0", new "6.8.0"`},
		{"memory", mk(func(c *report.Campaign) { c.Provenance.MemBytes = 16 << 30 }), "memory: base 8.0 GiB, new 16.0 GiB"},
		{"probe", mk(func(c *report.Campaign) { c.Summaries[0].Probe = "tcp" }), `probe: base "grpc-health", new "tcp"`},
		{"transport", mk(func(c *report.Campaign) { c.Provenance.Args = []string{"coldstart", "run", "--transport", "unix"} }), `transport: base "tcp", new "unix"`},
		{"arms", mk(func(c *report.Campaign) {
			for i := range c.Samples {
				c.Samples[i].Arm = "static"
			}
		}), "arms only in base: default; arms only in new: static"},
		{"budgets", mk(func(c *report.Campaign) {
			for i := range c.Samples {
				c.Samples[i].Budget = "cpus=0"
			}
		}), "budgets only in base: max; budgets only in new: cpus=0"},
		{"kinds", mk(func(c *report.Campaign) {
			c.DensitySamples = []record.DensitySample{{Arm: "default", Budget: "max", PSSBytes: 1 << 20}}
		}), "idle instances (coldstart density): only new has them"},
		{"no provenance", mk(func(c *report.Campaign) { c.Provenance = report.Provenance{} }), "provenance: new new.jsonl has none"},
		{"too few", mk(func(c *report.Campaign) { c.Samples = c.Samples[:4] }), "too few cold starts: new default under max has 4 counted, want at least 6"},
	} {
		_, err := Compare(input(base), input(tt.new), Options{MaxRegression: 0.05})
		var inc *IncomparableError
		if !errors.As(err, &inc) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want an IncomparableError naming %q", tt.name, err, tt.want)
		}
	}
	schema := &Input{Paths: []string{"old.jsonl"}, Campaigns: []*report.Campaign{base},
		Warnings: []report.Warning{{File: "old.jsonl", Line: 1, Schema: "coldstart/v0"}}}
	if _, err := Compare(input(base), schema, Options{}); err == nil || !strings.Contains(err.Error(), `schema: new old.jsonl is "coldstart/v0", want "coldstart/v1"`) {
		t.Errorf("another schema: %v", err)
	}
}

// Most rounds busy makes the result inconclusive, unless allowed; a few
// busy rounds do not.
func TestBusyHost(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	base := campaignOf("base.jsonl", starts(r, "default", "max", 8, 10))
	nw := campaignOf("new.jsonl", starts(r, "default", "max", 8, 10))
	noisy := func(busy, of int) []report.NoiseRecord {
		var ns []report.NoiseRecord
		for i := range of {
			ns = append(ns, report.NoiseRecord{Scope: "round", Window: noise.Window{Busy: i < busy}})
		}
		return ns
	}
	nw.Noise = noisy(2, 5)
	if res, _ := Compare(input(base), input(nw), Options{}); res.Outcome() != Pass {
		t.Errorf("2 of 5 rounds busy: %v, want Pass", res.Outcome())
	}
	nw.Noise = noisy(3, 5)
	res, _ := Compare(input(base), input(nw), Options{})
	if res.Outcome() != Inconclusive || !strings.Contains(res.Summary(), "new.jsonl: 3 of 5 rounds ran on a busy host") || !strings.Contains(res.Summary(), "rerun on a quiet host") {
		t.Errorf("3 of 5 rounds busy: %v, %q", res.Outcome(), res.Summary())
	}
	if res, _ := Compare(input(base), input(nw), Options{AllowBusy: true}); res.Outcome() != Pass {
		t.Errorf("busy, allowed: %v, want Pass", res.Outcome())
	}
}

// One campaign's base and new arms are split by name and paired by run;
// a PID both sides had is refused on both.
func TestComparePaired(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	b := starts(r, "base", "max", 10, 10)
	n := starts(r, "new", "max", 10, 10)
	bs := starts(r, "base.static", "max", 10, 10)
	ns := starts(r, "new.static", "max", 10, 30)
	n[0].PID = b[0].PID
	c := campaignOf("gate.jsonl", b, n, bs, ns, starts(r, "other", "max", 10, 10))
	res, err := ComparePaired(input(c), Options{MaxRegression: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	if res.Base.Refused[RefusedPIDReused] != 1 || res.New.Refused[RefusedPIDReused] != 1 || res.Base.Counted != 19 {
		t.Errorf("refused base %v new %v, counted base %d; want the shared PID refused on both sides", res.Base.Refused, res.New.Refused, res.Base.Counted)
	}
	regressed := map[string]bool{}
	for _, row := range res.Rows {
		if row.Test == "paired-wilcoxon" && row.Arm == "default" && row.Figure == "first RPC median" && row.NBase != 9 {
			t.Errorf("default first RPC paired over %d rounds, want 9", row.NBase)
		}
		if row.Verdict == Regression {
			regressed[row.Arm] = true
		}
		if row.Arm == "other" {
			t.Errorf("arm other compared: %+v", row)
		}
	}
	if !regressed["static"] || regressed["default"] {
		t.Errorf("regressions in %v, want static only", regressed)
	}
	// Base came first in every round (the file lists all of base's starts
	// first): the result says so. Taking turns it does not.
	if res.FirstEveryRound != Base {
		t.Errorf("FirstEveryRound %q, want base", res.FirstEveryRound)
	}
	var turns []record.Sample
	tb, tn := starts(r, "base", "max", 10, 10), starts(r, "new", "max", 10, 10)
	for i := range tb {
		if i%2 == 0 {
			turns = append(turns, tb[i], tn[i])
		} else {
			turns = append(turns, tn[i], tb[i])
		}
	}
	if res, err := ComparePaired(input(campaignOf("turns.jsonl", turns)), Options{}); err != nil || res.FirstEveryRound != "" {
		t.Errorf("taking turns: FirstEveryRound %q, %v; want none", res.FirstEveryRound, err)
	}
	if _, err := ComparePaired(input(campaignOf("run.jsonl", starts(r, "default", "max", 8, 10))), Options{}); !errors.Is(err, ErrNotPaired) {
		t.Errorf("a campaign without base and new arms: %v, want ErrNotPaired", err)
	}
	// Six rounds reach 5% alone, not once five figures are tested with
	// them (the p90 wants 10): the gate says so rather than pass whatever
	// changed.
	few := campaignOf("few.jsonl", starts(r, "base", "max", 6, 10), starts(r, "new", "max", 6, 30))
	_, err = ComparePaired(input(few), Options{})
	var inc *IncomparableError
	if !errors.As(err, &inc) || !strings.Contains(err.Error(), "default under max has 6 rounds with both sides, and with 5 figures tested together (Holm) even fully separated sides would not be significant: want at least 8") {
		t.Errorf("6 rounds: %v", err)
	}
}

func TestOptionsChecked(t *testing.T) {
	c := input(campaignOf("x.jsonl", starts(rand.New(rand.NewPCG(5, 5)), "default", "max", 8, 10)))
	if _, err := Compare(c, c, Options{MaxRegression: -0.1}); err == nil || !strings.Contains(err.Error(), "max regression") {
		t.Errorf("negative max regression: %v", err)
	}
}

// The benchstat output is the Go benchmark format: every counted start,
// each side under its own "side" configuration.
func TestBenchstat(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	res, err := Compare(input(campaignOf("base.jsonl", starts(r, "default", "cpus=0-1", 10, 10))),
		input(campaignOf("new.jsonl", starts(r, "default", "cpus=0-1", 10, 20))), Options{MaxRegression: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := res.Benchstat(&buf); err != nil {
		t.Fatal(err)
	}
	text := buf.String()
	sides := map[string]int{}
	rd := benchfmt.NewReader(&buf, "gate.txt")
	for rd.Scan() {
		switch rec := rd.Result().(type) {
		case *benchfmt.Result:
			if string(rec.Name) != "ColdStart/budget=cpus=0-1/arm=default" {
				t.Errorf("name %q", rec.Name)
			}
			// benchfmt reads ns/op as sec/op.
			if _, ok := rec.Value("sec/op"); !ok {
				t.Errorf("no ns/op in %v", rec.Values)
			}
			sides[rec.GetConfig(SideKey)]++
		case *benchfmt.SyntaxError:
			t.Errorf("syntax error: %v", rec)
		}
	}
	if err := rd.Err(); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	if sides[Base] != 10 || sides[New] != 10 {
		t.Errorf("results per side %v, want 10 each", sides)
	}
	if !strings.Contains(text, "# Fail: 3 figures") {
		t.Errorf("no verdict comment in\n%s", text)
	}
}

// TestMinPairedRounds: the fewest rounds at which Holm over the figures
// tested lets fully separated sides (p = 2/2^n) be significant: 6 for one
// figure at 95%, 8 for five (the refusal gate_test's campaign of 6 rounds
// names), 9 for eight; each one fewer could not be.
func TestMinPairedRounds(t *testing.T) {
	for _, tt := range []struct{ tested, want int }{{1, 6}, {5, 8}, {6, 8}, {8, 9}, {12, 9}, {13, 10}} {
		n := MinPairedRounds(tt.tested, 0.95)
		if n != tt.want {
			t.Errorf("MinPairedRounds(%d, 0.95) = %d, want %d", tt.tested, n, tt.want)
		}
		if smallestPaired(n)*float64(tt.tested) >= 0.05 || smallestPaired(n-1)*float64(tt.tested) < 0.05 {
			t.Errorf("MinPairedRounds(%d) = %d is not the first n where 2/2^n × %d < 0.05", tt.tested, n, tt.tested)
		}
	}
}
