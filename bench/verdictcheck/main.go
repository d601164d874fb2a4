// Command verdictcheck checks that coldstart's verdicts can be acted on:
// many small campaigns with a known truth, each judged the way `coldstart
// report` judges one.
//
//   - aa: the same binary under two arm names (the sample server's static
//     arm as "a" and as "b"). Truth: no difference. The share of campaigns
//     whose verdict is not "no difference detected" is the false-positive
//     rate (at 95% it should be about 5% or less).
//   - upx: static against upx. Truth: upx starts much slower; it must be
//     detected in every campaign.
//   - sleep: internal/testservers' testserver with -start-delay 0 against
//     -start-delay 2ms. Truth: +2 ms (plus the timer's overshoot, measured
//     here in process); the difference interval and the ratio interval
//     must cover it.
//
// Each experiment writes results/<ts>_verdict-<name>.jsonl: provenance,
// every sample, one "verdict_check" row per campaign (the comparison, and
// what else the machine did meanwhile), and one "verdict_summary" row.
//
// -reanalyze measures nothing: it reads results files (these, or
// coldstart run's) and judges each campaign's samples again, unpaired
// (Mann–Whitney) and paired by run (Wilcoxon signed-rank on per-round
// ratios), and prints how often each found a difference and the smallest
// effect 20 runs per arm would detect by each.
//
//	go run ./bench/verdictcheck                       # 20 campaigns × 10 runs per arm, all experiments
//	go run ./bench/verdictcheck -campaigns 5 -runs 6 -experiments aa
//	go run ./bench/verdictcheck -reanalyze results/*_verdict-aa.jsonl
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
	"strings"
	"syscall"
	"time"

	"github.com/coldstart-go/coldstart/builds"
	"github.com/coldstart-go/coldstart/campaign"
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
	n := flag.Int("campaigns", 20, "small campaigns per experiment")
	runs := flag.Int("runs", 10, "counted cold starts per arm in each campaign")
	conf := flag.Float64("confidence", stats.DefaultConfidence, "confidence level of intervals (tests at 1 − this)")
	results := flag.String("results-dir", "results", "where to write the results files")
	exps := flag.String("experiments", "aa,upx,sleep", "which experiments: aa, upx, sleep")
	again := flag.Bool("reanalyze", false, "measure nothing: judge the samples of the results files named as arguments again, unpaired and paired")
	flag.Parse()
	if err := stats.CheckConfidence(*conf); err != nil {
		fail(fmt.Errorf("-confidence: %w", err))
	}
	if *again {
		var rs []reanalysis
		for _, f := range flag.Args() {
			r, err := reanalyze(f, *conf)
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
	if *n < 1 || *runs < 1 {
		fail(fmt.Errorf("-campaigns and -runs: want at least 1"))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	for _, e := range strings.Split(*exps, ",") {
		var err error
		switch e {
		case "aa", "upx":
			err = sampleExperiment(ctx, e, *n, *runs, *conf, *results)
		case "sleep":
			err = sleepExperiment(ctx, *n, *runs, *conf, *results)
		default:
			err = fmt.Errorf("-experiments: unknown %q (known: aa, upx, sleep)", e)
		}
		if err != nil {
			fail(err)
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "verdictcheck:", err)
	os.Exit(1)
}

// sampleExperiment builds the sample server's static (and upx) arm and runs
// aa (static twice) or upx (static against upx).
func sampleExperiment(ctx context.Context, exp string, n, runs int, conf float64, dir string) error {
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
	return run(ctx, exp, truth, a, b, n, runs, conf, dir, nil)
}

// sleepExperiment builds the testserver and runs it with and without a 2 ms
// sleep before it listens.
func sleepExperiment(ctx context.Context, n, runs int, conf float64, dir string) error {
	tmp, err := os.MkdirTemp("", "verdictcheck-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "testserver")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./internal/testservers/testserver")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("build testserver: %w", err)
	}
	const delay = 2 * time.Millisecond
	mk := func(name string, d time.Duration) campaign.Arm {
		return campaign.Arm{Name: name, Path: bin, Args: func(t prober.Target) ([]string, error) {
			_, port, _ := strings.Cut(t.Address, "127.0.0.1:")
			return []string{"-listen-port", port, "-start-delay", d.String()}, nil
		}}
	}
	truth := sleepTruth(delay)
	return run(ctx, "sleep", fmt.Sprintf("+%s before listening (time.Sleep(2ms) sleeps %.3f ms here, median of 200)", delay, truth),
		mk("sleep2ms", delay), mk("nosleep", 0), n, runs, conf, dir, &truth)
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

func run(ctx context.Context, exp, truth string, a, b campaign.Arm, n, runs int, conf float64, dir string, truthDiff *float64) error {
	p := provenance.Collect("verdictcheck", os.Args)
	p.Notes = map[string]string{"experiment": exp, "truth": truth}
	rf, err := resultfile.Create(dir, "verdict-"+exp, p)
	if err != nil {
		return err
	}
	sum := Summary{Experiment: exp, Truth: truth, Campaigns: n, RunsPerArm: runs, Confidence: conf, TruthDiffMs: truthDiff, Load1Min: math.Inf(1)}
	var allA, allB []float64
	var checks []Check
	for k := 1; k <= n; k++ {
		snap, err := noise.Host.Take()
		if err != nil {
			return err
		}
		var xa, xb []float64
		_, err = campaign.ColdStart{Arms: []campaign.Arm{a, b}, Runs: runs}.Run(ctx, func(s prober.Sample) error {
			if !s.Warmup && s.Error == "" {
				switch s.Arm {
				case a.Name:
					xa = append(xa, s.FirstRPCMs)
				case b.Name:
					xb = append(xb, s.FirstRPCMs)
				}
			}
			return rf.Add("sample", s)
		})
		if err != nil {
			return fmt.Errorf("%s campaign %d: %w", exp, k, err)
		}
		w, err := noise.Host.Since(snap)
		if err != nil {
			return err
		}
		allA, allB = append(allA, xa...), append(allB, xb...)
		c := stats.Compare(xa, xb, conf)
		ch := Check{Experiment: exp, Campaign: k, Metric: "first_rpc_ms", A: a.Name, B: b.Name,
			MedianA: stats.MedianCI(xa, conf).Value, MedianB: stats.MedianCI(xb, conf).Value,
			Ratio: fp(c.Ratio), RatioLow: fp(c.RatioLow), RatioHigh: fp(c.RatioHigh),
			DiffMs: fp(c.Diff), DiffLowMs: fp(c.DiffLow), DiffHighMs: fp(c.DiffHigh),
			PValue: c.P, Verdict: string(c.Verdict(stats.LessIsFaster)), NA: c.NA, NB: c.NB, Noise: w}
		checks = append(checks, ch)
		if err := rf.Add("verdict_check", ch); err != nil {
			return err
		}
		if ch.Verdict != string(stats.NoDifference) {
			sum.Detected++
		}
		if truthDiff != nil && c.DiffLow <= *truthDiff && *truthDiff <= c.DiffHigh {
			sum.DiffCovered++
		}
		sum.Load1Min, sum.Load1Max = math.Min(sum.Load1Min, w.Load1), math.Max(sum.Load1Max, w.Load1)
		if w.Busy {
			sum.BusyWindows++
		}
		fmt.Fprintf(os.Stderr, "verdictcheck %s %2d/%d: %s/%s %.3f× [%s, %s] p=%.3f %s (load %.1f, other work %.2f CPUs)\n",
			exp, k, n, a.Name, b.Name, c.Ratio, f3(c.RatioLow), f3(c.RatioHigh), c.P, ch.Verdict, w.Load1, w.OtherCPUs)
	}
	if truthDiff != nil {
		// The ratio's truth: the pooled baseline median plus the shift,
		// over the baseline median.
		mb := stats.MedianCI(allB, conf).Value
		tr := (mb + *truthDiff) / mb
		sum.TruthRatio = &tr
		for _, ch := range checks {
			if ch.RatioLow != nil && ch.RatioHigh != nil && *ch.RatioLow <= tr && tr <= *ch.RatioHigh {
				sum.RatioCovered++
			}
		}
	}
	sum.DetectedRate = float64(sum.Detected) / float64(n)
	sum.DetectableAtN = fp(stats.DetectableEffect(allA, allB, runs, conf, 0.8))
	sum.DetectableAt20 = fp(stats.DetectableEffect(allA, allB, 20, conf, 0.8))
	if err := rf.Add("verdict_summary", sum); err != nil {
		return err
	}
	fmt.Printf("%s: %d/%d campaigns detected a difference (%.0f%%)", exp, sum.Detected, n, 100*sum.DetectedRate)
	if truthDiff != nil {
		fmt.Printf("; truth +%.3f ms covered by %d/%d difference intervals, ratio %.3f by %d/%d", *truthDiff, sum.DiffCovered, n, *sum.TruthRatio, sum.RatioCovered, n)
	}
	if sum.DetectableAt20 != nil {
		fmt.Printf("; smallest effect detectable with 20 runs per arm: %.1f%%", 100**sum.DetectableAt20)
	}
	fmt.Printf("; load %.1f–%.1f, %d/%d windows busy -> %s\n", sum.Load1Min, sum.Load1Max, sum.BusyWindows, n, rf.Path())
	return nil
}

func fp(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

func f3(v float64) string {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return "∞"
	}
	return fmt.Sprintf("%.3f", v)
}
