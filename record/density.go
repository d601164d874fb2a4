package record

import (
	"slices"

	"github.com/coldstart-go/coldstart/internal/stats"
)

// DensityRow is one arm's memory with Instances idle instances running.
// PSS divides shared pages among the processes sharing them, so it is what
// one more instance really costs; RSS counts shared pages in full.
type DensityRow struct {
	Arm       string `json:"arm"`
	Budget    string `json:"budget"`
	Instances int    `json:"instances"`
	// N is the number of instances read (a failed read ends the
	// measurement with an error, so nothing is missing).
	N int `json:"n" render:"-"`
	// Per instance: the median over the instances; PSS with its interval
	// at 95% (nil below 6 instances).
	PSSBytes       int64  `json:"pss_bytes" render:"bytes"`
	PSSCILowBytes  *int64 `json:"pss_ci_low_bytes" render:"-"`
	PSSCIHighBytes *int64 `json:"pss_ci_high_bytes" render:"-"`
	PSSAnonBytes   int64  `json:"pss_anon_bytes" render:"bytes"`
	RSSBytes       int64  `json:"rss_bytes" render:"bytes"`
	// Sums over all instances.
	TotalPSSBytes int64 `json:"total_pss_bytes" render:"bytes"`
	TotalRSSBytes int64 `json:"total_rss_bytes" render:"bytes"`
	SizeBytes     int64 `json:"size_bytes" render:"bytes"`
	// VsBaseline sets PSS per instance against the baseline arm's under
	// the same budget (CompareDensity): lower or higher, as memory is
	// neither faster nor slower. A variant's is against its own arm's.
	VsBaseline
	// Variant is what makes the arm a variant (zero for any other).
	Variant
}

// DensitySample is one instance's memory, a raw row.
type DensitySample struct {
	Arm          string `json:"arm"`
	Budget       string `json:"budget"`
	Instance     int    `json:"instance"`
	PID          int    `json:"pid"`
	RSSBytes     int64  `json:"rss_bytes"`
	PSSBytes     int64  `json:"pss_bytes"`
	PSSAnonBytes int64  `json:"pss_anon_bytes"`
}

// CompareDensity fills each row's VsBaseline on idle PSS per instance:
// every arm's instances (samples, one per instance) against the
// baseline's under the same budget, the baseline chosen by ChooseBaseline
// over the rows' arms in order, a variant's its own arm (Baselines). It
// returns the baseline chosen.
func CompareDensity(rows []DensityRow, samples []DensitySample, want string, confidence, minEffect float64) string {
	var arms []string
	of := map[string]string{}
	for _, r := range rows {
		if !slices.Contains(arms, r.Arm) {
			arms = append(arms, r.Arm)
		}
		of[r.Arm] = r.Variant.Of
	}
	bl := NewBaselines(arms, want, func(a string) string { return of[a] })
	pss := map[[2]string][]float64{}
	for _, s := range samples {
		if s.PSSBytes > 0 {
			k := [2]string{s.Arm, s.Budget}
			pss[k] = append(pss[k], float64(s.PSSBytes))
		}
	}
	for i := range rows {
		r := &rows[i]
		base := bl.For(r.Arm)
		xa, xb := pss[[2]string{r.Arm, r.Budget}], pss[[2]string{base, r.Budget}]
		switch {
		case r.Arm == base:
			r.VsBaseline = VsBaseline{Baseline: base, Verdict: VerdictBaseline}
		case len(xa) == 0 || len(xb) == 0:
			r.VsBaseline = VsBaseline{}
		default:
			r.VsBaseline = NewVsBaseline(base, xa, xb, stats.Neutral, confidence, minEffect)
		}
	}
	return bl.Base
}
