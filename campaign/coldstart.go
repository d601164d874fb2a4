package campaign

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"golang.org/x/sys/unix"

	"github.com/coldstart-go/coldstart/budget"
	"github.com/coldstart-go/coldstart/internal/noise"
	"github.com/coldstart-go/coldstart/internal/procfs"
	"github.com/coldstart-go/coldstart/internal/progress"
	"github.com/coldstart-go/coldstart/internal/stats"
	"github.com/coldstart-go/coldstart/launch"
	"github.com/coldstart-go/coldstart/prober"
	"github.com/coldstart-go/coldstart/record"
)

// ColdStart configures a cold-start campaign.
type ColdStart struct {
	Arms    []Arm
	Budgets []budget.Budget // nil = one unconstrained budget
	// Runs is the number of counted cold starts per arm and budget, after
	// one uncounted warm-up round (0 with Precision set: as many as it
	// takes).
	Runs int
	// Precision, above 0, leaves the number of rounds open (Runs must be
	// 0): counted rounds go on until every arm under every budget has at
	// least MinAutoRuns of them and its median's interval reaches no
	// farther than Precision of the median on either side
	// (max(m−lo, hi−m)/m ≤ Precision, e.g. 0.03), or MaxRuns rounds were
	// counted. It stops on precision, never on a test's p-value: stopping
	// when a difference looks significant inflates false positives.
	Precision float64
	// MaxRuns caps the counted rounds when Precision is set (at least
	// MinAutoRuns, and MinRuns).
	MaxRuns int
	// MinRuns, with Precision, is the fewest counted rounds before a stop
	// on precision when the comparison made of them needs more than
	// MinAutoRuns (coldstart gate's Holm-adjusted paired tests); 0 =
	// MinAutoRuns.
	MinRuns int
	// Stopped, when set, gets why a campaign with Precision stopped
	// ("stop" records in results files), also when it was interrupted.
	Stopped   func(Stop) error
	Transport Transport
	// Addr is a fixed address for servers that choose their own (zero =
	// a fresh one per instance).
	Addr prober.Target
	// Checker decides readiness (nil = grpc.health.v1 Check).
	Checker prober.Checker
	Wait    prober.WaitOptions
	// ProberCPUs pins the prober (nil = the CPUs outside each budget's CPU
	// set, or all CPUs when the budget has none).
	ProberCPUs []int
	// PageCache is Cold to evict each arm's files before each start (""
	// = Warm: as the previous start left them).
	PageCache PageCache
	// Progress gets each probe as it is taken, through progress.For: a
	// line per probe, or a live bar when it is a progress.Terminal; the
	// total is (Runs+1) × budgets × arms, with Precision set (MaxRuns+1)
	// × budgets × arms, the rest skipped when it stops sooner (nil =
	// quiet). Log gets each
	// spawned command line (-v).
	Progress io.Writer
	Log      io.Writer
	// Confidence is the level of the medians' intervals (0 = 95%).
	Confidence float64
	// Noise, when set, gets what else the machine did during each round
	// (every arm under every budget once), scoped "round N".
	Noise func(Noise) error
	// KeepGoing: an arm whose probe fails is left out of the later rounds
	// and the others go on; Run returns their summaries with the failures
	// joined (false = the first failure ends the campaign). A variant
	// (Arm.Variant) is always left out so: a setting its server refuses
	// fails it alone.
	KeepGoing bool
	// Polls are platform readiness-poll intervals whose delay each summary
	// reports (nil = none); see Polled.
	Polls []PollInterval
	// FixedOrder starts the arms in the same order in every round. By
	// default round r starts them rotated by r (A B C, B C A, C A B, ...;
	// the warm-up round 0 in order), so that each arm starts in each
	// position equally often: a start can depend on what ran just before
	// it (the previous server's teardown still under way), and with one
	// order in every round that effect reads as a difference between the
	// arms when they are paired by round.
	FixedOrder bool
}

// order is the arms in the order round run starts them.
func (c ColdStart) order(run int) []Arm {
	n := len(c.Arms)
	if c.FixedOrder || n < 2 || run%n == 0 {
		return c.Arms
	}
	k := run % n
	return append(append([]Arm(nil), c.Arms[k:]...), c.Arms[:k]...)
}

// Noise is what else the machine did during one round of a campaign
// ("noise" records in results files).
type Noise struct {
	Scope string `json:"scope"`
	noise.Window
}

// Summary is one arm under one budget (record.Summary).
type Summary = record.Summary

// MinAutoRuns is the fewest counted rounds a campaign with Precision runs:
// the smallest sample whose median has a 95% interval.
const MinAutoRuns = stats.MinAutoRounds

// Why a campaign with Precision stopped (Stop.Reason).
const (
	StopPrecision   = "precision"   // every median's interval was within Precision
	StopMaxRuns     = "max-runs"    // MaxRuns rounds were counted first
	StopInterrupted = "interrupted" // the context was cancelled: the rounds finished are kept
)

// Stop is why a campaign with Precision stopped, and where it stood then.
type Stop struct {
	Reason string `json:"reason"`
	// Rounds is the number of counted rounds finished.
	Rounds    int     `json:"rounds"`
	Precision float64 `json:"precision"`
	MaxRuns   int     `json:"max_runs"`
	// WidestHalfWidth is the widest median interval's half-width over
	// every arm and budget, relative to its median (0.03 = ±3%); nil when
	// one of them had no interval yet. WidestArm and WidestBudget name it.
	WidestHalfWidth *float64 `json:"widest_half_width"`
	WidestArm       string   `json:"widest_arm,omitempty"`
	WidestBudget    string   `json:"widest_budget,omitempty"`
}

// String says why the campaign stopped, for stderr.
func (s Stop) String() string {
	w := "no interval yet"
	if s.WidestHalfWidth != nil {
		w = fmt.Sprintf("±%.1f%%", 100**s.WidestHalfWidth)
	}
	at := fmt.Sprintf("widest median interval %s (%s under %s)", w, s.WidestArm, s.WidestBudget)
	switch s.Reason {
	case StopPrecision:
		return fmt.Sprintf("stopped after %d rounds: every median within ±%.1f%%; %s", s.Rounds, 100*s.Precision, at)
	case StopMaxRuns:
		return fmt.Sprintf("stopped at the cap of %d rounds before every median was within ±%.1f%%; %s", s.MaxRuns, 100*s.Precision, at)
	}
	return fmt.Sprintf("interrupted after %d rounds, kept; %s", s.Rounds, at)
}

// Run measures every arm under every budget: one warm-up round (run 0,
// recorded but not counted), then Runs rounds with the arms interleaved
// (A B C A B C ...); with Precision, rounds until the medians are known
// that well (see Precision). onSample gets every sample as soon as it is
// taken, so a results file keeps what was measured when the campaign is
// interrupted. A probe that fails ends the campaign with its error (its
// sample, with the error, is recorded first); with Precision, an
// interrupted campaign returns the summaries of the rounds it finished,
// with the context's error.
func (c ColdStart) Run(ctx context.Context, onSample func(prober.Sample) error) ([]Summary, error) {
	auto := c.Precision > 0
	switch {
	case auto && c.Runs != 0:
		return nil, fmt.Errorf("runs: %d with precision %v, want one of them", c.Runs, c.Precision)
	case auto && stats.CheckPrecision(c.Precision) != nil:
		return nil, fmt.Errorf("precision: %w", stats.CheckPrecision(c.Precision))
	case auto && stats.CheckMaxRounds(c.MaxRuns) != nil:
		return nil, fmt.Errorf("max runs: %w", stats.CheckMaxRounds(c.MaxRuns))
	case auto && c.MaxRuns < c.MinRuns:
		return nil, fmt.Errorf("max runs: %d, below the %d min runs", c.MaxRuns, c.MinRuns)
	case !auto && c.Runs <= 0:
		return nil, fmt.Errorf("runs: %d, want at least 1", c.Runs)
	}
	last := c.Runs
	if auto {
		last = c.MaxRuns
	}
	conf := c.Confidence
	if conf == 0 {
		conf = stats.DefaultConfidence
	}
	if len(c.Arms) == 0 {
		return nil, errors.New("no arms to measure")
	}
	budgets := c.Budgets
	if len(budgets) == 0 {
		budgets = []budget.Budget{{}}
	}
	checker := c.Checker
	if checker == nil {
		checker = prober.Health{}
	}
	all, err := budget.AllowedCPUs() // as this process started: what is restored after
	if err != nil {
		return nil, err
	}
	defer procfs.Host.PinSelf(all) // leave this process as we found it

	prog := progress.For(c.Progress)
	prog.Start((last+1)*len(budgets)*len(c.Arms), "cold starts")
	defer prog.Done() // before the caller prints results or the error

	samples := map[key][]prober.Sample{}
	failed := map[string]error{}
	var stop *Stop
	for run := 0; run <= last && stop == nil; run++ {
		snap, nerr := noise.Host.Take()
		// The round's samples count once it is whole: an interrupted
		// round is left out of the summaries (its samples are recorded).
		round := map[key]prober.Sample{}
		for bi, b := range budgets {
			pcpus := c.ProberCPUs
			if pcpus == nil {
				pcpus = budget.Complement(all, b.CPUs)
			}
			if err := procfs.Host.PinSelf(pcpus); err != nil {
				return nil, fmt.Errorf("pin prober to CPUs %s: %w", budget.FormatCPUList(pcpus), err)
			}
			for _, a := range c.order(run) {
				if failed[a.Name] != nil {
					continue
				}
				s, err := c.probeOnce(ctx, a, b, checker, all, run == 0)
				s.Run, s.Warmup = run, run == 0
				if rerr := onSample(s); rerr != nil {
					return nil, fmt.Errorf("record sample: %w", rerr)
				}
				prog.Step(fmt.Sprintf("run %d/%d  %-8s %-12s %s", run, last, a.Name, b, progressNote(s, err)))
				if err != nil {
					if auto && ctx.Err() != nil {
						stop = &Stop{Reason: StopInterrupted, Rounds: max(run-1, 0)}
						break
					}
					// A variant that fails (a setting its server
					// refuses) is left out as with KeepGoing: the
					// others were asked for as they are.
					if !(c.KeepGoing || a.Variant.IsVariant()) || ctx.Err() != nil {
						return nil, err
					}
					failed[a.Name] = err
					// Its probes under the budgets after this one in
					// this round, and in the rounds after, are not taken.
					prog.Skip((last-run)*len(budgets) + len(budgets) - 1 - bi)
					continue
				}
				if run > 0 {
					round[key{a.Name, b.String()}] = s
				}
			}
			if stop != nil {
				break
			}
		}
		if stop != nil {
			break
		}
		for k, s := range round {
			samples[k] = append(samples[k], s)
		}
		if c.Noise != nil && nerr == nil {
			// Servers are waited for after each probe, so their CPU is
			// ours (getrusage's children), not other work.
			if w, err := noise.Host.Since(snap); err == nil {
				if err := c.Noise(Noise{Scope: fmt.Sprintf("round %d", run), Window: w}); err != nil {
					return nil, fmt.Errorf("record noise: %w", err)
				}
			}
		}
		if auto && run > 0 {
			stop = c.stopAfter(run, last, budgets, samples, failed, conf)
			if stop != nil {
				// The probes of the rounds not run.
				prog.Skip((last - run) * len(budgets) * (len(c.Arms) - len(failed)))
			}
		}
	}
	var ierr error
	if stop != nil {
		if stop.Reason == StopInterrupted {
			c.widest(stop, budgets, samples, failed, conf)
			ierr = fmt.Errorf("interrupted after %d rounds: %w", stop.Rounds, ctx.Err())
		}
		stop.Precision, stop.MaxRuns = c.Precision, c.MaxRuns
		if c.Stopped != nil {
			if err := c.Stopped(*stop); err != nil {
				return nil, fmt.Errorf("record stop: %w", err)
			}
		}
	}
	var out []Summary
	for _, b := range budgets {
		for _, a := range c.Arms {
			sum := record.SummarizeAt(samples[key{a.Name, b.String()}], conf)
			sum.Arm, sum.Budget, sum.SizeBytes, sum.Probe = a.Name, b.String(), a.SizeBytes, checker.Name()
			sum.Variant = a.Variant
			pcpus := c.ProberCPUs
			if pcpus == nil {
				pcpus = budget.Complement(all, b.CPUs)
			}
			sum.ProberCPUs = budget.FormatCPUList(pcpus)
			if c.PageCache == Cold {
				sum.PageCache = string(Cold)
			}
			sum.Polls = Polled(samples[key{a.Name, b.String()}], c.Polls)
			out = append(out, sum)
		}
	}
	errs := []error{ierr}
	for _, a := range c.Arms {
		errs = append(errs, failed[a.Name])
	}
	return out, errors.Join(errs...)
}

type key struct{ arm, budget string }

// stopAfter says whether a campaign with Precision stops after counted
// round run, by stats.AutoStop over the first-RPC times of every arm
// still measured under every budget: StopPrecision, StopMaxRuns, or nil
// to go on.
func (c ColdStart) stopAfter(run, last int, budgets []budget.Budget, samples map[key][]prober.Sample, failed map[string]error, conf float64) *Stop {
	s := &Stop{Rounds: run}
	widest := c.widest(s, budgets, samples, failed, conf)
	switch (stats.AutoStop{Precision: c.Precision, Max: last, Min: c.MinRuns}).After(run, widest) {
	case stats.Precise:
		s.Reason = StopPrecision
	case stats.AtCap:
		s.Reason = StopMaxRuns
	default:
		return nil
	}
	return s
}

// widest fills s's widest median interval over the arms still measured
// and every budget (stats.Widest), and returns its half-width.
func (c ColdStart) widest(s *Stop, budgets []budget.Budget, samples map[key][]prober.Sample, failed map[string]error, conf float64) float64 {
	var series [][]float64
	var keys []key
	for _, b := range budgets {
		for _, a := range c.Arms {
			if failed[a.Name] != nil {
				continue
			}
			var xs []float64
			for _, p := range samples[key{a.Name, b.String()}] {
				xs = append(xs, p.FirstRPCMs)
			}
			series, keys = append(series, xs), append(keys, key{a.Name, b.String()})
		}
	}
	worst, at := stats.Widest(series, conf)
	s.WidestHalfWidth, s.WidestArm, s.WidestBudget = nil, "", ""
	if at >= 0 {
		s.WidestArm, s.WidestBudget = keys[at].arm, keys[at].budget
		if !math.IsInf(worst, 1) {
			s.WidestHalfWidth = &worst
		}
	}
	return worst
}

func progressNote(s prober.Sample, err error) string {
	if err != nil {
		return "error: " + firstLine(err.Error())
	}
	w := ""
	if s.Warmup {
		w = " (warm-up, not counted)"
	}
	return fmt.Sprintf("%7.2f ms  %d attempts%s", s.FirstRPCMs, s.Attempts, w)
}

func firstLine(s string) string {
	for i, r := range s {
		if r == '\n' {
			return s[:i]
		}
	}
	return s
}

// probeOnce starts one instance, times it to its first ready RPC, reads its
// figures, stops it and waits until its address is free again.
func (c ColdStart) probeOnce(ctx context.Context, a Arm, b budget.Budget, checker prober.Checker, all []int, prepare bool) (s prober.Sample, err error) {
	s = prober.Sample{Arm: a.Name, Budget: b.String()}
	defer func() {
		if err != nil {
			err = a.variantErr(err)
			s.Error = err.Error()
		}
	}()
	t, cleanup, err := newTarget(c.Transport, a.fixedTarget(c.Addr), checker)
	if err != nil {
		return s, err
	}
	defer cleanup()
	if err := prober.EnsureFree(ctx, t); err != nil {
		return s, fmt.Errorf("%s: %w", a.Name, err)
	}
	if err := a.prepare(ctx, t); err != nil { // before the page cache is evicted and the clock starts
		return s, err
	}
	// A child inherits the CPU mask of the thread that forks it: with the
	// prober pinned, an unpinned budget must name all CPUs explicitly.
	lb := b
	if len(lb.CPUs) == 0 {
		lb.CPUs = all
	}
	if c.PageCache == Cold {
		if s.PageCache, err = a.evict(ctx); err != nil {
			return s, err
		}
	}
	ru0 := selfCPU()
	inst, r, err := a.startReady(ctx, t, lb, nil, c.Log, launch.ReadyOptions{
		Checker: checker, Wait: c.Wait,
		Launched: func(inst launch.Instance) error {
			s.PID = inst.PID()
			if a.Started != nil {
				a.Started(inst)
			}
			if prepare {
				// A probe that must learn from a live server (a gRPC
				// method's types, by reflection) does so on the uncounted
				// warm-up instance, so a wrong method fails before
				// anything is measured.
				if err := prober.Prepare(ctx, inst, t, checker, c.Wait); err != nil {
					return fmt.Errorf("%s: %w", a.Name, err)
				}
			}
			return nil
		},
		// Read before a failed start is stopped: the prober's CPU is the
		// start's and the wait's.
		Waited: func(inst launch.Instance, r prober.Readiness) {
			s.ProberCPUMs = ms(selfCPU() - ru0)
			s.Attempts = r.Attempts
			s.Phases = append(inst.Phases(), r.Phases...)
		},
	})
	if inst != nil {
		defer func() {
			// Stop even when ctx is cancelled: a fresh context bounds the
			// stop (StartReady stopped a failed start already).
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			inst.Stop(sctx)
			if werr := prober.WaitFree(sctx, t, 5*time.Second); werr != nil && err == nil {
				err = werr
			}
		}()
	}
	if err != nil {
		return s, err
	}
	s.FirstRPCMs, s.ReadyAttemptMs = ms(r.FirstRPC), ms(r.ReadyAttempt)
	if r.TLS != nil {
		s.TLS = r.TLS.Record()
	}
	// Read the server's figures at once: they belong to the moment of first RPC.
	// A reading that fails stays nil (JSON null): missing, never a 0 that
	// would enter the medians.
	if cpu, err := procfs.Host.CPU(inst.PID()); err == nil {
		v := cpu.Seconds() * 1000
		s.StartupCPUMs = &v
	}
	if m, err := procfs.Host.Mem(inst.PID()); err == nil && m.Valid {
		rss, pss := m.RSS, m.PSS
		s.RSSBytes, s.PSSBytes = &rss, &pss
	}
	if u, err := inst.Usage(); err == nil && u.Cgroup != "" {
		c, p := u.CPUSeconds*1000, u.MemPeakBytes
		s.CgroupCPUMs, s.CgroupMemPeakBytes = &c, &p
	}
	s.GOMAXPROCSPredicted = lb.GOMAXPROCS()
	// A launcher that runs a process of its own first (criu restore) says
	// what that cost.
	if l, ok := inst.(interface{ LauncherCPU() time.Duration }); ok {
		s.LauncherCPUMs = ms(l.LauncherCPU())
	}
	if l, ok := inst.(interface{ Stats() map[string]float64 }); ok {
		s.LauncherStats = l.Stats()
	}
	if l, ok := inst.(interface{ Containment() string }); ok {
		s.Containment = l.Containment()
	}
	return s, nil
}

// selfCPU is this process's user+system CPU time so far (all threads).
func selfCPU() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
