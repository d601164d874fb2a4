package report

import (
	"fmt"
	"strings"

	"github.com/coldstart-go/coldstart/record"
)

// CostRow is one arm under one policy and traffic model, as `coldstart
// cost` records it (kind "cost"); CostAnswer its constrained answer for a
// traffic model (kind "cost_answer").
type (
	CostRow    = record.CostRow
	CostAnswer = record.CostAnswer
)

// costTraffics are the traffic models of c's cost rows, in file order.
func costTraffics(c *Campaign) []string {
	var out []string
	for _, r := range c.Cost {
		if len(out) == 0 || out[len(out)-1] != r.Traffic {
			out = append(out, r.Traffic)
		}
	}
	return out
}

// costSection writes, per `coldstart cost` file and traffic model: the
// table of arms × policies (cold share, added latency, instance-hours,
// idle GiB-hours, start CPU, per day), the Pareto front, the constrained
// answer where one was asked, and the front's plot.
func (r *Report) costSection(m *mdw, plots func(*Campaign, string)) {
	if !r.has(func(c *Campaign) bool { return len(c.Cost) > 0 }) {
		return
	}
	m.p("## Scale-to-zero cost\n\n")
	m.p("`coldstart cost` replays each traffic model through each scaling policy with each arm's measured starts " +
		"(a discrete-event simulation; docs/cost.md says what is modelled and what is not). cold = requests that waited " +
		"for an instance to start; added = that wait, percentiles over every request (warm ones add 0); idle GiB-h = " +
		"ready instances serving nothing, times one idle instance's memory; all per day of traffic. ★ = on the Pareto " +
		"front of p99 added latency against idle GiB-h.\n\n")
	for _, c := range r.Campaigns {
		if len(c.Cost) == 0 {
			continue
		}
		for _, tr := range costTraffics(c) {
			var rows [][]string
			var front []string
			var head CostRow
			for _, x := range c.Cost {
				if x.Traffic != tr {
					continue
				}
				if head.Traffic == "" {
					head = x
				}
				star := ""
				if x.Front {
					star = "★"
					front = append(front, fmt.Sprintf("%s %s (p99 %s ms, %s GiB-h/day)", x.Arm, x.Policy, ms(x.AddedP99Ms), gib3(x.IdleGiBHoursPerDay)))
				}
				rows = append(rows, []string{x.Arm, "`" + x.Policy + "`", fmt.Sprintf("%.2f%%", x.ColdPct),
					ms(x.AddedP50Ms), ms(x.AddedP99Ms), ms(x.AddedP999Ms), fmt.Sprintf("%.2f", x.InstanceHoursPerDay),
					gib3(x.IdleGiBHoursPerDay), fmt.Sprintf("%.2f", x.StartCPUSecondsPerDay), star})
			}
			m.p("### %s — `%s`\n\n", c.Label, tr)
			m.p("%d requests over %s (seed %d); starts drawn from %s (%d measured); idle memory %s, %s.\n\n",
				head.Requests, hoursText(head.DurationHours), head.Seed, costPlatform(head), head.StartSamples,
				mib(head.IdleBytes), head.IdleSource)
			m.table([]string{"arm", "policy", "cold", "added p50 ms", "added p99 ms", "added p99.9 ms",
				"instance-h/day", "idle GiB-h/day", "start CPU s/day", "front"}, rows)
			m.p("**Front:** %s.\n\n", strings.Join(front, "; "))
			for _, a := range c.CostAnswers {
				if a.Traffic == tr {
					m.p("**Answer:** %s.\n\n", a.Text)
				}
			}
			plots(c, "cost")
		}
		m.p("*%s*\n\n", provenanceLine(c))
	}
}

func costPlatform(r CostRow) string {
	if r.Platform == "knative" {
		return "the Knative campaign's scales from zero"
	}
	return "local starts under " + r.Budget
}

func gib3(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v < 0.01:
		return fmt.Sprintf("%.4f", v)
	case v < 1:
		return fmt.Sprintf("%.3f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func hoursText(h float64) string {
	if h >= 48 && h == float64(int(h/24))*24 {
		return fmt.Sprintf("%d days", int(h/24))
	}
	return fmt.Sprintf("%g h", h)
}
