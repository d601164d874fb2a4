// Command verdictcheck checks that coldstart's verdicts can be acted on:
// many small campaigns with a known truth, each judged the way `coldstart
// report` judges one.
//
//   - aa: the same binary under two arm names (the sample server's static
//     arm as "a" and as "b"). Truth: no difference. The share of campaigns
//     whose verdict is not "no difference detected" is the false-positive
//     rate (at 95% it should be about 5% or less).
//
//   - upx: static against upx. Truth: upx starts much slower; it must be
//     detected in every campaign.
//
//   - sleep: internal/testservers' testserver with -start-delay 0 against
//     -start-delay 2ms. Truth: +2 ms (plus the timer's overshoot, measured
//     here in process); the difference interval and the ratio interval
//     must cover it.
//
//   - gate-sleep, gate-aa: coldstart gate's paired decision. Each try is
//     one campaign of arms base and new (the testserver without a sleep as
//     base; new with -start-delay 2ms, or the same binary again), written
//     to a results file of its own and judged by gate.ComparePaired as
//     `coldstart gate FILE --allow-busy` judges it (default
//     --max-regression 5%). Truth: gate-sleep must fail (exit 3) every
//     try, gate-aa pass (exit 0) all but about 5%.
//
// Every campaign of aa, upx and sleep is judged twice from the same
// samples: unpaired (Mann–Whitney, the check's own fields) and paired by
// round as coldstart run judges its arms (stats.CompareRounds: Wilcoxon
// signed-rank on the per-round ratios, Hodges–Lehmann intervals; the
// check's "paired" fields). -runs auto runs each campaign as coldstart run
// --runs auto does: rounds until every arm's median interval is within
// -precision, at most -max-runs, and records the rounds each took.
//
// Each experiment writes results/<ts>_verdict-<name>.jsonl: provenance,
// every sample, one "verdict_check" row per campaign (the comparison, and
// what else the machine did meanwhile), and one "verdict_summary" row. A
// gate experiment writes its tries' samples to files of their own in
// results/<ts>_verdict-<name>.d/ (coldstart gate reads them as they are)
// and keeps the checks and the summary in the .jsonl.
//
// -reanalyze measures nothing: it reads results files (these, or
// coldstart run's) and judges each campaign's samples again, unpaired
// (Mann–Whitney) and paired by run (Wilcoxon signed-rank on per-round
// ratios), and prints how often each found a difference and the smallest
// effect -detect-at runs per arm would detect by each (0: each campaign's
// own counted rounds, the effect its --runs auto campaigns resolved).
//
//	go run ./bench/verdictcheck                       # 20 campaigns × 20 runs per arm: aa, upx, sleep
//	go run ./bench/verdictcheck -campaigns 5 -runs 6 -experiments aa
//	go run ./bench/verdictcheck -campaigns 40 -runs auto -experiments aa
//	go run ./bench/verdictcheck -campaigns 20 -experiments gate-sleep
//	go run ./bench/verdictcheck -reanalyze results/*_verdict-aa.jsonl
//	go run ./bench/verdictcheck -reanalyze -detect-at 0 results/*_verdict-aa.jsonl
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/coldstart-go/coldstart/builds"
	"github.com/coldstart-go/coldstart/campaign"
	"github.com/coldstart-go/coldstart/gate"
	"github.com/coldstart-go/coldstart/internal/noise"
	"github.com/coldstart-go/coldstart/internal/provenance"
	"github.com/coldstart-go/coldstart/internal/resultfile"
	"github.com/coldstart-go/coldstart/internal/stats"
	"github.com/coldstart-go/coldstart/prober"
	"github.com/coldstart-go/coldstart/record"
)

// Check and Summary are the records this command writes; report reads
// the summaries.
type (
	Check   = record.VerdictCheck
	Summary = record.VerdictSummary
)

func main() {
	n := flag.Int("campaigns", 20, "small campaigns (gate: tries) per experiment")
	var runs runsFlag = runsFlag{n: 20}
	flag.Var(&runs, "runs", "counted cold starts per arm in each campaign (as coldstart run's default), or auto: rounds until every arm's median interval is within -precision, at most -max-runs")
	precision := flag.Float64("precision", 0.03, "-runs auto: stop once every arm's median interval reaches no farther than this fraction of the median on either side (0.03 = ±3%)")
	maxRuns := flag.Int("max-runs", 60, "-runs auto: stop after this many counted rounds, however wide the intervals")
	conf := flag.Float64("confidence", stats.DefaultConfidence, "confidence level of intervals (tests at 1 − this)")
	maxReg := flag.Float64("max-regression", gate.DefaultMaxRegression, "gate experiments: how much worse a figure may get, significantly, and pass (as coldstart gate's)")
	results := flag.String("results-dir", "results", "where to write the results files")
	exps := flag.String("experiments", "aa,upx,sleep", "which experiments: aa, upx, sleep, gate-sleep, gate-aa (gate: both)")
	again := flag.Bool("reanalyze", false, "measure nothing: judge the samples of the results files named as arguments again, unpaired and paired")
	detectAt := flag.Int("detect-at", 20, "-reanalyze: the runs per arm the smallest detectable effect is for (0 = each campaign's own counted rounds)")
	flag.Parse()
	if *detectAt < 0 {
		fail(fmt.Errorf("-detect-at: %d, want a number of runs per arm, or 0 for each campaign's own", *detectAt))
	}
	if err := stats.CheckConfidence(*conf); err != nil {
		fail(fmt.Errorf("-confidence: %w", err))
	}
	if *again {
		var rs []reanalysis
		for _, f := range flag.Args() {
			r, err := reanalyze(f, *conf, *detectAt)
			if err != nil {
				fail(err)
			}
			rs = append(rs, r...)
		}
		if err := writeReanalysis(os.Stdout, rs); err != nil {
			fail(err)
		}
		return
	}
	plan := plan{runs: runs.n, conf: *conf, dir: *results}
	if runs.auto {
		plan.runs, plan.precision, plan.maxRuns = 0, *precision, *maxRuns
	}
	if err := plan.check(*n); err != nil {
		fail(err)
	}
	if !(*maxReg >= 0) || math.IsInf(*maxReg, 0) {
		fail(fmt.Errorf("-max-regression: %v, want a fraction of base of 0 or more (0.05 = 5%%)", *maxReg))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var list []string
	for _, e := range strings.Split(*exps, ",") {
		if e == "gate" {
			list = append(list, "gate-sleep", "gate-aa")
		} else {
			list = append(list, e)
		}
	}
	for _, e := range list {
		var err error
		switch e {
		case "aa", "upx":
			err = sampleExperiment(ctx, e, *n, plan)
		case "sleep":
			err = sleepExperiment(ctx, *n, plan)
		case "gate-sleep", "gate-aa":
			err = gateExperiment(ctx, e, *n, plan, *maxReg)
		default:
			err = fmt.Errorf("-experiments: unknown %q (known: aa, upx, sleep, gate-sleep, gate-aa, gate)", e)
		}
		if err != nil {
			fail(err)
		}
	}
}

// runsFlag is -runs: a number of runs, or auto.
type runsFlag struct {
	n    int
	auto bool
}

func (f *runsFlag) String() string {
	if f.auto {
		return "auto"
	}
	return strconv.Itoa(f.n)
}

func (f *runsFlag) Set(s string) error {
	if s == "auto" {
		f.n, f.auto = 0, true
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("%q, want a number of runs or auto", s)
	}
	f.n, f.auto = n, false
	return nil
}

// plan is how each campaign runs: runs rounds, or (runs 0) rounds until
// precision, at most maxRuns.
type plan struct {
	runs      int
	precision float64
	maxRuns   int
	conf      float64
	dir       string
}

func (p plan) auto() bool { return p.runs == 0 }

// check refuses what coldstart run refuses, naming the flag.
func (p plan) check(n int) error {
	if n < 1 {
		return fmt.Errorf("-campaigns: %d, want at least 1", n)
	}
	if !p.auto() {
		if p.runs < 1 {
			return fmt.Errorf("-runs: %d, want at least 1, or auto", p.runs)
		}
		return nil
	}
	if err := stats.CheckPrecision(p.precision); err != nil {
		return fmt.Errorf("-precision: %w", err)
	}
	if p.maxRuns < campaign.MinAutoRuns {
		return fmt.Errorf("-max-runs: %d, want at least %d (the fewest runs whose median has an interval)", p.maxRuns, campaign.MinAutoRuns)
	}
	return nil
}

// campaign is the cold-start campaign of arms under p; stopped gets why a
// -runs auto campaign stopped.
func (p plan) campaign(arms []campaign.Arm, stopped func(campaign.Stop) error) campaign.ColdStart {
	c := campaign.ColdStart{Arms: arms, Runs: p.runs, Confidence: p.conf}
	if p.auto() {
		c.Precision, c.MaxRuns, c.Stopped = p.precision, p.maxRuns, stopped
	}
	return c
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "verdictcheck:", err)
	os.Exit(1)
}

// sampleExperiment builds the sample server's static (and upx) arm and runs
// aa (static twice) or upx (static against upx).
func sampleExperiment(ctx context.Context, exp string, n int, p plan) error {
	list := "static"
	if exp == "upx" {
		list = "static,upx"
	}
	arms, err := builds.ParseArms(list)
	if err != nil {
		return err
	}
	src, err := builds.SampleSource()
	if err != nil {
		return err
	}
	arts, errs := builds.BuildAll(ctx, src, arms, builds.Options{Progress: os.Stderr})
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	args := func(t prober.Target) ([]string, error) { return []string{"--addr", t.Address}, nil }
	var a, b campaign.Arm
	truth := ""
	if exp == "aa" {
		a = campaign.Arm{Name: "a", Path: arts[0].Path, Args: args}
		b = campaign.Arm{Name: "b", Path: arts[0].Path, Args: args}
		truth = "no difference: one binary (static) under two arm names"
	} else {
		a = campaign.Arm{Name: "upx", Path: arts[1].Path, Args: args}
		b = campaign.Arm{Name: "static", Path: arts[0].Path, Args: args}
		truth = "upx starts slower than static (decompression before main)"
	}
	return run(ctx, exp, truth, a, b, n, p, nil)
}

// sleepDelay is the sleep and gate-sleep experiments' known extra start-up.
const sleepDelay = 2 * time.Millisecond

// buildTestserver builds internal/testservers/testserver into dir.
func buildTestserver(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "testserver")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./internal/testservers/testserver")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build testserver: %w", err)
	}
	return bin, nil
}

// testserverArm is the testserver sleeping d before it listens.
func testserverArm(name, bin string, d time.Duration) campaign.Arm {
	a := campaign.Arm{Name: name, Path: bin, Args: func(t prober.Target) ([]string, error) {
		_, port, _ := strings.Cut(t.Address, "127.0.0.1:")
		return []string{"-listen-port", port, "-start-delay", d.String()}, nil
	}}
	if fi, err := os.Stat(bin); err == nil {
		a.SizeBytes = fi.Size()
	}
	return a
}

// sleepExperiment builds the testserver and runs it with and without a 2 ms
// sleep before it listens.
func sleepExperiment(ctx context.Context, n int, p plan) error {
	tmp, err := os.MkdirTemp("", "verdictcheck-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin, err := buildTestserver(ctx, tmp)
	if err != nil {
		return err
	}
	truth := sleepTruth(sleepDelay)
	return run(ctx, "sleep", fmt.Sprintf("+%s before listening (time.Sleep(2ms) sleeps %.3f ms here, median of 200)", sleepDelay, truth),
		testserverArm("sleep2ms", bin, sleepDelay), testserverArm("nosleep", bin, 0), n, p, &truth)
}

// sleepTruth measures what time.Sleep(d) really sleeps on this machine
// (timer slack and scheduling add to d): the median of 200, in ms.
func sleepTruth(d time.Duration) float64 {
	xs := make([]float64, 200)
	for i := range xs {
		t := time.Now()
		time.Sleep(d)
		xs[i] = float64(time.Since(t)) / float64(time.Millisecond)
	}
	return stats.MedianCI(xs, 0.95).Value
}

func run(ctx context.Context, exp, truth string, a, b campaign.Arm, n int, p plan, truthDiff *float64) error {
	prov := provenance.Collect("verdictcheck", os.Args)
	prov.Notes = map[string]string{"experiment": exp, "truth": truth}
	rf, err := resultfile.Create(p.dir, "verdict-"+exp, prov)
	if err != nil {
		return err
	}
	sum := p.summary(exp, truth, n)
	sum.TruthDiffMs = truthDiff
	var checks []Check
	var cs []campaignSamples
	for k := 1; k <= n; k++ {
		snap, err := noise.Host.Take()
		if err != nil {
			return err
		}
		ra, rb := stats.Rounds{}, stats.Rounds{}
		var stop *campaign.Stop
		_, err = p.campaign([]campaign.Arm{a, b}, func(s campaign.Stop) error {
			stop = &s
			return rf.Add("stop", s)
		}).Run(ctx, byRun(a.Name, b.Name, ra, rb, func(s prober.Sample) error { return rf.Add("sample", s) }))
		if err != nil {
			return fmt.Errorf("%s campaign %d: %w", exp, k, err)
		}
		w, err := noise.Host.Since(snap)
		if err != nil {
			return err
		}
		cs = append(cs, campaignSamples{{a.Name, ""}: ra, {b.Name, ""}: rb})
		ch := judge(exp, k, a.Name, b.Name, ra, rb, p.conf)
		ch.Runs = max(len(ra), len(rb))
		if stop != nil {
			ch.Stop = stop.Reason
		}
		ch.Noise = w
		checks = append(checks, ch)
		if err := rf.Add("verdict_check", ch); err != nil {
			return err
		}
		pc := ch.Paired
		fmt.Fprintf(os.Stderr, "verdictcheck %s %2d/%d (%d runs): %s/%s unpaired %s [%s, %s] p=%.3f %s; paired %s [%s, %s] p=%.3f %s (load %.1f, other work %.2f CPUs)\n",
			exp, k, n, ch.Runs, a.Name, b.Name, f3p(ch.Ratio), f3p(ch.RatioLow), f3p(ch.RatioHigh), ch.PValue, ch.Verdict,
			f3p(pc.Ratio), f3p(pc.RatioLow), f3p(pc.RatioHigh), pc.PValue, pc.Verdict, w.Load1, w.OtherCPUs)
	}
	var truthRatio *float64
	if truthDiff != nil {
		// The ratio's truth: the pooled baseline median plus the shift,
		// over the baseline median.
		var allB []float64
		for _, c := range cs {
			allB = append(allB, c[[2]string{b.Name, ""}].Values()...)
		}
		mb := stats.MedianCI(allB, p.conf).Value
		tr := (mb + *truthDiff) / mb
		truthRatio = &tr
	}
	tally(&sum, checks, truthDiff, truthRatio)
	var allA, allB []float64
	for _, c := range cs {
		allA, allB = append(allA, c[[2]string{a.Name, ""}].Values()...), append(allB, c[[2]string{b.Name, ""}].Values()...)
	}
	if !p.auto() {
		sum.DetectableAtN = fp(stats.DetectableEffect(allA, allB, p.runs, p.conf, 0.8))
	}
	sum.DetectableAt20 = fp(stats.DetectableEffect(allA, allB, 20, p.conf, 0.8))
	re := compareCampaigns(cs, a.Name, b.Name, "", p.conf, 20)
	sum.DetectableUnpairedAt20, sum.DetectablePairedAt20 = fp(re.DetectableUnpaired), fp(re.DetectablePaired)
	if p.auto() {
		own := compareCampaigns(cs, a.Name, b.Name, "", p.conf, 0)
		sum.DetectableUnpairedAtRuns, sum.DetectablePairedAtRuns = fp(own.DetectableUnpaired), fp(own.DetectablePaired)
	}
	if err := rf.Add("verdict_summary", sum); err != nil {
		return err
	}
	printSummary(sum, rf.Path())
	return nil
}

// summary is an experiment's summary before its campaigns are counted.
func (p plan) summary(exp, truth string, n int) Summary {
	sum := Summary{Experiment: exp, Truth: truth, Campaigns: n, RunsPerArm: p.runs, Confidence: p.conf, Load1Min: math.Inf(1)}
	if p.auto() {
		sum.Precision, sum.MaxRuns = p.precision, p.maxRuns
	}
	return sum
}

// printSummary says what an experiment found, on stdout.
func printSummary(sum Summary, path string) {
	n := sum.Campaigns
	if sum.GateFails != nil {
		fmt.Printf("%s: gate failed (exit 3) %d/%d tries, passed %d/%d, incomparable %d; the gate found %d/%d tries busy (judged anyway, --allow-busy)",
			sum.Experiment, *sum.GateFails, n, *sum.GatePasses, n, *sum.GateIncomparable, *sum.GateBusy, n)
	} else {
		fmt.Printf("%s: difference detected in %d/%d campaigns unpaired (%.0f%%), %d/%d paired (%.0f%%)",
			sum.Experiment, sum.Detected, n, 100*sum.DetectedRate, *sum.PairedDetected, n, 100**sum.PairedDetectedRate)
	}
	if sum.TruthDiffMs != nil && sum.TruthRatio != nil {
		fmt.Printf("; truth +%.3f ms covered by %d/%d difference intervals unpaired, %d/%d paired; ratio %.3f by %d/%d unpaired, %d/%d paired",
			*sum.TruthDiffMs, sum.DiffCovered, n, *sum.PairedDiffCovered, n, *sum.TruthRatio, sum.RatioCovered, n, *sum.PairedRatioCovered, n)
	}
	if sum.Precision > 0 {
		fmt.Printf("; runs auto (±%.1f%%, at most %d): %d–%d rounds, median %.0f, %d in all", 100*sum.Precision, sum.MaxRuns, sum.RunsMin, sum.RunsMax, deref(sum.RunsMedian), sum.RunsTotal)
	}
	if sum.DetectableUnpairedAt20 != nil || sum.DetectablePairedAt20 != nil {
		fmt.Printf("; smallest effect detectable with 20 runs per arm: unpaired %s, paired %s (median over campaigns; pooled unpaired %s)",
			pctp(sum.DetectableUnpairedAt20), pctp(sum.DetectablePairedAt20), pctp(sum.DetectableAt20))
	}
	if sum.DetectablePairedAtRuns != nil {
		fmt.Printf("; at each campaign's own rounds: unpaired %s, paired %s", pctp(sum.DetectableUnpairedAtRuns), pctp(sum.DetectablePairedAtRuns))
	}
	fmt.Printf("; load %.1f–%.1f, %d/%d windows busy -> %s\n", sum.Load1Min, sum.Load1Max, sum.BusyWindows, n, path)
}

func fp(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

func ip(v int) *int { return &v }

func deref(v *float64) float64 {
	if v == nil {
		return math.NaN()
	}
	return *v
}

func f3p(v *float64) string {
	if v == nil {
		return "∞"
	}
	return fmt.Sprintf("%.3f", *v)
}

func pctp(v *float64) string {
	if v == nil {
		return "–"
	}
	return pct(*v)
}

// byRun returns a sample callback that keeps each counted cold start of
// arms a and b (first RPC, ms) by its run, into ra and rb, for the paired
// and unpaired judgements, and passes every sample on to next.
func byRun(a, b string, ra, rb stats.Rounds, next func(prober.Sample) error) func(prober.Sample) error {
	return func(s prober.Sample) error {
		if !s.Warmup && s.Error == "" && s.FirstRPCMs > 0 {
			switch s.Arm {
			case a:
				ra[s.Run] = s.FirstRPCMs
			case b:
				rb[s.Run] = s.FirstRPCMs
			}
		}
		return next(s)
	}
}
