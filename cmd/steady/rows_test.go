package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/coldstart-go/coldstart/cmd/internal/cliopts"
	"github.com/coldstart-go/coldstart/internal/render"
	"github.com/coldstart-go/coldstart/internal/stats"
	"github.com/coldstart-go/coldstart/record"
	"github.com/coldstart-go/coldstart/steady"
)

// TestBaselineAccepted: --baseline names an arm steady measures: a build
// arm, a --bin ARM=PATH name, or a --target's "target".
func TestBaselineAccepted(t *testing.T) {
	for _, args := range [][]string{
		{"--arms", "static,upx", "--baseline", "upx"},
		{"--bin", "api=/bin/a", "--bin", "old=/bin/b", "--baseline", "old"},
		{"--target", "127.0.0.1:80", "--baseline", "target"},
	} {
		o, err := parse(t, args...)
		if err != nil {
			t.Errorf("parse(%q) = %v", args, err)
			continue
		}
		if o.Baseline != args[len(args)-1] {
			t.Errorf("parse(%q): baseline %q", args, o.Baseline)
		}
	}
}

// stepRounds are n rounds of arm's sequential step at about calls/s and
// cpu µs per call, and its row of medians set against base's rounds.
func stepRounds(arm string, n int, calls, cpu float64) ([]steady.Row, steady.Row) {
	row := steady.Row{Arm: arm, Budget: "max", Protocol: "grpc", Scenario: "sequential", PayloadBytes: 8, Concurrency: 1, Conns: 1, Depth: 1, CallsPerS: calls}
	var rs []steady.Row
	for i := 0; i < n; i++ {
		w := row
		f := 1 + float64(i)/1000 // a little spread, no ties
		c := cpu * f
		w.Round, w.CallsPerS, w.ServerCPUUsPerCall = i+1, calls*f, &c
		rs = append(rs, w)
	}
	row.RoundStats = steady.RoundStats{Rounds: n}
	return rs, row
}

// TestStepRows: at a terminal a step row's comparisons with the
// baseline are two columns, calls/s and CPU per call; a row with one
// round says it has no interval; JSON keeps the vs_baseline_* fields and
// a soak's table has none of them.
func TestStepRows(t *testing.T) {
	var rounds, rows []steady.Row
	for _, a := range []struct {
		arm        string
		n          int
		calls, cpu float64
	}{{"default", 8, 10000, 50}, {"upx", 8, 1000, 500}, {"static", 8, 10000, 50}} {
		rs, row := stepRounds(a.arm, a.n, a.calls, a.cpu)
		rounds, rows = append(rounds, rs...), append(rows, row)
	}
	base := record.CompareSteady(rows, rounds, "", stats.DefaultConfidence, stats.DefaultMinEffect)
	r1, one := stepRounds("pgo", 1, 11000, 45)
	b1, _ := stepRounds("default", 1, 10000, 50)
	for i := range b1 {
		b1[i].Concurrency = 2 // a step of its own, with one round per arm
	}
	one.Concurrency, r1[0].Concurrency = 2, 2
	record.CompareSteadyRow(&one, append(r1, b1...), base, stats.DefaultConfidence, stats.DefaultMinEffect)
	rows = append(rows, one)

	var tbl bytes.Buffer
	if err := stepRows(render.Table, rows, base)(&tbl); err != nil {
		t.Fatal(err)
	}
	for _, re := range []string{
		`(?m)^arm +budget .* calls_per_s vs default +cpu vs default$`,
		`(?m)^default .* baseline +baseline$`,
		`(?m)^upx .* 0\.100× \[[0-9.]+, [0-9.]+\] slower +10\.0× \[[0-9.]+, [0-9.]+\] higher$`,
		`(?m)^static .* 1\.00× \[[0-9.]+, [0-9.]+\] ~ +1\.00× \[[0-9.]+, [0-9.]+\] ~$`,
		`(?m)^pgo .* 1\.10× \(no CI: 1 round\) ~ +0\.900× \(no CI: 1 round\) ~$`,
	} {
		if !regexp.MustCompile(re).MatchString(tbl.String()) {
			t.Errorf("table lacks %s:\n%s", re, tbl.String())
		}
	}
	if strings.Contains(tbl.String(), "vs_baseline") {
		t.Errorf("table shows vs_baseline_* fields as columns:\n%s", tbl.String())
	}
	var js bytes.Buffer
	if err := stepRows(render.JSON, rows, base)(&js); err != nil {
		t.Fatal(err)
	}
	for _, re := range []string{`"baseline": "default"`, `"vs_baseline_ratio": 0\.(1|0999)`, `"vs_baseline_ci_low": 0\.`, `"vs_baseline_ci_high": 0\.`, `"vs_baseline_p": 0\.00[0-9]`,
		`"vs_baseline_verdict": "slower"`, `"vs_baseline_cpu_ratio": (10|9\.99)`, `"vs_baseline_cpu_p": 0\.00[0-9]`, `"vs_baseline_cpu_verdict": "higher"`, `"vs_baseline_verdict": "baseline"`} {
		if !regexp.MustCompile(re).MatchString(js.String()) {
			t.Errorf("JSON lacks %s", re)
		}
	}

	// A soak's rows compare no arms: their table has no such columns.
	var soakTbl bytes.Buffer
	noVs := []cliopts.VsColumn{{Fields: cliopts.VsFields}, {Fields: vsCPUFields}}
	if err := cliopts.RowsVs(render.Table, []steady.SoakRow{{SteadyRow: rows[0], Interval: 1}}, noVs...)(&soakTbl); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(soakTbl.String(), "vs") {
		t.Errorf("soak table shows comparison columns:\n%s", soakTbl.String())
	}
}

// TestProtocolVerdicts: steps of protocols that shared their rounds are
// set against each other at a terminal, pairwise in order (h3 vs h2, h3
// vs http1, h2 vs http1), on calls/s and CPU per call paired by round;
// different connection shapes are said; protocols run in rounds of
// their own are not compared.
func TestProtocolVerdicts(t *testing.T) {
	together := []record.Protocol{"h3", "h2", "http1"}
	var rounds, rows []steady.Row
	noise := []float64{1, 1.2, 0.85, 1.1, 0.8, 1.15, 0.9, 1.05}
	jitter := []float64{0.99, 1.01, 0.98, 1.02, 0.99, 1.01, 0.98, 1.02}
	for _, p := range []struct {
		proto        record.Protocol
		conns, depth int
		calls, cpu   float64
	}{{"h3", 4, 8, 8000, 90}, {"h2", 4, 8, 10000, 60}, {"http1", 32, 1, 10000, 60}} {
		row := steady.Row{Arm: "default", Budget: "max", Protocol: p.proto, Scenario: "throughput", PayloadBytes: 8, Concurrency: 32,
			Conns: p.conns, Depth: p.depth, CallsPerS: p.calls, RoundProtocols: together}
		for i, n := range noise {
			if p.proto == "http1" {
				n *= jitter[i] // about h2's, no ratio constant
			}
			w := row
			c := p.cpu * n
			w.Round, w.CallsPerS, w.ServerCPUUsPerCall = i+1, p.calls*n, &c
			rounds = append(rounds, w)
		}
		row.RoundStats = steady.RoundStats{Rounds: len(noise)}
		rows = append(rows, row)
	}
	// gRPC in rounds of its own (before steady interleaved protocols).
	g := steady.Row{Arm: "default", Budget: "max", Protocol: "grpc", Scenario: "throughput", PayloadBytes: 8, Concurrency: 32, Conns: 1, Depth: 32, CallsPerS: 9000}
	for i := range noise {
		w := g
		w.Round = i + 1
		rounds = append(rounds, w)
	}
	g.RoundStats = steady.RoundStats{Rounds: len(noise)}
	rows = append(rows, g)

	got := protocolVerdicts(rows, rounds, stats.DefaultConfidence)
	want := []*regexp.Regexp{
		regexp.MustCompile(`^default throughput 8B c=32: h3 vs h2 calls/s 0\.800× \[[0-9., ]+\] slower, CPU per call 1\.50× \[[0-9., ]+\] higher$`),
		regexp.MustCompile(`^default throughput 8B c=32 \(h3 4 conns × 8, http1 32 conns × 1\): h3 vs http1 calls/s 0\.[78][0-9]+× \[[0-9., ]+\] slower, CPU per call 1\.[45][0-9]× \[[0-9., ]+\] higher$`),
		regexp.MustCompile(`^default throughput 8B c=32 \(h2 4 conns × 8, http1 32 conns × 1\): h2 vs http1 calls/s (0\.99[0-9]|1\.00)× \[[0-9., ]+\] ~, CPU per call (0\.99[0-9]|1\.00)× \[[0-9., ]+\] ~$`),
	}
	if len(got) != len(want) {
		t.Fatalf("%d verdict lines, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i, re := range want {
		if !re.MatchString(got[i]) {
			t.Errorf("line %d = %q, want %s", i, got[i], re)
		}
	}
	var out bytes.Buffer
	if err := writeStepText(&out, rows, rounds, "default", stats.DefaultConfidence); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"arms and protocols interleaved", "protocols, paired by round (a vs b: a/b):\ndefault throughput 8B c=32: h3 vs h2 calls/s"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("text output lacks %q:\n%s", s, out.String())
		}
	}
}
