package record

import (
	"sort"

	"gonum.org/v1/gonum/stat"
)

// Summary is one arm under one budget: the figures of its counted runs.
type Summary struct {
	Arm    string `json:"arm"`
	Budget string `json:"budget"`
	Runs   int    `json:"runs"`
	// Spawn to first ready RPC, milliseconds.
	MedianMs float64 `json:"median_ms"`
	P90Ms    float64 `json:"p90_ms"`
	MinMs    float64 `json:"min_ms"`
	MaxMs    float64 `json:"max_ms"`
	// Medians of the phases, milliseconds from t0.
	StartedMs   float64 `json:"started_ms" render:"-"`
	AcceptingMs float64 `json:"accepting_ms" render:"-"`
	// Medians of the server's figures at first RPC.
	StartupCPUMs float64 `json:"startup_cpu_ms"`
	RSSBytes     int64   `json:"rss_bytes" render:"bytes"`
	PSSBytes     int64   `json:"pss_bytes" render:"bytes"`
	SizeBytes    int64   `json:"size_bytes" render:"bytes"`
	// Medians of what the budget's cgroup reports (0 without one), and the
	// GOMAXPROCS Go picks under the budget.
	CgroupCPUMs        float64 `json:"cgroup_cpu_ms"`
	CgroupMemPeakBytes int64   `json:"cgroup_mem_peak_bytes" render:"bytes"`
	GOMAXPROCS         int     `json:"gomaxprocs_predicted"`
	// Median of the prober's own CPU per probe, and where it ran.
	ProberCPUMs float64 `json:"prober_cpu_ms"`
	// LauncherCPUMs is the median CPU of the launcher's own process (criu
	// restore), beside the server's StartupCPUMs (0 for other launchers).
	LauncherCPUMs float64 `json:"launcher_cpu_ms,omitempty"`
	ProberCPUs    string  `json:"prober_cpus"`
	Probe         string  `json:"probe"`
	// PhasesMs holds the median of every phase seen, launcher phases
	// included (runc: bundle_ready, created).
	PhasesMs map[string]float64 `json:"phases_ms"`
	// PageCache is "cold" when the arm's files were evicted from the page
	// cache before every start ("" = left warm).
	PageCache string `json:"page_cache,omitempty"`
}

// Summarize reduces counted samples to medians and a range. Samples with
// an error are left out.
func Summarize(ss []Sample) Summary {
	var sum Summary
	var first, cpu, rss, pss, pcpu, cgcpu, cgmem, lcpu []float64
	phases := map[string][]float64{}
	for _, s := range ss {
		if s.Error != "" || s.Warmup {
			continue
		}
		first = append(first, s.FirstRPCMs)
		cpu = append(cpu, s.StartupCPUMs)
		rss = append(rss, float64(s.RSSBytes))
		pss = append(pss, float64(s.PSSBytes))
		pcpu = append(pcpu, s.ProberCPUMs)
		cgcpu = append(cgcpu, s.CgroupCPUMs)
		cgmem = append(cgmem, float64(s.CgroupMemPeakBytes))
		lcpu = append(lcpu, s.LauncherCPUMs)
		sum.GOMAXPROCS = s.GOMAXPROCSPredicted
		for _, p := range s.Phases {
			phases[p.Name] = append(phases[p.Name], p.Ms)
		}
	}
	sum.Runs, sum.PhasesMs = len(first), map[string]float64{}
	if len(first) == 0 {
		return sum
	}
	q := Quantiles(first, 0.5, 0.9, 0, 1)
	sum.MedianMs, sum.P90Ms, sum.MinMs, sum.MaxMs = q[0], q[1], q[2], q[3]
	sum.StartupCPUMs = Quantiles(cpu, 0.5)[0]
	sum.RSSBytes = int64(Quantiles(rss, 0.5)[0])
	sum.PSSBytes = int64(Quantiles(pss, 0.5)[0])
	sum.ProberCPUMs = Quantiles(pcpu, 0.5)[0]
	sum.CgroupCPUMs = Quantiles(cgcpu, 0.5)[0]
	sum.CgroupMemPeakBytes = int64(Quantiles(cgmem, 0.5)[0])
	sum.LauncherCPUMs = Quantiles(lcpu, 0.5)[0]
	for name, xs := range phases {
		sum.PhasesMs[name] = Quantiles(xs, 0.5)[0]
	}
	sum.StartedMs = sum.PhasesMs[PhaseStarted]
	sum.AcceptingMs = sum.PhasesMs[PhaseAccepting]
	return sum
}

// Quantiles returns the p-quantiles of xs (empirical, no interpolation).
func Quantiles(xs []float64, ps ...float64) []float64 {
	out := make([]float64, len(ps))
	if len(xs) == 0 {
		return out
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	for i, p := range ps {
		out[i] = stat.Quantile(p, stat.Empirical, s, nil)
	}
	return out
}
