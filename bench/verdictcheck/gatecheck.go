package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/coldstart-go/coldstart/campaign"
	"github.com/coldstart-go/coldstart/gate"
	"github.com/coldstart-go/coldstart/internal/noise"
	"github.com/coldstart-go/coldstart/internal/provenance"
	"github.com/coldstart-go/coldstart/internal/resultfile"
	"github.com/coldstart-go/coldstart/internal/stats"
	"github.com/coldstart-go/coldstart/prober"
	"github.com/coldstart-go/coldstart/record"
)

// The exit statuses of coldstart gate a try records (cmd/coldstart/gate.go).
const (
	gateExitPass         = 0
	gateExitIncomparable = 2
	gateExitRegression   = 3
	gateExitInconclusive = 4
)

// gateExperiment runs n tries of coldstart gate's paired form: each one
// campaign of the testserver as arm base (no sleep) and as arm new (-start-
// delay 2ms for gate-sleep, none for gate-aa), arms interleaved and taking
// turns going first as gate --base runs them, written to a results file of
// its own and judged from it by gate.ComparePaired with AllowBusy: busy
// rounds are counted, not a reason to give up.
func gateExperiment(ctx context.Context, exp string, n int, p plan, maxReg float64) error {
	tmp, err := os.MkdirTemp("", "verdictcheck-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin, err := buildTestserver(ctx, tmp)
	if err != nil {
		return err
	}
	base := testserverArm(gate.Base, bin, 0)
	nw := testserverArm(gate.New, bin, sleepDelay)
	truth := fmt.Sprintf("new is %s slower to listen: coldstart gate must fail (exit 3)", sleepDelay)
	if exp == "gate-aa" {
		nw = testserverArm(gate.New, bin, 0)
		truth = "no difference: one binary (the testserver) as base and as new; coldstart gate must pass (exit 0)"
	}
	opts := gate.Options{MaxRegression: maxReg, Confidence: p.conf, AllowBusy: true}
	prov := provenance.Collect("verdictcheck", os.Args)
	prov.Notes = map[string]string{"experiment": exp, "truth": truth, "gate": fmt.Sprintf("gate.ComparePaired, --max-regression %g --allow-busy", maxReg)}
	rf, err := resultfile.Create(p.dir, "verdict-"+exp, prov)
	if err != nil {
		return err
	}
	tries := strings.TrimSuffix(rf.Path(), ".jsonl") + ".d"
	sum := p.summary(exp, truth, n)
	var checks []Check
	fails, passes, incomparable, busy := 0, 0, 0, 0
	for k := 1; k <= n; k++ {
		ch, err := gateTry(ctx, exp, k, base, nw, p, opts, tries)
		if err != nil {
			return fmt.Errorf("%s try %d: %w", exp, k, err)
		}
		checks = append(checks, ch)
		if err := rf.Add("verdict_check", ch); err != nil {
			return err
		}
		g := ch.Gate
		switch g.Exit {
		case gateExitRegression:
			fails++
		case gateExitPass:
			passes++
		case gateExitIncomparable:
			incomparable++
		}
		if g.Busy {
			busy++
		}
		why := strings.Join(g.Regressions, ", ")
		if g.Incomparable != "" {
			why = g.Incomparable
		}
		fmt.Fprintf(os.Stderr, "verdictcheck %s %2d/%d: gate exit %d %s; first RPC new/base %s [%s, %s] p=%s %s; %d/%d rounds busy (load %.1f)\n",
			exp, k, n, g.Exit, why, f3p(g.FirstRPCRatio), f3p(g.FirstRPCRatioLow), f3p(g.FirstRPCRatioHigh), f3p(g.FirstRPCP), g.FirstRPCVerdict,
			g.BusyRounds, g.Rounds, ch.Noise.Load1)
	}
	tally(&sum, checks, nil, nil)
	sum.GateFails, sum.GatePasses, sum.GateIncomparable, sum.GateBusy = ip(fails), ip(passes), ip(incomparable), ip(busy)
	if err := rf.Add("verdict_summary", sum); err != nil {
		return err
	}
	printSummary(sum, rf.Path())
	return nil
}

// gateTry is one try: the campaign, its file in dir, the gate's decision
// on it, and the same campaign's first RPC judged unpaired and paired.
func gateTry(ctx context.Context, exp string, k int, base, nw campaign.Arm, p plan, opts gate.Options, dir string) (Check, error) {
	snap, err := noise.Host.Take()
	if err != nil {
		return Check{}, err
	}
	prov := provenance.Collect("verdictcheck", os.Args)
	prov.Notes = map[string]string{"experiment": exp, "try": fmt.Sprint(k)}
	tf, err := resultfile.Create(dir, fmt.Sprintf("%s-try%02d", exp, k), prov)
	if err != nil {
		return Check{}, err
	}
	g := &record.GateCheck{}
	rb, rn := stats.Rounds{}, stats.Rounds{}
	c := p.campaign([]campaign.Arm{base, nw}, func(s campaign.Stop) error { return tf.Add("stop", s) })
	if p.auto() {
		// As coldstart gate --base --runs auto: not before the gate's
		// tests can find anything.
		c.MinRuns = gate.MinAutoRounds(p.conf)
	}
	c.Noise = func(nz campaign.Noise) error {
		g.Rounds++
		if nz.Busy {
			g.BusyRounds++
		}
		return tf.Add("noise", nz)
	}
	sums, err := c.Run(ctx, byRun(base.Name, nw.Name, rb, rn, func(s prober.Sample) error { return tf.Add("sample", s) }))
	if err != nil {
		return Check{}, err
	}
	for _, s := range sums {
		if err := tf.Add("summary", s); err != nil {
			return Check{}, err
		}
	}
	w, err := noise.Host.Since(snap)
	if err != nil {
		return Check{}, err
	}
	if err := gateJudge(tf.Path(), opts, g); err != nil {
		return Check{}, err
	}
	ch := judge(exp, k, nw.Name, base.Name, rn, rb, p.conf)
	ch.Runs, ch.Gate, ch.Noise = max(len(rn), len(rb)), g, w
	return ch, nil
}

// gateJudge judges the paired campaign in path as `coldstart gate PATH`
// does with opts (gate.Load, gate.ComparePaired, the outcome), into g.
func gateJudge(path string, opts gate.Options, g *record.GateCheck) error {
	in, err := gate.Load(path)
	if err != nil {
		return err
	}
	res, err := gate.ComparePaired(in, opts)
	var inc *gate.IncomparableError
	if errors.As(err, &inc) {
		g.Exit, g.Incomparable = gateExitIncomparable, inc.Error()
		return nil
	}
	if err != nil {
		return err
	}
	g.Tested, g.Busy = res.Tested, len(res.Busy) > 0
	for _, r := range res.Regressions() {
		g.Regressions = append(g.Regressions, r.Figure)
	}
	for _, r := range res.Rows {
		if r.Figure == "first RPC median" {
			g.FirstRPCRatio, g.FirstRPCRatioLow, g.FirstRPCRatioHigh = fp(r.Ratio), fp(r.Low), fp(r.High)
			g.FirstRPCP, g.FirstRPCVerdict = fp(r.P), string(r.Verdict)
			break
		}
	}
	switch res.Outcome() {
	case gate.Fail:
		g.Exit = gateExitRegression
	case gate.Inconclusive:
		g.Exit = gateExitInconclusive
	default:
		g.Exit = gateExitPass
	}
	return nil
}
