package record

import "github.com/coldstart-go/coldstart/internal/noise"

// VerdictCheck is one small campaign's verdict ("verdict_check" records
// of bench/verdictcheck).
type VerdictCheck struct {
	Experiment string   `json:"experiment"`
	Campaign   int      `json:"campaign"`
	Metric     string   `json:"metric"`
	A          string   `json:"a"`
	B          string   `json:"b"`
	MedianA    float64  `json:"median_a"`
	MedianB    float64  `json:"median_b"`
	Ratio      *float64 `json:"ratio"`
	RatioLow   *float64 `json:"ratio_ci_low"`
	RatioHigh  *float64 `json:"ratio_ci_high"`
	DiffMs     *float64 `json:"diff_ms"`
	DiffLowMs  *float64 `json:"diff_ci_low_ms"`
	DiffHighMs *float64 `json:"diff_ci_high_ms"`
	PValue     float64  `json:"p_value"`
	Verdict    string   `json:"verdict"`
	NA         int      `json:"n_a"`
	NB         int      `json:"n_b"`
	// Noise is what else the machine did during this campaign.
	Noise noise.Window `json:"noise"`
}

// VerdictSummary is an experiment's result ("verdict_summary" records).
type VerdictSummary struct {
	Experiment string  `json:"experiment"`
	Truth      string  `json:"truth"`
	Campaigns  int     `json:"campaigns"`
	RunsPerArm int     `json:"runs_per_arm"`
	Confidence float64 `json:"confidence"`
	// Detected is how many campaigns said other than "no difference
	// detected"; DetectedRate = Detected / Campaigns (for aa: the
	// false-positive rate).
	Detected     int     `json:"detected"`
	DetectedRate float64 `json:"detected_rate"`
	// For a known shift: the truth in ms and how many campaigns' intervals
	// covered it.
	TruthDiffMs    *float64 `json:"truth_diff_ms,omitempty"`
	TruthRatio     *float64 `json:"truth_ratio,omitempty"`
	DiffCovered    int      `json:"diff_covered"`
	RatioCovered   int      `json:"ratio_covered"`
	DetectableAtN  *float64 `json:"detectable_effect_at_runs,omitempty"`
	DetectableAt20 *float64 `json:"detectable_effect_at_20_runs,omitempty"`
	// Load and busy windows over the experiment.
	Load1Min    float64 `json:"load1_min"`
	Load1Max    float64 `json:"load1_max"`
	BusyWindows int     `json:"busy_windows"`
}
