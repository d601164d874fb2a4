package main

import (
	"math"
	"testing"

	"github.com/coldstart-go/coldstart/campaign"
	"github.com/coldstart-go/coldstart/gate"
	"github.com/coldstart-go/coldstart/internal/noise"
	"github.com/coldstart-go/coldstart/internal/provenance"
	"github.com/coldstart-go/coldstart/internal/resultfile"
	"github.com/coldstart-go/coldstart/internal/stats"
	"github.com/coldstart-go/coldstart/prober"
	"github.com/coldstart-go/coldstart/record"
)

// roundFactors scale whole rounds, as a burst of steal does: noise both
// arms of a round share.
var roundFactors = []float64{1, 1.6, 0.7, 1.3, 0.8, 1.5, 0.6, 1.2, 0.9, 1.4, 1.1, 1.25, 0.75, 1.35, 0.85, 1.45, 0.65, 1.15, 0.95, 1.05}

// shifted are rounds 1..20 of 10 ms scaled by roundFactors, times f plus
// d ms, with a little noise of their own (seed apart).
func shifted(f, d float64, seed int) stats.Rounds {
	r := stats.Rounds{}
	for i, k := range roundFactors {
		own := 1 + 0.002*math.Sin(float64(7*i+seed))
		r[i+1] = (10*k + d) * f * own
	}
	return r
}

// TestJudgePairedSeesThroughRoundNoise: a 5% slower arm under noise that
// scales whole rounds is missed unpaired and found paired, from the same
// samples; the check names both tests and each interval covers 1.05.
func TestJudgePairedSeesThroughRoundNoise(t *testing.T) {
	ch := judge("x", 1, "slow", "base", shifted(1.05, 0, 1), shifted(1, 0, 2), 0.95)
	if ch.Test != stats.MannWhitney || ch.Verdict != string(stats.NoDifference) {
		t.Errorf("unpaired: %s says %q, want mann-whitney, no difference detected", ch.Test, ch.Verdict)
	}
	p := ch.Paired
	if p == nil || p.Test != stats.PairedWilcoxon || p.Verdict != string(stats.Slower) || p.Pairs != 20 {
		t.Fatalf("paired = %+v, want paired-wilcoxon over 20 pairs saying slower", p)
	}
	if !covers(p.RatioLow, p.RatioHigh, 1.05) || !covers(ch.RatioLow, ch.RatioHigh, 1.05) {
		t.Errorf("ratio intervals: paired [%s, %s], unpaired [%s, %s]; want both to cover 1.05",
			f3p(p.RatioLow), f3p(p.RatioHigh), f3p(ch.RatioLow), f3p(ch.RatioHigh))
	}
}

// TestJudgeFewRoundsFallsBack: rounds that do not pair (none in common)
// are judged unpaired by the paired path too, as coldstart run does.
func TestJudgeFewRoundsFallsBack(t *testing.T) {
	a, b := stats.Rounds{}, stats.Rounds{}
	for i := 1; i <= 8; i++ {
		a[i], b[100+i] = float64(10+i), float64(10+i)
	}
	ch := judge("x", 1, "a", "b", a, b, 0.95)
	if ch.Paired.Test != stats.MannWhitney || ch.Paired.Pairs != 0 {
		t.Errorf("paired = %+v, want mann-whitney (no pairs)", ch.Paired)
	}
}

// TestTally: detections, coverage, runs and busy windows are counted for
// each test apart.
func TestTally(t *testing.T) {
	v := func(x float64) *float64 { return &x }
	checks := []Check{
		{Verdict: "slower", DiffLowMs: v(1), DiffHighMs: v(3), RatioLow: v(1.1), RatioHigh: v(1.3), Runs: 20,
			Paired: &record.PairedCheck{Verdict: "slower", DiffLowMs: v(1.5), DiffHighMs: v(2.5), RatioLow: v(1.1), RatioHigh: v(1.2)},
			Noise:  noise.Window{Load1: 1, Busy: true}},
		{Verdict: string(stats.NoDifference), DiffLowMs: v(-1), DiffHighMs: v(1.9), RatioLow: v(0.9), RatioHigh: v(1.1), Runs: 40, Stop: campaign.StopPrecision,
			Paired: &record.PairedCheck{Verdict: "slower", DiffLowMs: v(1.8), DiffHighMs: v(2.2), RatioLow: v(1.15), RatioHigh: v(1.25)},
			Noise:  noise.Window{Load1: 3}},
		{Verdict: string(stats.NoDifference), Runs: 60,
			Paired: &record.PairedCheck{Verdict: string(stats.NoDifference)},
			Noise:  noise.Window{Load1: 2}},
	}
	var sum Summary
	tally(&sum, checks, v(2), v(1.2))
	if sum.Detected != 1 || *sum.PairedDetected != 2 || math.Abs(*sum.PairedDetectedRate-2.0/3) > 1e-12 {
		t.Errorf("detected: unpaired %d, paired %d (%v); want 1, 2 (2/3)", sum.Detected, *sum.PairedDetected, *sum.PairedDetectedRate)
	}
	if sum.DiffCovered != 1 || *sum.PairedDiffCovered != 2 || sum.RatioCovered != 1 || *sum.PairedRatioCovered != 2 {
		t.Errorf("covered: diff %d/%d, ratio %d/%d; want 1/2, 1/2", sum.DiffCovered, *sum.PairedDiffCovered, sum.RatioCovered, *sum.PairedRatioCovered)
	}
	if sum.RunsMin != 20 || sum.RunsMax != 60 || *sum.RunsMedian != 40 || sum.RunsTotal != 120 {
		t.Errorf("runs %d–%d median %v total %d; want 20–60, 40, 120", sum.RunsMin, sum.RunsMax, *sum.RunsMedian, sum.RunsTotal)
	}
	if sum.BusyWindows != 1 || sum.Load1Min != 1 || sum.Load1Max != 3 {
		t.Errorf("busy %d, load %v–%v; want 1, 1–3", sum.BusyWindows, sum.Load1Min, sum.Load1Max)
	}
}

// TestCompareCampaignsMatchesJudge: the summary's detectable effects come
// from the same comparisons judge makes: counts agree.
func TestCompareCampaignsMatchesJudge(t *testing.T) {
	var cs []campaignSamples
	paired := 0
	for seed := range 3 {
		a, b := shifted(1.05, 0, seed), shifted(1, 0, seed+10)
		cs = append(cs, campaignSamples{{"a", ""}: a, {"b", ""}: b})
		if detected(judge("x", seed, "a", "b", a, b, 0.95).Paired.Verdict) {
			paired++
		}
	}
	r := compareCampaigns(cs, "a", "b", "", 0.95, 20)
	if r.Campaigns != 3 || r.Paired != paired || r.Unpaired != 0 {
		t.Errorf("compareCampaigns = %+v; want 3 campaigns, %d paired, 0 unpaired", r, paired)
	}
	if !(r.DetectablePaired < 0.02) || !(r.DetectableUnpaired > 0.2) {
		t.Errorf("detectable at 20: paired %v, unpaired %v; want below 2%%, above 20%%", r.DetectablePaired, r.DetectableUnpaired)
	}
}

// gateFile writes a paired campaign of arms base and new as a try file:
// 20 rounds, new's first RPC (and accepting) times f of base's under
// noise that scales whole rounds; busy marks every round busy.
func gateFile(t *testing.T, f float64, busy bool) string {
	t.Helper()
	p := provenance.Collect("verdictcheck", []string{"test"})
	rf, err := resultfile.Create(t.TempDir(), "try", p)
	if err != nil {
		t.Fatal(err)
	}
	pid := 1000
	for run := 0; run <= 20; run++ {
		k := 1.0
		if run > 0 {
			k = roundFactors[run-1]
		}
		for i, arm := range []string{"base", "new"} {
			x := 10 * k * (1 + 0.002*math.Sin(float64(3*run+i)))
			if arm == "new" {
				x *= f
			}
			pid++
			s := prober.Sample{Arm: arm, Budget: "max", Run: run, Warmup: run == 0, FirstRPCMs: x, PID: pid,
				Phases: []record.Phase{{Name: record.PhaseStarted, Ms: 0.3}, {Name: record.PhaseAccepting, Ms: x - 1}, {Name: record.PhaseFirstRPC, Ms: x}}}
			if err := rf.Add("sample", s); err != nil {
				t.Fatal(err)
			}
		}
		if err := rf.Add("noise", campaign.Noise{Scope: "round", Window: noise.Window{Busy: busy}}); err != nil {
			t.Fatal(err)
		}
	}
	return rf.Path()
}

// TestGateJudge: the gate's paired decision on a try file, as coldstart
// gate FILE --allow-busy makes it: 10% slower fails (exit 3) on the first
// RPC, the same times pass (exit 0), and a busy file is judged and marked.
func TestGateJudge(t *testing.T) {
	opts := func() gate.Options { return gate.Options{MaxRegression: 0.05, AllowBusy: true} }
	for _, tc := range []struct {
		name string
		f    float64
		busy bool
		exit int
	}{
		{"slower", 1.10, false, gateExitRegression},
		{"same", 1, false, gateExitPass},
		{"slower on a busy host", 1.10, true, gateExitRegression},
		{"same on a busy host", 1, true, gateExitPass},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var g record.GateCheck
			if err := gateJudge(gateFile(t, tc.f, tc.busy), opts(), &g); err != nil {
				t.Fatal(err)
			}
			if g.Exit != tc.exit || g.Busy != tc.busy {
				t.Errorf("gate = %+v; want exit %d, busy %v", g, tc.exit, tc.busy)
			}
			if tc.exit == gateExitRegression && (len(g.Regressions) == 0 || g.Regressions[0] != "first RPC median" || g.FirstRPCVerdict != "regression") {
				t.Errorf("regressions %v, first RPC %q; want the first RPC median first, a regression", g.Regressions, g.FirstRPCVerdict)
			}
			if g.FirstRPCRatio == nil || math.Abs(*g.FirstRPCRatio-tc.f) > 0.01 {
				t.Errorf("first RPC ratio %s, want %.2f", f3p(g.FirstRPCRatio), tc.f)
			}
		})
	}
}

// TestGateJudgeIncomparable: a file without a new arm is exit 2, named.
func TestGateJudgeIncomparable(t *testing.T) {
	p := provenance.Collect("verdictcheck", []string{"test"})
	rf, err := resultfile.Create(t.TempDir(), "try", p)
	if err != nil {
		t.Fatal(err)
	}
	for run := 0; run <= 8; run++ {
		for i, arm := range []string{"base", "new"} {
			s := prober.Sample{Arm: arm, Budget: "max", Run: run, Warmup: run == 0, FirstRPCMs: 10, PID: 10*run + i + 1}
			if arm == "new" {
				s.Budget = "cpus=0"
			}
			if err := rf.Add("sample", s); err != nil {
				t.Fatal(err)
			}
		}
	}
	var g record.GateCheck
	if err := gateJudge(rf.Path(), gate.Options{MaxRegression: 0.05}, &g); err != nil {
		t.Fatal(err)
	}
	if g.Exit != gateExitIncomparable || g.Incomparable == "" {
		t.Errorf("gate = %+v; want exit 2 with what differs", g)
	}
}

// TestPlanCheck: bad -runs auto settings are refused naming the flag, as
// coldstart run refuses them.
func TestPlanCheck(t *testing.T) {
	for _, tc := range []struct {
		p    plan
		want string
	}{
		{plan{runs: 0, precision: 0, maxRuns: 60}, "-precision"},
		{plan{runs: 0, precision: 1, maxRuns: 60}, "-precision"},
		{plan{runs: 0, precision: 0.03, maxRuns: 5}, "-max-runs"},
		{plan{runs: -1}, "-runs"},
	} {
		err := tc.p.check(1)
		if err == nil || len(err.Error()) < len(tc.want) || err.Error()[:len(tc.want)] != tc.want {
			t.Errorf("check(%+v) = %v, want an error naming %s", tc.p, err, tc.want)
		}
	}
	if err := (plan{runs: 0, precision: 0.03, maxRuns: 60}).check(1); err != nil {
		t.Errorf("the defaults: %v", err)
	}
	var f runsFlag
	if err := f.Set("auto"); err != nil || !f.auto || f.String() != "auto" {
		t.Errorf("-runs auto: %v %+v", err, f)
	}
	if err := f.Set("x"); err == nil {
		t.Errorf("-runs x: no error")
	}
}
