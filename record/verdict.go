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
	// Test is the test behind the fields above: stats.MannWhitney, the
	// samples taken as unpaired ("" in files written before the paired
	// fields).
	Test string `json:"test,omitempty"`
	// Paired is the same campaign judged as coldstart run judges it:
	// paired by round (stats.CompareRounds; nil in older files).
	Paired *PairedCheck `json:"paired,omitempty"`
	// Runs is the counted rounds the campaign ran (each arm one start a
	// round); Stop why a -runs auto campaign stopped ("" = fixed -runs).
	Runs int    `json:"runs,omitempty"`
	Stop string `json:"stop,omitempty"`
	// Gate is a gate experiment's try: the campaign judged as coldstart
	// gate judges it (nil for other experiments).
	Gate *GateCheck `json:"gate,omitempty"`
	// Noise is what else the machine did during this campaign.
	Noise noise.Window `json:"noise"`
}

// PairedCheck is a campaign's A against B paired by round: Test is
// stats.PairedWilcoxon (the Wilcoxon signed-rank test on per-round ratios,
// Hodges–Lehmann intervals), or stats.MannWhitney when too few rounds
// paired, as coldstart run falls back.
type PairedCheck struct {
	Test       string   `json:"test"`
	Ratio      *float64 `json:"ratio"`
	RatioLow   *float64 `json:"ratio_ci_low"`
	RatioHigh  *float64 `json:"ratio_ci_high"`
	DiffMs     *float64 `json:"diff_ms"`
	DiffLowMs  *float64 `json:"diff_ci_low_ms"`
	DiffHighMs *float64 `json:"diff_ci_high_ms"`
	PValue     float64  `json:"p_value"`
	Verdict    string   `json:"verdict"`
	// Pairs is the number of rounds both arms have.
	Pairs int `json:"pairs"`
}

// GateCheck is one try of a gate experiment: arms base and new of one
// campaign judged by gate.ComparePaired with --allow-busy.
type GateCheck struct {
	// Exit is what coldstart gate would exit with: 0 pass, 2
	// incomparable, 3 regression (with --allow-busy: never 4).
	Exit int `json:"exit"`
	// Regressions name the figures that regressed.
	Regressions []string `json:"regressions,omitempty"`
	// Tested is the number of figures in Holm's family.
	Tested int `json:"tested"`
	// FirstRPC is the first-RPC median row: new/base, its interval, the
	// Holm-adjusted p and the gate's verdict.
	FirstRPCRatio     *float64 `json:"first_rpc_ratio,omitempty"`
	FirstRPCRatioLow  *float64 `json:"first_rpc_ratio_ci_low,omitempty"`
	FirstRPCRatioHigh *float64 `json:"first_rpc_ratio_ci_high,omitempty"`
	FirstRPCP         *float64 `json:"first_rpc_p,omitempty"`
	FirstRPCVerdict   string   `json:"first_rpc_verdict,omitempty"`
	// BusyRounds of Rounds ran on a busy host; Busy: the gate found the
	// file busy (without --allow-busy it would have exited 4).
	BusyRounds int  `json:"busy_rounds"`
	Rounds     int  `json:"rounds"`
	Busy       bool `json:"busy"`
	// Incomparable is why the gate could not compare (Exit 2).
	Incomparable string `json:"incomparable,omitempty"`
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
	// The same campaigns judged paired by round (PairedCheck): how many
	// detected a difference, and covered the truth. Nil in older files.
	PairedDetected     *int     `json:"paired_detected,omitempty"`
	PairedDetectedRate *float64 `json:"paired_detected_rate,omitempty"`
	PairedDiffCovered  *int     `json:"paired_diff_covered,omitempty"`
	PairedRatioCovered *int     `json:"paired_ratio_covered,omitempty"`
	// DetectableUnpairedAt20 and DetectablePairedAt20 are the smallest
	// relative effects 20 runs per arm detect with 80% power at the spread
	// within a campaign, unpaired (its values) and paired (its per-round
	// ratios): the median over the campaigns, from the same samples.
	// (DetectableAt20 pools every campaign's values, so it also counts the
	// spread between campaigns, which neither test sees.)
	DetectableUnpairedAt20 *float64 `json:"detectable_effect_at_20_runs_unpaired,omitempty"`
	DetectablePairedAt20   *float64 `json:"detectable_effect_at_20_runs_paired,omitempty"`
	// DetectableUnpairedAtRuns and DetectablePairedAtRuns are the same at
	// the rounds each campaign of a -runs auto experiment counted: the
	// smallest effect its stopping rule resolved. Nil for a fixed count.
	DetectableUnpairedAtRuns *float64 `json:"detectable_effect_at_own_runs_unpaired,omitempty"`
	DetectablePairedAtRuns   *float64 `json:"detectable_effect_at_own_runs_paired,omitempty"`
	// With -runs auto (RunsPerArm 0): the precision and cap, and the
	// counted rounds the campaigns ran (minimum, median, maximum, total).
	Precision  float64  `json:"precision,omitempty"`
	MaxRuns    int      `json:"max_runs,omitempty"`
	RunsMin    int      `json:"runs_min,omitempty"`
	RunsMedian *float64 `json:"runs_median,omitempty"`
	RunsMax    int      `json:"runs_max,omitempty"`
	RunsTotal  int      `json:"runs_total,omitempty"`
	// A gate experiment's tries (GateCheck): how many failed (exit 3),
	// passed (exit 0) or could not be compared (exit 2), and how many the
	// gate found busy (each would have exited 4 without --allow-busy).
	GateFails        *int `json:"gate_fails,omitempty"`
	GatePasses       *int `json:"gate_passes,omitempty"`
	GateIncomparable *int `json:"gate_incomparable,omitempty"`
	GateBusy         *int `json:"gate_busy,omitempty"`
	// Load and busy windows over the experiment.
	Load1Min    float64 `json:"load1_min"`
	Load1Max    float64 `json:"load1_max"`
	BusyWindows int     `json:"busy_windows"`
}
