package record

// Poll is what a platform polling readiness every IntervalMs from spawn
// would have seen: medians over the counted runs.
type Poll struct {
	Name       string  `json:"name"`
	IntervalMs float64 `json:"interval_ms"`
	// PollMs is how long one successful poll took (the prober's ready RPC
	// over a fresh channel): what the platform's poll costs on top.
	PollMs float64 `json:"poll_ms"`
	// TrueMs is spawn to first ready RPC as coldstart measured it.
	TrueMs float64 `json:"true_ms"`
	// SeenMs is spawn to the end of the platform's first successful poll.
	SeenMs float64 `json:"seen_ms"`
	// DelayMs is SeenMs − TrueMs: the wait for the next poll.
	DelayMs float64 `json:"delay_ms"`
	// SharePct is DelayMs as a percentage of SeenMs: the part of the cold
	// start the platform's polling adds.
	SharePct float64 `json:"share_pct"`
}

// PollRow is one arm, budget and platform interval, for printing.
type PollRow struct {
	Arm    string `json:"arm"`
	Budget string `json:"budget"`
	Runs   int    `json:"runs"`
	Poll
}

// PollRows flattens the summaries' polls into rows.
func PollRows(sums []Summary) []PollRow {
	var out []PollRow
	for _, s := range sums {
		for _, p := range s.Polls {
			out = append(out, PollRow{Arm: s.Arm, Budget: s.Budget, Runs: s.Runs, Poll: p})
		}
	}
	return out
}
