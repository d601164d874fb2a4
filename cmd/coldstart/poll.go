package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/coldstart-go/coldstart/campaign"
	"github.com/coldstart-go/coldstart/internal/render"
)

// pollIntervalHelp is --poll-interval's help: the rule, and each preset
// with where its figure comes from.
func pollIntervalHelp() string {
	var b strings.Builder
	b.WriteString("platform readiness-poll intervals, comma-separated durations or presets: also report when a platform polling from spawn every interval " +
		"would first see each start ready (polls at k·interval; a poll succeeds if it began once the server was ready, and ends one measured poll later), " +
		"and what share of the cold start that wait is (\"\" = none). Presets:")
	for _, p := range campaign.PollPresets {
		fmt.Fprintf(&b, "\n  %s = %v (%s)", p.Name, p.Interval, p.Source)
	}
	return b.String()
}

// writePolls prints the poll table after run's summary table.
func writePolls(w io.Writer, f render.Format, sums []campaign.Summary) error {
	rows := campaign.PollRows(sums)
	if f == render.JSON {
		return nil // each summary holds its polls
	}
	fmt.Fprintln(w)
	if f == render.Markdown {
		fmt.Fprint(w, "**seen by a polling platform** (ms from spawn, medians)\n\n")
	} else {
		fmt.Fprintln(w, "# seen by a polling platform (ms from spawn, medians)")
	}
	return render.Write(w, f, rows)
}
