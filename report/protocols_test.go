package report

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/coldstart-go/coldstart/internal/stats"
	"github.com/coldstart-go/coldstart/record"
)

// protocolRounds is a steady campaign of one arm over h3, h2 and
// http1, 8 rounds of a sequential step (one connection each) and of a
// throughput step (h3 and h2 over 4 connections × 8 streams, HTTP/1.1
// over 32 connections). Each round's noise hits every protocol alike
// (a factor of up to ±20%), over fixed ratios between them: h3 0.8×
// h2's calls/s, h2 1.02× HTTP/1.1's. together names the protocols in
// every row's RoundProtocols (nil: rounds run one protocol after
// another, as before steady interleaved them).
func protocolRounds(together []record.Protocol) *Campaign {
	c := &Campaign{Label: "steady#1"}
	noise := []float64{1, 1.2, 0.85, 1.1, 0.8, 1.15, 0.9, 1.05}
	calls := map[record.Protocol]float64{"h3": 8000, "h2": 10000, "http1": 9800}
	cpu := map[record.Protocol]float64{"h3": 90, "h2": 60, "http1": 61}
	alloc := map[record.Protocol]float64{"h3": 9000, "h2": 6000, "http1": 2000}
	for _, sc := range []struct {
		scenario           record.Scenario
		conc, conns, depth int
	}{{"sequential", 1, 1, 1}, {"throughput", 32, 4, 8}} {
		for _, p := range []record.Protocol{"h3", "h2", "http1"} {
			conns, depth := sc.conns, sc.depth
			if p == "http1" && sc.scenario == "throughput" {
				conns, depth = 32, 1
			}
			for i, n := range noise {
				s := SteadyRow{Arm: "default", Budget: "max", Protocol: p, Scenario: sc.scenario, PayloadBytes: 8, Concurrency: sc.conc,
					Conns: conns, Depth: depth, CallsPerS: calls[p] * n, P50Us: 1e6 / (calls[p] * n), ServerCPUUsPerCall: fp(cpu[p] * n),
					AllocBytesPerCall: fp(alloc[p] * (1 + float64(i%3)/100)), RoundProtocols: together}
				c.SteadyRounds = append(c.SteadyRounds, SteadyRound{SteadyRow: s, Round: i + 1})
				if i == 0 {
					s.Rounds = len(noise)
					c.Steady = append(c.Steady, s)
				}
			}
		}
	}
	c.fillSummaries()
	return c
}

// TestProtocolComparisons: the protocols of one arm, budget and step are
// compared pairwise, h3 vs h2, h3 vs http1, h2 vs http1, on calls/s, p50,
// server CPU and allocation per call; paired by round when steady
// interleaved them (the round's noise cancels: the interval holds the
// 0.8× put in), unpaired over rounds run one protocol after another; a
// row over different connection shapes names each side's.
func TestProtocolComparisons(t *testing.T) {
	r := &Report{Campaigns: []*Campaign{protocolRounds([]record.Protocol{"h3", "h2", "http1"})}}
	type key struct{ scope, metric, a, b string }
	rows := map[key]ComparisonRow{}
	var keys []key
	for _, c := range r.Comparisons() {
		if c.Kind != KindProtocols {
			continue
		}
		k := key{c.Scope, c.Metric, c.A, c.B}
		rows[k] = c
		keys = append(keys, k)
	}
	var want []key
	for _, scope := range []string{"arm=default budget=max sequential 8B c1", ""} {
		for _, ab := range [][2]string{{"h3", "h2"}, {"h3", "http1"}, {"h2", "http1"}} {
			s := scope
			if s == "" {
				s = "arm=default budget=max throughput 8B c32 conns4" // one shape: h3 and h2 over 4 conns × 8
				if ab[1] == "http1" {
					s = "arm=default budget=max throughput 8B c32, " + ab[0] + " 4 conns × 8 vs http1 32 conns × 1"
				}
			}
			for _, m := range []string{"calls_per_s", "p50_us", "server_cpu_us_per_call", "alloc_bytes_per_call"} {
				want = append(want, key{s, m, ab[0], ab[1]})
			}
		}
	}
	if diff := cmp.Diff(want, keys, cmp.AllowUnexported(key{})); diff != "" {
		t.Fatalf("protocol comparisons (-want +got):\n%s", diff)
	}
	for _, k := range keys {
		if c := rows[k]; c.Test != stats.PairedWilcoxon || c.NA != 8 || c.NB != 8 {
			t.Errorf("%v: test %q over %d+%d, want %s over 8+8", k, c.Test, c.NA, c.NB, stats.PairedWilcoxon)
		}
	}
	h3h2 := rows[key{"arm=default budget=max sequential 8B c1", "calls_per_s", "h3", "h2"}]
	if h3h2.Verdict != string(stats.Slower) || h3h2.RatioCILow == nil || h3h2.RatioCIHigh == nil || *h3h2.RatioCILow > 0.8 || *h3h2.RatioCIHigh < 0.8 {
		t.Errorf("h3 vs h2 calls/s, paired: %s, %v [%v, %v]; want slower, an interval around 0.8", h3h2.Verdict, deref(h3h2.Ratio), h3h2.RatioCILow, h3h2.RatioCIHigh)
	}
	alloc := rows[key{"arm=default budget=max sequential 8B c1", "alloc_bytes_per_call", "h2", "http1"}]
	if alloc.Verdict != string(stats.Higher) || alloc.Ratio == nil || *alloc.Ratio < 2.9 || *alloc.Ratio > 3.1 {
		t.Errorf("h2 vs http1 allocation per call: %s, %v; want higher, about 3×", alloc.Verdict, deref(alloc.Ratio))
	}

	// The same figures, rounds not interleaved: equal round numbers are
	// no pairs, so every comparison is unpaired.
	old := &Report{Campaigns: []*Campaign{protocolRounds(nil)}}
	for _, c := range old.Comparisons() {
		if c.Kind != KindProtocols {
			continue
		}
		if c.Test != stats.MannWhitney {
			t.Errorf("%s %s %s vs %s, rounds not interleaved: test %q, want %s", c.Scope, c.Metric, c.A, c.B, c.Test, stats.MannWhitney)
		}
	}

	var b strings.Builder
	if err := r.Markdown(&b, MarkdownOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		"The protocols of one scenario, payload and concurrency shared their rounds too",
		"| arm=default budget=max throughput 8B c32, h3 4 conns × 8 vs http1 32 conns × 1 | alloc_bytes_per_call | h3 | http1 |",
	} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("the report lacks %q:\n%s", s, b.String())
		}
	}
}
