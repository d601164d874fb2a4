package report

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"github.com/coldstart-go/coldstart/internal/stats"
)

// platformLevers writes, for each Knative campaign with platform levers
// (coldstart deploy --lever, run --on knative --lever), what each lever
// did to its arm's scale from zero: the first RPC's verdict, as the
// Comparisons table has it, and the step between two phases it moved
// most, each step compared round by round (the lever's Service and its
// arm's were measured in the same rounds) with Holm's adjustment over the
// steps of one lever, so that among a dozen steps one is not named by
// chance.
func (r *Report) platformLevers(m *mdw) {
	rows := r.Comparisons()
	wrote := false
	for _, c := range r.Campaigns {
		if !c.Knative() {
			continue
		}
		vs := c.Variants()
		var out [][]string
		for _, s := range sortedSummaries(c.Summaries) {
			v, ok := vs[s.Arm]
			if !ok || len(v.Platform) == 0 {
				continue
			}
			first := "–"
			verdict := ""
			for _, row := range rows {
				if row.Kind == KindVariants && row.Campaign == c.Label && row.A == s.Arm && row.B == v.Of && row.Metric == "first_rpc_ms" {
					first, verdict = ratioText(row)+" "+pIs(row.PValue), row.Verdict
					if row.Verdict != string(stats.NoDifference) && !row.Actionable {
						verdict += fmt.Sprintf(" (< %.0f%%)", 100*row.MinEffect)
					}
				}
			}
			sets := strings.Join(v.Platform, "; ")
			if p := pulledImage(c, s.Arm); p != "" {
				sets += "; " + p
			}
			if v.Control {
				sets = "nothing (control)"
				if verdict != "" && verdict != string(stats.NoDifference) {
					verdict += " — the control differs: doubt this campaign's lever verdicts"
				}
			}
			out = append(out, []string{s.Arm, v.Of, sets, first, verdict, r.stepMoved(c, s.Arm, v.Of, s.Budget), fmt.Sprint(s.N)})
		}
		if len(out) == 0 {
			continue
		}
		if !wrote {
			m.p("## Platform levers on Knative\n\n")
			wrote = true
		}
		m.p("### %s\n\n", c.Label)
		m.table([]string{"variant", "of", "sets", "t0 → first RPC, variant/arm [" + fmt.Sprintf("%.0f%%", 100*r.confidence()) + " CI]", "verdict", "step moved most (variant − arm, ms)", "n"}, out)
		m.p("Each variant is its arm's image and Service with one field changed (`coldstart deploy --lever`), measured in the same rounds as the arm (`%s`) and set against what \"of\" names: its arm, or, for an image pulled at a bandwidth, the variant whose image was cached (both start a new revision every round, so the difference is the pull's). A step is the time between two consecutive phases of the arm's median order (the Zipkin phases included when traced); each is compared round by round (Wilcoxon signed-rank, Hodges–Lehmann shift), its p-value adjusted by Holm over the lever's steps. A step is named only when its adjusted p is below %.2f; \"none\" names the largest shift seen.\n\n",
			filepath.Base(c.File), 1-r.confidence())
	}
}

// stepMoved names the step between consecutive phases that variant moved
// most against arm, with its shift, interval and Holm-adjusted p, or
// "none" with the largest shift when no step's adjusted p is significant.
func (r *Report) stepMoved(c *Campaign, variant, arm, budget string) string {
	var base map[string]float64
	for _, s := range c.Summaries {
		if s.Arm == arm && s.Budget == budget {
			base = s.PhasesMs
		}
	}
	if len(base) == 0 {
		return "–"
	}
	// The arm's steps, in its median order, up to the first RPC.
	type step struct{ from, to string }
	var steps []step
	prev := "t0"
	for _, p := range inOrder(base) {
		if prev == "first_rpc" {
			break
		}
		steps = append(steps, step{prev, p.name})
		prev = p.name
	}
	lengths := func(a string) []stats.Rounds {
		out := make([]stats.Rounds, len(steps))
		for i := range out {
			out[i] = stats.Rounds{}
		}
		for _, s := range c.Samples {
			if s.Arm != a || s.Budget != budget || s.Warmup || s.Error != "" {
				continue
			}
			at := map[string]float64{"t0": 0}
			for _, p := range s.Phases {
				at[p.Name] = p.Ms
			}
			for i, st := range steps {
				from, ok1 := at[st.from]
				to, ok2 := at[st.to]
				if ok1 && ok2 {
					out[i][s.Run] = to - from
				}
			}
		}
		return out
	}
	xv, xa := lengths(variant), lengths(arm)
	var cmps []stats.Comparison
	var ps []float64
	for i := range steps {
		cmp := stats.CompareRounds(xv[i], xa[i], r.confidence())
		cmps = append(cmps, cmp)
		ps = append(ps, cmp.P)
	}
	adj := stats.HolmAdjust(ps)
	best, bestSig := -1, false
	for i, cmp := range cmps {
		if math.IsNaN(cmp.Diff) {
			continue
		}
		sig := adj[i] < 1-r.confidence()
		switch {
		case best < 0, sig && !bestSig, sig == bestSig && math.Abs(cmp.Diff) > math.Abs(cmps[best].Diff):
			best, bestSig = i, sig
		}
	}
	if best < 0 {
		return "–"
	}
	cmp := cmps[best]
	text := fmt.Sprintf("%s → %s %s [%s, %s] %s", steps[best].from, steps[best].to,
		signedMs(cmp.Diff), signedMs(cmp.DiffLow), signedMs(cmp.DiffHigh), pIs(adj[best]))
	if !bestSig {
		return "none (largest: " + text + ")"
	}
	return text
}

// pIs is "p=0.003", or "p<0.001".
func pIs(p float64) string {
	if t := pText(p); strings.HasPrefix(t, "<") {
		return "p" + t
	}
	return "p=" + pText(p)
}

// pulledImage says, for a pull lever's variant, how large the image its
// counted starts ran was and how many of them the registry served all of
// ("" for other variants).
func pulledImage(c *Campaign, variant string) string {
	var n, pulled int
	var bytes int64
	for _, s := range c.Samples {
		if s.Arm != variant || s.Warmup || s.ImagePull == nil {
			continue
		}
		n++
		bytes = s.ImagePull.Bytes
		if s.ImagePull.ServedBytes >= s.ImagePull.Bytes {
			pulled++
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("image %s, pulled whole in %d of %d starts", mib(bytes), pulled, n)
}
