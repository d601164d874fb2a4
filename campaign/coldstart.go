package campaign

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"golang.org/x/sys/unix"

	"github.com/coldstart-go/coldstart/budget"
	"github.com/coldstart-go/coldstart/internal/noise"
	"github.com/coldstart-go/coldstart/internal/procfs"
	"github.com/coldstart-go/coldstart/internal/progress"
	"github.com/coldstart-go/coldstart/internal/stats"
	"github.com/coldstart-go/coldstart/prober"
	results "github.com/coldstart-go/coldstart/record"
)

// ColdStart configures a cold-start campaign.
type ColdStart struct {
	Arms    []Arm
	Budgets []budget.Budget // nil = one unconstrained budget
	// Runs is the number of counted cold starts per arm and budget, after
	// one uncounted warm-up round.
	Runs      int
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
	// total is (Runs+1) × budgets × arms (nil = quiet). Log gets each
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
	// joined (false = the first failure ends the campaign).
	KeepGoing bool
	// Polls are platform readiness-poll intervals whose delay each summary
	// reports (nil = none); see Polled.
	Polls []PollInterval
}

// Noise is what else the machine did during one round of a campaign
// ("noise" records in results files).
type Noise struct {
	Scope string `json:"scope"`
	noise.Window
}

// Summary is one arm under one budget (record.Summary).
type Summary = results.Summary

// Run measures every arm under every budget: one warm-up round (run 0,
// recorded but not counted), then Runs rounds with the arms interleaved
// (A B C A B C ...). record gets every sample as soon as it is taken, so a
// results file keeps what was measured when the campaign is interrupted.
// A probe that fails ends the campaign with its error (its sample, with the
// error, is recorded first).
func (c ColdStart) Run(ctx context.Context, record func(prober.Sample) error) ([]Summary, error) {
	if c.Runs <= 0 {
		return nil, fmt.Errorf("runs: %d, want at least 1", c.Runs)
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
	prog.Start((c.Runs+1)*len(budgets)*len(c.Arms), "cold starts")
	defer prog.Done() // before the caller prints results or the error

	samples := map[key][]prober.Sample{}
	failed := map[string]error{}
	for run := 0; run <= c.Runs; run++ {
		snap, nerr := noise.Host.Take()
		for bi, b := range budgets {
			pcpus := c.ProberCPUs
			if pcpus == nil {
				pcpus = budget.Complement(all, b.CPUs)
			}
			if err := procfs.Host.PinSelf(pcpus); err != nil {
				return nil, fmt.Errorf("pin prober to CPUs %s: %w", budget.FormatCPUList(pcpus), err)
			}
			for _, a := range c.Arms {
				if failed[a.Name] != nil {
					continue
				}
				s, err := c.probeOnce(ctx, a, b, checker, all, run == 0)
				s.Run, s.Warmup = run, run == 0
				if rerr := record(s); rerr != nil {
					return nil, fmt.Errorf("record sample: %w", rerr)
				}
				prog.Step(fmt.Sprintf("run %d/%d  %-8s %-12s %s", run, c.Runs, a.Name, b, progressNote(s, err)))
				if err != nil {
					if !c.KeepGoing || ctx.Err() != nil {
						return nil, err
					}
					failed[a.Name] = err
					// Its probes under the budgets after this one in
					// this round, and in the rounds after, are not taken.
					prog.Skip((c.Runs-run)*len(budgets) + len(budgets) - 1 - bi)
					continue
				}
				if run > 0 {
					k := key{a.Name, b.String()}
					samples[k] = append(samples[k], s)
				}
			}
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
	}
	var out []Summary
	for _, b := range budgets {
		for _, a := range c.Arms {
			conf := c.Confidence
			if conf == 0 {
				conf = stats.DefaultConfidence
			}
			sum := results.SummarizeAt(samples[key{a.Name, b.String()}], conf)
			sum.Arm, sum.Budget, sum.SizeBytes, sum.Probe = a.Name, b.String(), a.SizeBytes, checker.Name()
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
	var errs []error
	for _, a := range c.Arms {
		errs = append(errs, failed[a.Name])
	}
	return out, errors.Join(errs...)
}

type key struct{ arm, budget string }

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
	inst, err := a.Instance(ctx, t, lb, c.Log)
	if err != nil {
		return s, err
	}
	if a.Started != nil {
		a.Started(inst)
	}
	defer func() {
		// Stop even when ctx is cancelled: a fresh context bounds the stop.
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		inst.Stop(sctx)
		if werr := prober.WaitFree(sctx, t, 5*time.Second); werr != nil && err == nil {
			err = werr
		}
	}()
	if prepare {
		// A probe that must learn from a live server (a gRPC method's
		// types, by reflection) does so on the uncounted warm-up
		// instance, so a wrong method fails before anything is measured.
		if err := prober.Prepare(ctx, inst, t, checker, c.Wait); err != nil {
			return s, fmt.Errorf("%s: %w", a.Name, err)
		}
	}
	r, werr := prober.WaitReady(ctx, inst, t, checker, c.Wait)
	s.ProberCPUMs = ms(selfCPU() - ru0)
	s.Attempts = r.Attempts
	s.Phases = append(inst.Phases(), r.Phases...)
	if werr != nil {
		if errors.Is(werr, prober.ErrNotReady) {
			return s, fmt.Errorf("%s: %w", a.Name, werr)
		}
		return s, werr
	}
	s.FirstRPCMs, s.ReadyAttemptMs = ms(r.FirstRPC), ms(r.ReadyAttempt)
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
