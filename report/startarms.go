package report

import (
	"fmt"
	"sort"

	"github.com/coldstart-go/coldstart/record"
)

// Checkpoint is the snapshot arm's checkpoint, as campaign records it.
type Checkpoint = record.Checkpoint

// hasStartArms reports whether c measured a prebound or snapshot arm.
func (c *Campaign) hasStartArms() bool {
	for _, s := range c.Summaries {
		if record.IsStartArm(s.Arm) {
			return true
		}
	}
	return false
}

// startArmsSection writes "Start without starting": for each campaign with
// a prebound or snapshot arm, the prebound arm's time in the backlog and the
// snapshot arm's restore, each beside the arm they start (the base) under
// the same budget.
func (r *Report) startArmsSection(m *mdw) {
	hasKdat := func(c *Campaign) bool { return len(c.Kdat) > 0 }
	if !r.has((*Campaign).hasStartArms) && !r.has(hasKdat) {
		return
	}
	m.p("## Start without starting: prebound socket and snapshot restore\n\n")
	m.p("*prebound*: coldstart binds the listening socket and starts the server with it as fd 3 " +
		"(socket activation: `LISTEN_FDS=1`, `LISTEN_PID=1` in a new PID namespace); the first connection waits in the " +
		"kernel's accept queue until the server accepts. *backlog wait* is `server_accepted − queued` (read from the " +
		"listener's accept-queue length), its share is of spawn → first RPC. *snapshot*: the base build, started once, " +
		"warmed, dumped by CRIU to a tmpfs; each cold start is `criu restore` (the spawn is criu's) → first RPC over a fresh " +
		"connection; *restore CPU* is criu's own CPU plus the restored server's at first RPC.\n\n")
	for _, c := range r.Campaigns {
		if !c.hasStartArms() {
			continue
		}
		r.heading(m, c, "coldstart")
		base := "default"
		if len(c.Checkpoints) > 0 && c.Checkpoints[0].Base != "" {
			base = c.Checkpoints[0].Base
		}
		baseMedian := map[string]float64{}
		for _, s := range c.Summaries {
			if s.Arm == base {
				baseMedian[s.Budget] = s.MedianMs
			}
		}
		var pre, snap [][]string
		for _, s := range sortedSummaries(c.Summaries) {
			vs := ""
			if b, ok := baseMedian[s.Budget]; ok && b > 0 {
				vs = fmt.Sprintf("%s ms (×%.2f)", num(b), s.MedianMs/b)
			}
			samples := countedSamples(c, s.Arm, s.Budget)
			switch s.Arm {
			case record.PreboundArm:
				wait, share := backlog(samples)
				pre = append(pre, []string{s.Arm, s.Budget, fmt.Sprint(s.Runs), num(s.MedianMs),
					num(s.MinMs) + "–" + num(s.MaxMs), vs, msOrEmpty(wait), sharePct(share)})
			case record.SnapshotArm:
				criuRestore := median(samples, func(x Sample) (float64, bool) {
					v, ok := x.LauncherStats["restore_time_ms"]
					return v, ok
				})
				restoreCPU := median(samples, func(x Sample) (float64, bool) {
					// A run whose server CPU could not be read is left out.
					if x.StartupCPUMs == nil {
						return 0, false
					}
					return x.LauncherCPUMs + *x.StartupCPUMs, true
				})
				snap = append(snap, []string{s.Arm, s.Budget, fmt.Sprint(s.Runs), num(s.MedianMs),
					num(s.MinMs) + "–" + num(s.MaxMs), vs, msOrEmpty(s.PhasesMs[record.PhaseProcessRestored]),
					msOrEmpty(criuRestore), msOrEmpty(restoreCPU), mibOrDashP(s.PSSBytes)})
			}
		}
		if len(pre) > 0 {
			m.table([]string{"arm", "budget", "runs", "median ms", "range ms", base + " median (ratio)", "backlog wait ms", "backlog share"}, pre)
		}
		if len(snap) > 0 {
			m.table([]string{"arm", "budget", "runs", "median ms", "range ms", base + " median (ratio)", "criu restore returned ms", "criu's restore time ms", "restore CPU ms", "PSS at first RPC"}, snap)
		}
		for _, ck := range c.Checkpoints {
			kdat := "criu could not keep its kernel-feature cache (/run is not a tmpfs): every restore probed the kernel again"
			if ck.KdatCache {
				kdat = "criu kept its kernel-feature cache on the /run tmpfs"
			}
			m.p("Checkpoint of %s: %s on tmpfs, dumped in %.0f ms after %d warm-up calls (criu %s, %v; frozen %.0f ms, %.0f pages written); %s.\n\n",
				ck.Base, mibOrEmpty(ck.Bytes), ck.DumpMs, ck.Warmup, orUnknown(ck.CRIUVersion), ck.Env,
				ck.Stats["frozen_time_ms"], ck.Stats["memory_pages_written"], kdat)
		}
		m.p("%s\n\n", provenanceLine(c))
	}
	for _, c := range r.Campaigns {
		if len(c.Kdat) == 0 {
			continue
		}
		m.p("### CRIU's kernel-feature cache — %s\n\n", c.Label)
		m.p("`criu restore` of the same checkpoint, alternating, in private mount namespaces whose `/run` is a tmpfs " +
			"(criu loads `/run/criu.kdat`) or not (criu probes the kernel every run); wrapper start → criu's exit.\n\n")
		var rows [][]string
		for _, k := range c.Kdat {
			saved := ""
			if k.SavedVsNoneMs != 0 {
				saved = num(k.SavedVsNoneMs)
			}
			rows = append(rows, []string{k.Mode, fmt.Sprint(k.Runs), num(k.MedianMs),
				num(k.MinMs) + "–" + num(k.MaxMs), num(k.MedianCRIUMs), fmt.Sprintf("%d/%d", k.CacheLoadedRuns, k.Runs), saved})
		}
		m.table([]string{"kdat cache", "runs", "median ms", "range ms", "criu's restore time ms", "cache loaded", "saved ms (median)"}, rows)
		m.p("%s\n\n", provenanceLine(c))
	}
}

// countedSamples are c's counted, successful samples of one arm and budget.
func countedSamples(c *Campaign, arm, budget string) []Sample {
	var out []Sample
	for _, s := range c.Samples {
		if s.Arm == arm && s.Budget == budget && !s.Warmup && s.Error == "" {
			out = append(out, s)
		}
	}
	return out
}

// backlog is the median time the first connection waited in the accept
// queue, and the median of that wait's share of spawn → first RPC.
func backlog(ss []Sample) (waitMs, share float64) {
	waitMs = median(ss, func(s Sample) (float64, bool) {
		q, ok1 := s.Phase(record.PhaseQueued)
		a, ok2 := s.Phase(record.PhaseServerAccepted)
		return a - q, ok1 && ok2
	})
	share = median(ss, func(s Sample) (float64, bool) {
		q, ok1 := s.Phase(record.PhaseQueued)
		a, ok2 := s.Phase(record.PhaseServerAccepted)
		return (a - q) / s.FirstRPCMs, ok1 && ok2 && s.FirstRPCMs > 0
	})
	return waitMs, share
}

// median of f over the samples where it is defined (0 when none).
func median(ss []Sample, f func(Sample) (float64, bool)) float64 {
	var xs []float64
	for _, s := range ss {
		if v, ok := f(s); ok {
			xs = append(xs, v)
		}
	}
	if len(xs) == 0 {
		return 0
	}
	sort.Float64s(xs)
	if len(xs)%2 == 1 {
		return xs[len(xs)/2]
	}
	return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
}

func sharePct(f float64) string {
	if f == 0 {
		return ""
	}
	return fmt.Sprintf("%.0f%%", 100*f)
}

// num prints milliseconds with three significant digits, whole numbers
// from 100 on (1003, not 1e+03).
func num(v float64) string {
	if v >= 100 || v <= -100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.3g", v)
}
