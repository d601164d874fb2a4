package report

import (
	"fmt"
	"path/filepath"

	"github.com/coldstart-go/coldstart/internal/noise"
	"github.com/coldstart-go/coldstart/record"
)

// NoiseRecord is what else the machine did during one window of a
// campaign ("noise" records): Scope names the window ("budget=cpus=0
// round 3", "arm=static budget=max round 2").
type NoiseRecord struct {
	Scope string `json:"scope"`
	noise.Window
}

// VerdictSummary is one experiment of bench/verdictcheck: many small
// campaigns with a known truth, and how often the verdict found a
// difference.
type VerdictSummary = record.VerdictSummary

func pct(v *float64) string {
	if v == nil {
		return "–"
	}
	return fmt.Sprintf("%.1f%%", 100**v)
}

// verdictSection shows the verdict checks: false positives of A/A
// experiments, detection and coverage of known effects.
func (r *Report) verdictSection(m *mdw) {
	var rows [][]string
	var files []string
	for _, c := range r.Campaigns {
		for _, v := range c.VerdictSummaries {
			cover := "–"
			if v.TruthDiffMs != nil {
				cover = fmt.Sprintf("%d/%d (diff %.2f ms), %d/%d (ratio %.3f)", v.DiffCovered, v.Campaigns, *v.TruthDiffMs, v.RatioCovered, v.Campaigns, deref(v.TruthRatio))
				if v.PairedDiffCovered != nil && v.PairedRatioCovered != nil {
					cover += fmt.Sprintf("; paired %d/%d, %d/%d", *v.PairedDiffCovered, v.Campaigns, *v.PairedRatioCovered, v.Campaigns)
				}
			}
			runs := fmt.Sprintf("%d × %d+%d", v.Campaigns, v.RunsPerArm, v.RunsPerArm)
			if v.Precision > 0 {
				runs = fmt.Sprintf("%d × auto (±%.1f%%, ≤ %d: %d–%d, median %.0f)", v.Campaigns, 100*v.Precision, v.MaxRuns, v.RunsMin, v.RunsMax, deref(v.RunsMedian))
			}
			det := fmt.Sprintf("%d/%d (%.0f%%)", v.Detected, v.Campaigns, 100*v.DetectedRate)
			if v.PairedDetected != nil {
				det += fmt.Sprintf("; paired %d/%d (%.0f%%)", *v.PairedDetected, v.Campaigns, 100*deref(v.PairedDetectedRate))
			}
			if v.GateFails != nil && v.GatePasses != nil {
				det = fmt.Sprintf("gate failed %d/%d, passed %d/%d; ", *v.GateFails, v.Campaigns, *v.GatePasses, v.Campaigns) + det
			}
			detectable := pct(v.DetectableAt20)
			if v.DetectablePairedAt20 != nil {
				detectable += fmt.Sprintf(" (within a campaign: unpaired %s, paired %s)", pct(v.DetectableUnpairedAt20), pct(v.DetectablePairedAt20))
			}
			if v.DetectablePairedAtRuns != nil {
				detectable += fmt.Sprintf("; at its own runs: unpaired %s, paired %s", pct(v.DetectableUnpairedAtRuns), pct(v.DetectablePairedAtRuns))
			}
			rows = append(rows, []string{v.Experiment, v.Truth, runs, det, cover, detectable,
				fmt.Sprintf("%.1f–%.1f", v.Load1Min, v.Load1Max), fmt.Sprintf("%d/%d", v.BusyWindows, v.Campaigns), "`" + filepath.Base(c.File) + "`"})
			files = appendUnique(files, filepath.Base(c.File))
		}
	}
	if len(rows) == 0 {
		return
	}
	m.p("## Verdict checks\n\n")
	m.p("Small campaigns with a known truth (bench/verdictcheck), each judged as this report judges a comparison. "+
		"For the same binary under two names, \"difference detected\" is a false positive; for a known effect it should be every campaign, "+
		"and the intervals should cover the truth. \"busy\" counts campaigns during which other work kept more than %.2f CPUs busy.\n\n", noise.BusyOtherCPUs)
	m.table([]string{"experiment", "truth", "campaigns × runs", "difference detected", "interval covers truth", "smallest effect detectable at 20 runs", "load average", "busy", "file"}, rows)
}

func deref(v *float64) float64 {
	if v == nil {
		return 0
	}
	return *v
}
