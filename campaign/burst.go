package campaign

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coldstart-go/coldstart/budget"
	"github.com/coldstart-go/coldstart/internal/procfs"
	"github.com/coldstart-go/coldstart/internal/progress"
	"github.com/coldstart-go/coldstart/launch"
	"github.com/coldstart-go/coldstart/prober"
	"github.com/coldstart-go/coldstart/record"
)

// Burst configures a burst campaign: for each size N, N instances of an
// arm started at the same instant inside one shared budget (a
// budget.Group: the budget's quota, CPU set and memory limit on one
// parent cgroup, as a node's allocatable, each instance in a child cgroup
// of its own), each probed from its own goroutine on its own fresh
// channel.
//
// Round 0 is a warm-up of one instance (N=1) per arm and budget, recorded
// but not counted; under a budget with a memory limit its group's memory
// peak sizes the bursts, and one that would not fit ends the campaign
// before any counted burst (record.FitError). Then Runs rounds, each
// running, per budget, every size in order and, per size, every arm in an
// order that rotates from round to round: an arm's bursts pair by round
// with the baseline's at the same size and with its own at N=1, as the
// cold-start campaign's samples do.
type Burst struct {
	Arms    []Arm
	Budgets []budget.Budget // nil = one unconstrained budget
	// Sizes are the burst sizes N (BurstSizes parses and orders them;
	// 1 must be among them: every size is compared with it).
	Sizes     []int
	Runs      int
	Transport Transport
	// Checker decides readiness (nil = grpc.health.v1 Check). Wait's Gap
	// (0 = 200 µs) is each instance's pause after a failed attempt times
	// N, so that N probers together poll about as often as one.
	Checker prober.Checker
	Wait    prober.WaitOptions
	// ProberCPUs pins the prober (nil = the CPUs outside each budget's
	// CPU set, or all when it has none).
	ProberCPUs []int
	// Progress gets a line (or a live bar) per burst; Log each spawned
	// command line.
	Progress io.Writer
	Log      io.Writer
}

// BurstSizes parses a list of burst sizes ("1,2,4,8"): whole numbers of
// at least 1, returned in ascending order without repeats and with 1
// added when missing (every size is compared with N=1).
func BurstSizes(list string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(list, ",") {
		f = strings.TrimSpace(f)
		n, err := strconv.Atoi(f)
		switch {
		case err != nil:
			return nil, fmt.Errorf("%q is not a whole number: want a list of instance counts, e.g. 1,2,4,8", f)
		case n < 1:
			return nil, fmt.Errorf("%d, want at least 1 instance per burst", n)
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	if !slices.Contains(out, 1) {
		out = append(out, 1)
	}
	sort.Ints(out)
	return out, nil
}

// BurstArms splits arms into those a burst can start and, for the others,
// why not: a restored snapshot listens at its checkpoint's one address,
// where N copies cannot be probed apart, and the docker and podman
// launchers do not take a shared cgroup.
func BurstArms(arms []Arm) (ok []Arm, not []error) {
	for _, a := range arms {
		switch a.Launcher.(type) {
		case *launch.Checkpoint:
			not = append(not, fmt.Errorf("%s arm: its restored copies all listen at the checkpoint's address, "+
				"where one cannot be probed apart from the others", a.Name))
			continue
		case *launch.Engine:
			not = append(not, fmt.Errorf("%s arm: a %s container does not join a burst's shared cgroup; use --runtime runc",
				a.Name, a.Launcher.(*launch.Engine).Name))
			continue
		}
		if a.Target.Address != "" {
			not = append(not, fmt.Errorf("%s arm: it listens at the fixed address %s, where one instance of a burst "+
				"cannot be probed apart from the others", a.Name, a.Target))
			continue
		}
		ok = append(ok, a)
	}
	return ok, not
}

// Run measures every arm at every size under every budget. onRecord gets
// each instance (record.BurstInstanceKind) and each burst
// (record.BurstKind) as soon as it is taken; Run returns every burst,
// warm-up included. An instance that fails ends the campaign with its
// error, its burst recorded first; every instance of every burst is
// stopped and its cgroup removed, on failure and interrupt too.
func (c Burst) Run(ctx context.Context, onRecord func(kind string, v any) error) ([]record.Burst, error) {
	switch {
	case c.Runs <= 0:
		return nil, fmt.Errorf("runs: %d, want at least 1", c.Runs)
	case len(c.Arms) == 0:
		return nil, errors.New("no arms to measure")
	case !slices.Contains(c.Sizes, 1):
		return nil, fmt.Errorf("burst sizes %v: want 1 among them", c.Sizes)
	}
	if _, not := BurstArms(c.Arms); len(not) > 0 {
		return nil, errors.Join(not...)
	}
	checker := c.Checker
	if checker == nil {
		checker = prober.Health{}
	}
	if h, ok := checker.(*prober.HTTP); ok && h.Fixed.Address != "" {
		return nil, fmt.Errorf("the probe names the fixed address %s: a burst's instances each need one of their own", h.Fixed)
	}
	budgets := c.Budgets
	if len(budgets) == 0 {
		budgets = []budget.Budget{{}}
	}
	all, err := budget.AllowedCPUs()
	if err != nil {
		return nil, err
	}
	defer procfs.Host.PinSelf(all)

	prog := progress.For(c.Progress)
	prog.Start(len(budgets)*len(c.Arms)*(1+c.Runs*len(c.Sizes)), "bursts")
	defer prog.Done()

	var out []record.Burst
	// one is each arm's group memory peak at N=1 under each budget, from
	// the warm-up: what the bursts under a memory limit are sized by.
	one := map[[2]string]int64{}
	for run := 0; run <= c.Runs; run++ {
		sizes := c.Sizes
		if run == 0 {
			sizes = []int{1}
		}
		for _, b := range budgets {
			pcpus := c.ProberCPUs
			if pcpus == nil {
				pcpus = budget.Complement(all, b.CPUs)
			}
			if err := procfs.Host.PinSelf(pcpus); err != nil {
				return out, fmt.Errorf("pin prober to CPUs %s: %w", budget.FormatCPUList(pcpus), err)
			}
			for ni, n := range sizes {
				for ai := range c.Arms {
					a := c.Arms[(ai+run+ni)%len(c.Arms)]
					res, err := c.burstOnce(ctx, a, b, n, run, checker, all, onRecord)
					out = append(out, res)
					if rerr := onRecord(record.BurstKind, res); rerr != nil && err == nil {
						err = fmt.Errorf("record burst: %w", rerr)
					}
					prog.Step(fmt.Sprintf("run %d/%d  N=%-3d %-8s %-12s %s", run, c.Runs, n, a.Name, b, burstNote(res, err)))
					if err != nil {
						return out, err
					}
					if run == 0 && res.GroupMemPeakBytes != nil {
						one[[2]string{a.Name, b.String()}] = *res.GroupMemPeakBytes
					}
				}
			}
		}
		if run == 0 {
			if err := c.fits(budgets, one); err != nil {
				return out, err
			}
		}
	}
	return out, nil
}

// fits checks, after the warm-up, that the largest burst of every arm
// fits every budget's memory limit by its one instance's group peak.
func (c Burst) fits(budgets []budget.Budget, one map[[2]string]int64) error {
	largest := slices.Max(c.Sizes)
	var errs []error
	for _, b := range budgets {
		if b.MemBytes == 0 {
			continue
		}
		for _, a := range c.Arms {
			peak := one[[2]string{a.Name, b.String()}]
			if record.BurstFit(b.MemBytes, peak) < largest {
				errs = append(errs, record.FitError(a.Name, b.String(), largest, b.MemBytes, peak))
			}
		}
	}
	return errors.Join(errs...)
}

func burstNote(b record.Burst, err error) string {
	if err != nil {
		return "error: " + firstLine(err.Error())
	}
	w := ""
	if b.Warmup {
		w = " (warm-up, not counted)"
	}
	return fmt.Sprintf("p50 %7.2f ms  all serve %7.2f ms%s", b.P50Ms, b.AllReadyMs, w)
}

// member is one instance of a burst as its goroutine leaves it.
type member struct {
	t       prober.Target
	cleanup func() // removes what t needed (a socket directory)
	inst    launch.Instance
	r       prober.Readiness
	err     error
	rec     record.BurstInstance
}

// burstOnce starts n instances of a in one group for b at the same
// instant, probes each from its own goroutine until all answer or one
// fails (launch.StartReady stops the one that failed, and those the
// failure cancelled, as they end), reads the group's figures, and stops
// them all.
func (c Burst) burstOnce(ctx context.Context, a Arm, b budget.Budget, n, run int, checker prober.Checker, all []int, onRecord func(string, any) error) (res record.Burst, err error) {
	res = record.Burst{Arm: a.Name, Budget: b.String(), N: n, Run: run, Warmup: run == 0}
	defer func() {
		if err != nil && res.Error == "" {
			res.Error = err.Error()
		}
	}()
	wait := c.Wait
	if wait.Gap == 0 {
		wait.Gap = 200 * time.Microsecond
	}
	wait.Gap *= time.Duration(n)
	res.ProbeGapMs = ms(wait.Gap)

	g, err := b.Group(budget.NewID())
	if err != nil {
		return res, fmt.Errorf("%s: %w", a.Name, err)
	}
	res.Group = g.Cgroup()
	// A child inherits the CPU mask of the thread that forks it: with the
	// prober pinned, a group without a CPU set must name all CPUs.
	mb := g.Member()
	if len(mb.CPUs) == 0 {
		mb.CPUs = all
	}
	members := make([]*member, n)
	defer func() {
		// Stop every instance, even when ctx is cancelled, then the group.
		if serr := c.stopAll(members, g); serr != nil && err == nil {
			err = serr
		}
	}()
	for i := range members {
		t, cleanup, err := newTarget(c.Transport, prober.Target{}, checker)
		if err != nil {
			return res, err
		}
		members[i] = &member{t: t, cleanup: cleanup}
		if err := prober.EnsureFree(ctx, t); err != nil {
			return res, fmt.Errorf("%s: %w", a.Name, err)
		}
		if err := a.prepare(ctx, t); err != nil {
			return res, err
		}
	}
	bctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		gate    = make(chan struct{})
		wg      sync.WaitGroup
		started sync.Mutex // a.Started is told of one instance at a time
	)
	for i, m := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			inst, r, err := a.startReady(bctx, m.t, mb, g, c.Log, launch.ReadyOptions{
				Checker: checker, Wait: wait, Name: fmt.Sprintf("%s instance %d of %d", a.Name, i+1, n),
				Launched: func(inst launch.Instance) error {
					if a.Started != nil {
						started.Lock()
						a.Started(inst)
						started.Unlock()
					}
					if run == 0 && i == 0 {
						// As the cold-start campaign's warm-up: a probe that
						// learns from a live server does so here.
						if err := prober.Prepare(bctx, inst, m.t, checker, wait); err != nil {
							return fmt.Errorf("%s: %w", a.Name, err)
						}
					}
					return nil
				},
			})
			m.inst, m.r, m.err = inst, r, err
			if err != nil {
				cancel() // the burst has failed: the others need not finish
				return
			}
			m.rec.FirstRPCMs = msOf(m.r.FirstRPC)
			// Its own figures at its first RPC, as a single start's.
			if cpu, err := procfs.Host.CPU(inst.PID()); err == nil {
				v := cpu.Seconds() * 1000
				m.rec.StartupCPUMs = &v
			}
			if mem, err := procfs.Host.Mem(inst.PID()); err == nil && mem.Valid {
				pss := mem.PSS
				m.rec.PSSBytes = &pss
			}
		}()
	}
	close(gate)
	wg.Wait()
	// The group's figures belong to the moment the last one served.
	if u, uerr := g.Usage(); uerr == nil && u.Cgroup != "" {
		cpu, thr, peak := u.CPUSeconds*1000, u.ThrottledSeconds*1000, u.MemPeakBytes
		res.GroupCPUMs, res.GroupThrottledMs, res.GroupMemPeakBytes = &cpu, &thr, &peak
	}
	err = c.collect(ctx, &res, a, b, members, g, onRecord)
	return res, err
}

// collect fills res from the members, records each, and returns the
// burst's error: the first instance's that is not a cancellation the
// burst itself made, named as the group's memory limit's when that was
// met.
func (c Burst) collect(ctx context.Context, res *record.Burst, a Arm, b budget.Budget, ms []*member, g *budget.Group, onRecord func(string, any) error) error {
	var first time.Time
	for _, m := range ms {
		if m.inst != nil && (first.IsZero() || m.inst.T0().Before(first)) {
			first = m.inst.T0()
		}
	}
	var firstErr, cancelled error
	var times, last []float64
	for i, m := range ms {
		m.rec.Arm, m.rec.Budget, m.rec.N, m.rec.Run, m.rec.Warmup, m.rec.Instance = res.Arm, res.Budget, res.N, res.Run, res.Warmup, i+1
		if m.inst != nil {
			m.rec.PID = m.inst.PID()
			m.rec.SpawnMs = msOf(m.inst.T0().Sub(first))
			m.rec.Phases = append(m.inst.Phases(), m.r.Phases...)
			m.rec.Attempts = m.r.Attempts
			if l, ok := m.inst.(interface{ Containment() string }); ok {
				m.rec.Containment = l.Containment()
			}
			res.SpawnSpreadMs = max(res.SpawnSpreadMs, m.rec.SpawnMs)
		}
		if m.err == nil && m.inst != nil {
			m.rec.ReadyMs = msOf(m.inst.T0().Add(m.r.FirstRPC).Sub(first))
			times, last = append(times, m.rec.FirstRPCMs), append(last, m.rec.ReadyMs)
		} else {
			err := m.err
			if err == nil {
				err = errors.New("not started")
			}
			m.rec.Error = err.Error()
			res.Failed++
			if errors.Is(err, context.Canceled) && ctx.Err() == nil {
				cancelled = err // the burst's own cancel, after another failed
			} else if firstErr == nil {
				firstErr = err
			}
		}
		if err := onRecord(record.BurstInstanceKind, m.rec); err != nil && firstErr == nil {
			firstErr = fmt.Errorf("record burst instance: %w", err)
		}
	}
	if firstErr == nil {
		firstErr = cancelled
	}
	if firstErr != nil {
		if g.LimitHit() {
			return fmt.Errorf("%s: %d instances together met the group's memory limit mem=%s (%w): %w",
				a.Name, len(ms), budget.FormatSize(b.MemBytes), budget.ErrMemoryLimit, firstErr)
		}
		return firstErr
	}
	q := record.Quantiles(times, 0.95, 0.99, 1)
	res.P50Ms, res.P95Ms, res.P99Ms, res.MaxMs = median(times), q[0], q[1], q[2]
	res.AllReadyMs = slices.Max(last)
	return nil
}

// stopAll stops every instance at once (each Stop takes up to its grace
// period), waits until their addresses are free and removes what they
// needed, and closes the group.
func (c Burst) stopAll(ms []*member, g *budget.Group) error {
	sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, len(ms))
	for i, m := range ms {
		if m == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer m.cleanup()
			if m.inst != nil {
				m.inst.Stop(sctx)
				errs[i] = prober.WaitFree(sctx, m.t, 5*time.Second)
			}
		}()
	}
	wg.Wait()
	if err := g.Close(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func msOf(d time.Duration) float64 { return ms(d) }

// median is the median of xs (0 for none).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
