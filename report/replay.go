package report

import (
	"fmt"
	"strings"

	"github.com/coldstart-go/coldstart/record"
)

// replaySection writes, per `coldstart replay` file: each policy's real
// cold requests, pod starts and pod-seconds beside the simulator's on the
// same arrivals, and whether the simulator agreed.
func (r *Report) replaySection(m *mdw, plots func(*Campaign, string)) {
	if !r.has(func(c *Campaign) bool { return len(c.Replays) > 0 }) {
		return
	}
	m.p("## The simulator against the real autoscaler\n\n")
	m.p("`coldstart replay` sent one trace's requests, at their times, to a real Knative cluster: one Service per "+
		"policy, copies of the arm's, all at zero at t0 and sent the same requests at once. cold = requests sent when "+
		"their Service had no Ready pod (its pod watch) that waited: slower than the p99 of those sent with one, or "+
		"unanswered. answered warm = sent with no Ready pod in the watch but answered in warm time: the activator "+
		"probes a new pod itself and routes to it before the kubelet's Ready reaches the API. sim = `coldstart cost`'s "+
		"simulator on the same arrivals and policy, with the cluster's grace period and the replay's scales from zero "+
		"(requests sent when the Service had no pod at all) as its starts: the mean of its simulations, each its own draw "+
		"of starts and of where the autoscaler's 2 s ticks fall, with one simulation's 5th–95th percentile in brackets. "+
		"The simulator agrees when that mean is within ±%.0f%% of the real cold requests. pod-s counts each pod from appearing to the autoscaler's deletion; drain "+
		"is deletion → gone, which the simulator does not model.\n\n", record.ReplayTolerancePct)
	for _, c := range r.Campaigns {
		if len(c.Replays) == 0 {
			continue
		}
		head := c.Replays[0]
		m.p("### %s — `%s` at %s\n\n", c.Label, head.Traffic, head.Arm)
		m.p("%d requests over %s (seed %d).\n\n", head.Requests, hoursText(head.DurationS/3600), head.Seed)
		var rows [][]string
		agree := 0
		var off []string
		for _, x := range c.Replays {
			mark := "yes"
			if x.Agrees {
				agree++
			} else {
				mark = "**no**"
				dir := "more"
				if x.ColdDiffPct < 0 {
					dir = "fewer"
				}
				off = append(off, fmt.Sprintf("`%s` (%s simulated, %d real: %s)", x.Policy, simCold(x), x.Cold, dir))
			}
			rows = append(rows, []string{"`" + x.Policy + "`", fmt.Sprint(x.Requests), fmt.Sprint(x.Cold), simCold(x) + simSpread(x),
				fmt.Sprintf("%+.1f%%", x.ColdDiffPct), mark, fmt.Sprintf("%d / %d", x.Starts, x.SimStarts),
				fmt.Sprintf("%.0f / %.0f", x.PodSeconds, x.SimInstanceSeconds), fmt.Sprintf("%.0f", x.DrainSeconds),
				ms(x.ColdMedianMs), fmt.Sprint(x.AnsweredWarm), fmt.Sprint(x.Errors)})
		}
		m.table([]string{"policy", "requests", "cold", "sim cold", "sim − real", "agrees", "pod starts real / sim",
			"pod-s real / sim", "drain s", "cold p50 ms", "answered warm", "errors"}, rows)
		verdict := fmt.Sprintf("**The simulator agreed for %d of %d policies.**", agree, len(c.Replays))
		if len(off) > 0 {
			verdict += " Off by more than the tolerance: " + strings.Join(off, "; ") + "."
		}
		m.p("%s\n\n", verdict)
		plots(c, "replay")
		m.p("*%s*\n\n", provenanceLine(c))
	}
}

// simCold is the simulator's cold count: the mean of its runs, or the
// one run of a file from before it averaged.
func simCold(x record.Replay) string {
	if x.SimRuns == 0 {
		return fmt.Sprint(x.SimCold)
	}
	return fmt.Sprintf("%.1f", x.SimColdExpected())
}

// simSpread is one simulation's 5th–95th percentile, " [29–36]", or
// nothing for a single run.
func simSpread(x record.Replay) string {
	if x.SimRuns == 0 {
		return ""
	}
	return fmt.Sprintf(" [%d–%d]", x.SimColdP5, x.SimColdP95)
}

// replayTolerance is record.ReplayTolerancePct as a fraction.
const replayTolerance = record.ReplayTolerancePct / 100
