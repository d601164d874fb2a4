package record

import (
	"sort"

	"gonum.org/v1/gonum/stat"

	"github.com/coldstart-go/coldstart/internal/stats"
)

// Summary is one arm under one budget: the figures of its counted runs.
type Summary struct {
	Arm    string `json:"arm"`
	Budget string `json:"budget"`
	Runs   int    `json:"runs"`
	// N is the number of counted runs (Runs), under the key every
	// summary row shares.
	N int `json:"n" render:"-"`
	// Spawn to first ready RPC, milliseconds: the median with its
	// distribution-free interval at Confidence (nil: too few runs for one,
	// fewer than 6 at 95%).
	MedianMs       float64  `json:"median_ms"`
	MedianCILowMs  *float64 `json:"median_ci_low_ms"`
	MedianCIHighMs *float64 `json:"median_ci_high_ms"`
	Confidence     float64  `json:"confidence" render:"-"`
	P90Ms          float64  `json:"p90_ms"`
	MinMs          float64  `json:"min_ms"`
	MaxMs          float64  `json:"max_ms"`
	// Medians of the phases, milliseconds from t0.
	StartedMs   float64 `json:"started_ms" render:"-"`
	AcceptingMs float64 `json:"accepting_ms" render:"-"`
	// Medians of the server's figures at first RPC, over the runs whose
	// reading succeeded (nil when none did); Missing counts the counted
	// runs that lacked one of them.
	StartupCPUMs *float64 `json:"startup_cpu_ms"`
	RSSBytes     *int64   `json:"rss_bytes" render:"bytes"`
	PSSBytes     *int64   `json:"pss_bytes" render:"bytes"`
	Missing      int      `json:"missing"`
	SizeBytes    int64    `json:"size_bytes" render:"bytes"`
	// Medians of what the budget's cgroup reports (nil without one), and
	// the GOMAXPROCS Go picks under the budget.
	CgroupCPUMs        *float64 `json:"cgroup_cpu_ms"`
	CgroupMemPeakBytes *int64   `json:"cgroup_mem_peak_bytes" render:"bytes"`
	GOMAXPROCS         int      `json:"gomaxprocs_predicted"`
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
	// TLSHandshakeMs is the median of the ready probes' TLS handshakes,
	// ClientHello to complete (nil over plaintext).
	TLSHandshakeMs *float64 `json:"tls_handshake_ms,omitempty"`
	// PageCache is "cold" when the arm's files were evicted from the page
	// cache before every start ("" = left warm).
	PageCache string `json:"page_cache,omitempty"`
	// Polls is when a platform polling readiness at each interval would
	// first have seen the server ready (coldstart run --poll-interval).
	Polls []Poll `json:"polls,omitempty" render:"-"`
	// VsBaseline sets the median against the baseline arm's under the
	// same budget (CompareToBaseline); a variant's, against its own arm's.
	VsBaseline
	// Variant is what makes the arm a variant (zero for any other).
	Variant
}

// Summarize reduces counted samples to medians and a range, at 95%
// confidence (SummarizeAt).
func Summarize(ss []Sample) Summary { return SummarizeAt(ss, stats.DefaultConfidence) }

// SummarizeAt reduces counted samples to medians and a range, the
// spawn-to-first-RPC median with its interval at the confidence level.
// Samples with an error, and warm-up samples, are left out. A reading that
// failed (nil) is left out of its median, never counted as 0; Missing
// counts the runs that lacked the server's CPU or memory.
func SummarizeAt(ss []Sample, confidence float64) Summary {
	sum := Summary{Confidence: confidence}
	var first, cpu, rss, pss, pcpu, cgcpu, cgmem, lcpu, hs []float64
	phases := map[string][]float64{}
	for _, s := range ss {
		if s.Error != "" || s.Warmup {
			continue
		}
		first = append(first, s.FirstRPCMs)
		if s.StartupCPUMs == nil || s.RSSBytes == nil || s.PSSBytes == nil {
			sum.Missing++
		}
		cpu = appendF(cpu, s.StartupCPUMs)
		rss = appendI(rss, s.RSSBytes)
		pss = appendI(pss, s.PSSBytes)
		pcpu = append(pcpu, s.ProberCPUMs)
		cgcpu = appendF(cgcpu, s.CgroupCPUMs)
		cgmem = appendI(cgmem, s.CgroupMemPeakBytes)
		lcpu = append(lcpu, s.LauncherCPUMs)
		sum.GOMAXPROCS = s.GOMAXPROCSPredicted
		if s.TLS != nil {
			hs = append(hs, s.TLS.Ms)
		}
		for _, p := range s.Phases {
			phases[p.Name] = append(phases[p.Name], p.Ms)
		}
	}
	sum.Runs, sum.N, sum.PhasesMs = len(first), len(first), map[string]float64{}
	if len(first) == 0 {
		return sum
	}
	m := stats.MedianCI(first, confidence)
	sum.MedianMs = m.Value
	if m.Finite() {
		lo, hi := m.Low, m.High
		sum.MedianCILowMs, sum.MedianCIHighMs = &lo, &hi
	}
	q := Quantiles(first, 0.9, 0, 1)
	sum.P90Ms, sum.MinMs, sum.MaxMs = q[0], q[1], q[2]
	sum.StartupCPUMs = medianF(cpu, confidence)
	sum.RSSBytes = medianI(rss, confidence)
	sum.PSSBytes = medianI(pss, confidence)
	sum.ProberCPUMs = stats.MedianCI(pcpu, confidence).Value
	sum.CgroupCPUMs = medianF(cgcpu, confidence)
	sum.CgroupMemPeakBytes = medianI(cgmem, confidence)
	sum.LauncherCPUMs = Quantiles(lcpu, 0.5)[0]
	sum.TLSHandshakeMs = medianF(hs, confidence)
	for name, xs := range phases {
		sum.PhasesMs[name] = stats.MedianCI(xs, confidence).Value
	}
	sum.StartedMs = sum.PhasesMs[PhaseStarted]
	sum.AcceptingMs = sum.PhasesMs[PhaseAccepting]
	return sum
}

func appendF(xs []float64, v *float64) []float64 {
	if v == nil {
		return xs
	}
	return append(xs, *v)
}

func appendI(xs []float64, v *int64) []float64 {
	if v == nil {
		return xs
	}
	return append(xs, float64(*v))
}

func medianF(xs []float64, confidence float64) *float64 {
	if len(xs) == 0 {
		return nil
	}
	v := stats.MedianCI(xs, confidence).Value
	return &v
}

func medianI(xs []float64, confidence float64) *int64 {
	if len(xs) == 0 {
		return nil
	}
	v := int64(stats.MedianCI(xs, confidence).Value)
	return &v
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
