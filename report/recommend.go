package report

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/coldstart-go/coldstart/internal/stats"
)

// Recommendation is one conclusion drawn from the figures, with the rows it
// rests on ("coldstart static/cpus=0", "density upx/max") and those of them
// that are doubted.
type Recommendation struct {
	Text    string
	Rows    []string
	Doubted []string
}

// String renders the recommendation as one Markdown list item's text.
func (r Recommendation) String() string {
	s := r.Text + " (rows: " + strings.Join(r.Rows, ", ") + ")."
	if len(r.Doubted) > 0 {
		s += " Rests on doubted rows (" + strings.Join(r.Doubted, ", ") + "): rerun on a quiet host before acting on it."
	}
	return s
}

// ref names a campaign's kind in citations: "coldstart", or "coldstart#2"
// when the report holds more than one cold-start campaign.
func (r *Report) ref(c *Campaign, kind string) string {
	var of []*Campaign
	for _, x := range r.Campaigns {
		switch {
		case kind == "coldstart" && len(x.Summaries) > 0,
			kind == "density" && len(x.Density) > 0,
			kind == "steady" && len(x.Steady) > 0:
			of = append(of, x)
		}
	}
	if len(of) <= 1 {
		return kind
	}
	for i, x := range of {
		if x == c {
			return fmt.Sprintf("%s#%d", kind, i+1)
		}
	}
	return kind
}

type cite struct {
	rows, doubted []string
}

func (c *cite) add(ref, doubt string) {
	for _, r := range c.rows {
		if r == ref {
			return
		}
	}
	c.rows = append(c.rows, ref)
	if doubt != "" {
		c.doubted = append(c.doubted, ref)
	}
}

func (c *cite) rec(format string, args ...any) Recommendation {
	return Recommendation{Text: fmt.Sprintf(format, args...), Rows: c.rows, Doubted: c.doubted}
}

// densityFor finds the density row of arm measured on the same binary as
// in cold-start campaign cc, preferring one measured under budget. Arm
// names alone do not match: "default" of a JVM campaign is not "default"
// of the sample server's.
func (r *Report) densityFor(cc *Campaign, arm, budget string) (*Campaign, DensityRow, bool) {
	var fc *Campaign
	var found DensityRow
	for _, c := range r.Campaigns {
		if !sameBinary(cc, c, arm) {
			continue
		}
		for _, d := range c.Density {
			if d.Arm != arm {
				continue
			}
			if d.Budget == budget {
				return c, d, true
			}
			if fc == nil {
				fc, found = c, d
			}
		}
	}
	return fc, found, fc != nil
}

// armSHA is the sha256 of arm's binary in c, "" when c records none.
func armSHA(c *Campaign, arm string) string {
	for _, a := range c.Artifacts {
		if a.Arm == arm {
			return a.SHA256
		}
	}
	return ""
}

// sameServer reports whether two campaigns measured the same server: some
// arm built to the same binary in both. Campaigns that record no binaries
// (older files) are taken to match, except a cluster's with a local one:
// the cluster ran images deployed apart, its pods' memory is not what a
// local density campaign read.
func sameServer(a, b *Campaign) bool {
	if a == b {
		return true
	}
	if a.Knative() != b.Knative() {
		return false
	}
	if len(a.Artifacts) == 0 || len(b.Artifacts) == 0 {
		return true
	}
	for _, x := range a.Artifacts {
		if x.SHA256 != "" && armSHA(b, x.Arm) == x.SHA256 {
			return true
		}
	}
	return false
}

// sameBinary reports whether arm ran the same binary in a and b: by its
// sha256 when both record it, else by sameServer.
func sameBinary(a, b *Campaign, arm string) bool {
	if x, y := armSHA(a, arm), armSHA(b, arm); x != "" && y != "" {
		return x == y
	}
	return sameServer(a, b)
}

// densest finds c's densest density row among arms (all arms when nil)
// and the arms whose idle PSS is not told apart from it (no significant
// difference of at least the minimum effect over the instances' samples),
// the densest first, with the comparison of each in words.
func (r *Report) densest(c *Campaign, arms map[string]bool) (DensityRow, []string, []string, bool) {
	var rows []DensityRow
	for _, d := range c.Density {
		if arms == nil || arms[d.Arm] {
			rows = append(rows, d)
		}
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].PSSBytes < rows[j].PSSBytes })
	if len(rows) < 2 || rows[0].PSSBytes <= 0 {
		return DensityRow{}, nil, nil, false
	}
	d := rows[0]
	pss := map[string][]float64{}
	for _, x := range c.DensitySamples {
		if x.Budget == d.Budget && x.PSSBytes > 0 {
			pss[x.Arm] = append(pss[x.Arm], float64(x.PSSBytes))
		}
	}
	alike := []string{d.Arm}
	var text []string
	for _, x := range rows[1:] {
		if x.Budget != d.Budget || len(pss[d.Arm]) == 0 || len(pss[x.Arm]) == 0 {
			continue
		}
		cr := r.compare("arms", c.Label, "budget="+d.Budget, "idle_pss_bytes", x.Arm, d.Arm, pss[x.Arm], pss[d.Arm], stats.Neutral)
		if !cr.Actionable {
			alike = append(alike, x.Arm)
			text = append(text, fmt.Sprintf("%s (%s/%s %s, p=%s)", x.Arm, x.Arm, d.Arm, ratioText(cr), pText(cr.PValue)))
		}
	}
	return d, alike, text, true
}

// budgetsOf lists the budgets of rows in first-seen order.
func budgetsOf[T any](rows []T, budget func(T) string) []string {
	var out []string
	seen := map[string]bool{}
	for _, x := range rows {
		if b := budget(x); !seen[b] {
			seen[b] = true
			out = append(out, b)
		}
	}
	return out
}

// recommendationsSection writes the recommendations under their heading.
func (r *Report) recommendationsSection(m *mdw) {
	m.p("## Recommendations\n\n")
	recs := r.Recommendations()
	if len(recs) == 0 {
		m.p("None: no budget, density or steady step has two arms to compare.\n\n")
	}
	for _, rec := range recs {
		m.p("- %s\n", rec)
	}
	if len(recs) > 0 {
		m.p("\n")
	}
}

// Recommendations derives conclusions from the campaigns: the fastest
// start under each budget and what it costs in memory, the densest arm, the
// least server CPU per call and the most calls per second, gRPC against
// REST, and whether one arm wins both start and density. Each cites its
// rows; nothing is said that the data does not show.
func (r *Report) Recommendations() []Recommendation {
	var out []Recommendation
	// winners: per cold-start campaign and budget, the fastest arm and the
	// arms that start alike with it.
	type win struct {
		ref, budget string
		arms        []string
	}
	wins := map[*Campaign][]win{}
	for _, c := range r.Campaigns {
		cs := r.ref(c, "coldstart")
		for _, b := range budgetsOf(c.Summaries, func(s Summary) string { return s.Budget }) {
			var ss []Summary
			for _, s := range c.Summaries {
				if s.Budget == b && s.Runs > 0 && s.MedianMs > 0 {
					ss = append(ss, s)
				}
			}
			if len(ss) < 2 {
				continue
			}
			sort.SliceStable(ss, func(i, j int) bool { return ss[i].MedianMs < ss[j].MedianMs })
			f, n, slow := ss[0], ss[1], ss[len(ss)-1]
			w := win{ref: cs, budget: b, arms: []string{f.Arm}}
			samples := coldSamples(c)
			for _, s := range ss[1:] {
				if r.alikeCold(samples, f, s) {
					w.arms = append(w.arms, s.Arm)
				}
			}
			wins[c] = append(wins[c], w)
			var ct cite
			ct.add(cs+" "+f.Arm+"/"+b, f.Doubt())
			ct.add(cs+" "+n.Arm+"/"+b, n.Doubt())
			var text string
			xf, xn := samples[[2]string{f.Arm, b}], samples[[2]string{n.Arm, b}]
			switch {
			case len(xf) == 0 || len(xn) == 0:
				// No raw samples: medians only, no test, no ranking.
				text = fmt.Sprintf("Under %s, %s and %s cannot be told apart: the file holds no samples to test (%s vs %s ms median)", b, f.Arm, n.Arm, ms(f.MedianMs), ms(n.MedianMs))
			case r.alikeCold(samples, f, n):
				cr := r.compare("arms", c.Label, "budget="+b, "first_rpc_ms", f.Arm, n.Arm, xf, xn, stats.LessIsFaster)
				text = fmt.Sprintf("Under %s, no difference detected that is worth acting on between %s and %s (%s vs %s ms median; %s/%s %s, p=%s, n=%d+%d); "+
					"detecting a %.0f%% difference at this spread would take about %s runs per arm",
					b, f.Arm, n.Arm, ms(f.MedianMs), ms(n.MedianMs), f.Arm, n.Arm, ratioText(cr), pText(cr.PValue), cr.NA, cr.NB, 100*r.minEffect(), runsText(cr.RunsToDetect))
			default:
				cr := r.compare("arms", c.Label, "budget="+b, "first_rpc_ms", f.Arm, n.Arm, xf, xn, stats.LessIsFaster)
				text = fmt.Sprintf("Under %s, %s starts fastest, %.2f× faster than %s (%s vs %s ms median; %s/%s %s, p=%s, n=%d+%d)",
					b, f.Arm, 1 / *cr.Ratio, n.Arm, ms(f.MedianMs), ms(n.MedianMs), f.Arm, n.Arm, ratioText(cr), pText(cr.PValue), cr.NA, cr.NB)
			}
			dcf, df, okf := r.densityFor(c, f.Arm, b)
			dcn, dn, okn := r.densityFor(c, n.Arm, b)
			if okf && okn {
				ct.add(r.ref(dcf, "density")+" "+f.Arm+"/"+df.Budget, dcf.densityDoubt(df))
				ct.add(r.ref(dcn, "density")+" "+n.Arm+"/"+dn.Budget, dcn.densityDoubt(dn))
				d := float64(df.PSSBytes - dn.PSSBytes)
				switch {
				case math.Abs(d) < 0.05*float64(max(df.PSSBytes, dn.PSSBytes)):
					text += fmt.Sprintf("; both take the same PSS per idle instance (%s vs %s)", mib(df.PSSBytes), mib(dn.PSSBytes))
				case d > 0:
					text += fmt.Sprintf("; %s costs %s more PSS per idle instance than %s (%s vs %s)", f.Arm, mib(int64(d)), n.Arm, mib(df.PSSBytes), mib(dn.PSSBytes))
				default:
					text += fmt.Sprintf("; %s also takes %s less PSS per idle instance than %s (%s vs %s)", f.Arm, mib(int64(-d)), n.Arm, mib(df.PSSBytes), mib(dn.PSSBytes))
				}
			}
			if f.SizeBytes > 0 && n.SizeBytes > 0 && f.SizeBytes != n.SizeBytes {
				text += fmt.Sprintf("; binaries: %s %s, %s %s", f.Arm, mib(f.SizeBytes), n.Arm, mib(n.SizeBytes))
			}
			if slow.Arm != n.Arm {
				ct.add(cs+" "+slow.Arm+"/"+b, slow.Doubt())
				text += fmt.Sprintf("; %s is slowest at %s ms median (%.1f× %s)", slow.Arm, ms(slow.MedianMs), slow.MedianMs/f.MedianMs, f.Arm)
			}
			out = append(out, ct.rec("%s", text))
		}
	}
	// Does the winner change with the budget? Asked within one campaign
	// (one server, one set of arms). Only distinct winners count: a budget
	// where several arms start alike agrees with any of them.
	for _, c := range r.Campaigns {
		cw := wins[c]
		if len(cw) < 2 {
			continue
		}
		common := map[string]int{}
		for _, w := range cw {
			for _, a := range w.arms {
				common[a]++
			}
		}
		shared := false
		for _, n := range common {
			if n == len(cw) {
				shared = true
			}
		}
		if !shared {
			var ct cite
			var parts []string
			for _, w := range cw {
				parts = append(parts, strings.Join(w.arms, "/")+" under "+w.budget)
				for _, a := range w.arms {
					ct.add(w.ref+" "+a+"/"+w.budget, "")
				}
			}
			out = append(out, ct.rec("In %s the fastest-starting arm changes with the budget: %s; choose the build for the budget your pods get", r.ref(c, "coldstart"), strings.Join(parts, ", ")))
		}
	}

	for _, c := range r.Campaigns {
		if len(c.Density) < 2 {
			continue
		}
		d, _, alikeText, ok := r.densest(c, nil)
		if !ok {
			continue
		}
		ds := r.ref(c, "density")
		w := d
		for _, x := range c.Density {
			if x.Budget == d.Budget && x.PSSBytes > w.PSSBytes {
				w = x
			}
		}
		var ct cite
		ct.add(ds+" "+d.Arm+"/"+d.Budget, c.densityDoubt(d))
		ct.add(ds+" "+w.Arm+"/"+w.Budget, c.densityDoubt(w))
		text := fmt.Sprintf("%s packs densest: %s PSS per idle instance against %s for %s (%.1f×); 1 GiB holds about %d idle %s instances or %d %s",
			d.Arm, mib(d.PSSBytes), mib(w.PSSBytes), w.Arm, float64(w.PSSBytes)/float64(d.PSSBytes),
			(1<<30)/d.PSSBytes, d.Arm, (1<<30)/max(w.PSSBytes, 1), w.Arm)
		if d.RSSBytes > w.RSSBytes {
			text += fmt.Sprintf("; RSS ranks them the other way (%s vs %s): RSS counts shared pages in full for every instance, PSS divides them", mib(d.RSSBytes), mib(w.RSSBytes))
		}
		if len(alikeText) > 0 {
			text += fmt.Sprintf("; no difference worth acting on detected between %s and %s", d.Arm, strings.Join(alikeText, ", "))
		}
		out = append(out, ct.rec("%s", text))
	}

	// Start against density, per cold-start campaign: the density campaign
	// of the same server that shares the most arms with it, and only the
	// arms both measured.
	for _, c := range r.Campaigns {
		cw := wins[c]
		if len(cw) == 0 {
			continue
		}
		arms := map[string]bool{}
		for _, s := range c.Summaries {
			arms[s.Arm] = true
		}
		var dc *Campaign
		best := 1
		for _, x := range r.Campaigns {
			n := 0
			for _, d := range x.Density {
				if arms[d.Arm] && sameBinary(c, x, d.Arm) {
					n++
				}
			}
			if n > best {
				dc, best = x, n
			}
		}
		if dc == nil {
			continue
		}
		common := map[string]bool{}
		for _, d := range dc.Density {
			if arms[d.Arm] && sameBinary(c, dc, d.Arm) {
				common[d.Arm] = true
			}
		}
		d, alike, _, ok := r.densest(dc, common)
		if !ok {
			continue
		}
		var ct cite
		ct.add(r.ref(dc, "density")+" "+d.Arm+"/"+d.Budget, dc.densityDoubt(d))
		var agree, differ []string
		for _, w := range cw {
			a := ""
			for _, x := range alike {
				if contains(w.arms, x) {
					a = x
					break
				}
			}
			if a != "" {
				agree = append(agree, w.budget)
				ct.add(w.ref+" "+a+"/"+w.budget, "")
			} else {
				differ = append(differ, strings.Join(w.arms, "/")+" under "+w.budget)
				for _, x := range w.arms {
					ct.add(w.ref+" "+x+"/"+w.budget, "")
				}
			}
		}
		of := fmt.Sprintf("Of the arms in %s and %s", r.ref(c, "coldstart"), r.ref(dc, "density"))
		if len(differ) == 0 {
			alikeNote := ""
			if len(alike) > 1 {
				alikeNote = " (or alike with it: " + strings.Join(alike[1:], ", ") + ")"
			}
			out = append(out, ct.rec("%s, no trade-off: %s packs densest%s and starts fastest (or alike with the fastest) under every budget measured: %s", of, d.Arm, alikeNote, strings.Join(agree, ", ")))
		} else {
			out = append(out, ct.rec("%s, a trade-off: %s packs densest, but the fastest start is %s; choose by what costs you more, first-request latency after scale-from-zero or idle memory", of, d.Arm, strings.Join(differ, ", ")))
		}
	}

	for _, c := range r.Campaigns {
		out = append(out, r.steadyRecs(c)...)
	}
	return append(out, r.pullRecs()...)
}

type shape struct {
	scenario             string
	payload, conc, conns int
	depth                int
	rate                 float64
}

func shapeOf(s SteadyRow) shape {
	return shape{s.Scenario, s.PayloadBytes, s.Concurrency, s.Conns, s.Depth, s.RateReq}
}

func (s shape) String() string {
	out := fmt.Sprintf("%s %dB c%d", s.scenario, s.payload, s.conc)
	if s.conns > 1 {
		out += fmt.Sprintf(" conns%d", s.conns)
	}
	if s.rate > 0 {
		out += fmt.Sprintf(" %.0f/s", s.rate)
	}
	return out
}

func (r *Report) steadyRecs(c *Campaign) []Recommendation {
	if len(c.Steady) == 0 {
		return nil
	}
	st := r.ref(c, "steady")
	var out []Recommendation
	type bp struct{ budget, proto string }
	var groups []bp
	seen := map[bp]bool{}
	for _, s := range c.Steady {
		k := bp{s.Budget, s.Protocol}
		if !seen[k] {
			seen[k] = true
			groups = append(groups, k)
		}
	}
	for _, g := range groups {
		byArm := map[string]map[shape]SteadyRow{}
		var arms []string
		for _, s := range c.Steady {
			if s.Budget != g.budget || s.Protocol != g.proto || s.CallsPerS <= 0 {
				continue
			}
			if byArm[s.Arm] == nil {
				byArm[s.Arm] = map[shape]SteadyRow{}
				arms = append(arms, s.Arm)
			}
			byArm[s.Arm][shapeOf(s)] = s
		}
		if len(arms) < 2 {
			continue
		}
		var common []shape
		for sh := range byArm[arms[0]] {
			all := true
			for _, a := range arms[1:] {
				if _, ok := byArm[a][sh]; !ok {
					all = false
				}
			}
			if all {
				common = append(common, sh)
			}
		}
		if len(common) == 0 {
			continue
		}
		sort.Slice(common, func(i, j int) bool { return common[i].String() < common[j].String() })
		var names []string
		for _, sh := range common {
			names = append(names, sh.String())
		}
		geo := func(a string, f func(SteadyRow) float64) float64 {
			sum := 0.0
			for _, sh := range common {
				sum += math.Log(math.Max(f(byArm[a][sh]), 1e-9))
			}
			return math.Exp(sum / float64(len(common)))
		}
		cpu := func(s SteadyRow) float64 { return s.ServerCPUUsPerCall }
		metered := true // every arm's server CPU was read on every common step
		for _, a := range arms {
			for _, sh := range common {
				if byArm[a][sh].ServerCPUUsPerCall <= 0 {
					metered = false
				}
			}
		}
		sorted := append([]string(nil), arms...)
		sort.SliceStable(sorted, func(i, j int) bool { return geo(sorted[i], cpu) < geo(sorted[j], cpu) })
		b, w := sorted[0], sorted[len(sorted)-1]
		var ct cite
		for _, a := range []string{b, w} {
			for _, sh := range common {
				ct.add(fmt.Sprintf("%s %s/%s/%s/%s", st, a, g.budget, g.proto, sh), byArm[a][sh].Doubt())
			}
		}
		if metered {
			sh := common[0]
			bb, ww := byArm[b][sh], byArm[w][sh]
			cr, tested := r.steadyTest(c, bb, ww, "server_cpu_us_per_call")
			switch {
			case !tested:
				out = append(out, ct.rec("Under %s over %s, %s: %s spends %s µs server CPU per call at %s, %s %s µs",
					g.budget, g.proto, oneWindow, b, us(bb.ServerCPUUsPerCall), sh, w, us(ww.ServerCPUUsPerCall)))
			case cr.Actionable:
				out = append(out, ct.rec("Under %s over %s, %s spends the least server CPU per call at %s: %s µs against %s µs for %s (%s/%s %s, p=%s, %d+%d rounds)",
					g.budget, g.proto, b, sh, numText(cr.MedianA), numText(cr.MedianB), w, b, w, ratioText(cr), pText(cr.PValue), cr.NA, cr.NB))
			default:
				out = append(out, ct.rec("Under %s over %s, no difference detected worth acting on in server CPU per call at %s between %s and %s (%s vs %s µs; %s/%s %s, p=%s, %d+%d rounds); detecting a %.0f%% difference would take about %s rounds",
					g.budget, g.proto, sh, b, w, numText(cr.MedianA), numText(cr.MedianB), b, w, ratioText(cr), pText(cr.PValue), cr.NA, cr.NB, 100*r.minEffect(), runsText(cr.RunsToDetect)))
			}
		}

		// Throughput: the common closed-loop step with the most calls in flight.
		var top *shape
		for i, sh := range common {
			if sh.scenario != "throughput" && sh.scenario != "stream" {
				continue
			}
			if top == nil || sh.conc > top.conc || (sh.conc == top.conc && sh.scenario == "throughput") {
				top = &common[i]
			}
		}
		if top != nil {
			sort.SliceStable(sorted, func(i, j int) bool {
				return byArm[sorted[i]][*top].CallsPerS > byArm[sorted[j]][*top].CallsPerS
			})
			hi, lo := byArm[sorted[0]][*top], byArm[sorted[len(sorted)-1]][*top]
			var ct cite
			ct.add(fmt.Sprintf("%s %s/%s/%s/%s", st, hi.Arm, g.budget, g.proto, top), hi.Doubt())
			ct.add(fmt.Sprintf("%s %s/%s/%s/%s", st, lo.Arm, g.budget, g.proto, top), lo.Doubt())
			cr, tested := r.steadyTest(c, hi, lo, "calls_per_s")
			switch {
			case !tested:
				out = append(out, ct.rec("Under %s over %s at %d calls in flight, %s: %s %.0f calls/s, %s %.0f calls/s",
					g.budget, g.proto, top.conc, oneWindow, hi.Arm, hi.CallsPerS, lo.Arm, lo.CallsPerS))
			case cr.Actionable:
				out = append(out, ct.rec("Under %s over %s at %d calls in flight, %s serves the most: %s calls/s against %s for %s (%s/%s %s, p=%s, %d+%d rounds), p99 %s vs %s µs",
					g.budget, g.proto, top.conc, hi.Arm, numText(cr.MedianA), numText(cr.MedianB), lo.Arm, hi.Arm, lo.Arm, ratioText(cr), pText(cr.PValue), cr.NA, cr.NB, us(hi.P99Us), us(lo.P99Us)))
			default:
				out = append(out, ct.rec("Under %s over %s at %d calls in flight, no difference detected worth acting on between %s and %s (%s vs %s calls/s; %s/%s %s, p=%s, %d+%d rounds); detecting a %.0f%% difference would take about %s rounds",
					g.budget, g.proto, top.conc, hi.Arm, lo.Arm, numText(cr.MedianA), numText(cr.MedianB), hi.Arm, lo.Arm, ratioText(cr), pText(cr.PValue), cr.NA, cr.NB, 100*r.minEffect(), runsText(cr.RunsToDetect)))
			}
		}
	}
	out = append(out, r.protocolRecs(c, st)...)
	out = append(out, r.loadRecs(c, st)...)
	return out
}

// loadRecs says, for the first arm of each protocol, how server CPU per
// call changes with the calls in flight, and how calls/s and CPU per call
// change with the budget: what sizing a budget has to know.
func (r *Report) loadRecs(c *Campaign, st string) []Recommendation {
	var out []Recommendation
	ref := func(s SteadyRow) string {
		return fmt.Sprintf("%s %s/%s/%s/%s", st, s.Arm, s.Budget, s.Protocol, shapeOf(s))
	}
	for _, proto := range budgetsOf(c.Steady, func(s SteadyRow) string { return s.Protocol }) {
		var arm string
		for _, s := range c.Steady {
			if s.Protocol == proto {
				arm = s.Arm
				break
			}
		}
		budgets := budgetsOf(c.Steady, func(s SteadyRow) string { return s.Budget })
		// Concurrency: closed-loop unary steps in the first budget.
		var lo, hi *SteadyRow
		for i, s := range c.Steady {
			if s.Arm != arm || s.Protocol != proto || s.Budget != budgets[0] || s.ServerCPUUsPerCall <= 0 ||
				(s.Scenario != "sequential" && s.Scenario != "throughput") {
				continue
			}
			if lo == nil || s.Concurrency < lo.Concurrency {
				lo = &c.Steady[i]
			}
			if hi == nil || s.Concurrency > hi.Concurrency {
				hi = &c.Steady[i]
			}
		}
		if lo != nil && hi != nil && hi.Concurrency > lo.Concurrency {
			var ct cite
			ct.add(ref(*lo), lo.Doubt())
			ct.add(ref(*hi), hi.Doubt())
			ratio := lo.ServerCPUUsPerCall / hi.ServerCPUUsPerCall
			advice := ""
			if ratio >= 1.5 || ratio <= 1/1.5 {
				advice = ": size CPU budgets from the load's real concurrency, not from one-at-a-time calls"
			}
			out = append(out, ct.rec("For %s over %s under %s, server CPU per call goes from %s µs at %d in flight to %s µs at %d (%.1f×) while p50 goes from %s to %s µs%s",
				arm, proto, budgets[0], us(lo.ServerCPUUsPerCall), lo.Concurrency, us(hi.ServerCPUUsPerCall), hi.Concurrency,
				ratio, us(lo.P50Us), us(hi.P50Us), advice))
		}
		// Budgets: the most-in-flight throughput step measured under every budget.
		if len(budgets) < 2 {
			continue
		}
		by := map[string]SteadyRow{}
		for _, s := range c.Steady {
			if s.Arm != arm || s.Protocol != proto || s.Scenario != "throughput" {
				continue
			}
			if cur, ok := by[s.Budget]; !ok || s.Concurrency > cur.Concurrency {
				by[s.Budget] = s
			}
		}
		var parts []string
		var ct cite
		conc := -1
		for _, b := range budgets {
			s, ok := by[b]
			if !ok || (conc >= 0 && s.Concurrency != conc) {
				parts = nil
				break
			}
			conc = s.Concurrency
			ct.add(ref(s), s.Doubt())
			parts = append(parts, fmt.Sprintf("%s: %.0f calls/s at %s µs CPU per call", b, s.CallsPerS, us(s.ServerCPUUsPerCall)))
		}
		if len(parts) == len(budgets) {
			first, last := by[budgets[0]], by[budgets[len(budgets)-1]]
			out = append(out, ct.rec("For %s over %s at %d in flight, the budget moves throughput %.2f× from %s to %s (%s)",
				arm, proto, conc, last.CallsPerS/first.CallsPerS, budgets[0], budgets[len(budgets)-1], strings.Join(parts, "; ")))
		}
	}
	return out
}

// protocolRecs compares gRPC with each HTTP protocol on matching steps.
func (r *Report) protocolRecs(c *Campaign, st string) []Recommendation {
	var out []Recommendation
	for _, p := range pairs(c) {
		g, h := p[0], p[1]
		var ct cite
		ct.add(fmt.Sprintf("%s %s/%s/%s/%s", st, g.Arm, g.Budget, g.Protocol, shapeOf(g)), g.Doubt())
		ct.add(fmt.Sprintf("%s %s/%s/%s/%s", st, h.Arm, h.Budget, h.Protocol, shapeOf(h)), h.Doubt())
		faster := "gRPC"
		ratio := h.P50Us / g.P50Us
		if ratio < 1 {
			faster, ratio = h.Protocol, 1/ratio
		}
		cr, tested := r.steadyTest(c, h, g, "p50_us")
		figures := fmt.Sprintf("gRPC %s µs vs %s %s µs, at %s vs %s µs server CPU per call and %.0f vs %.0f calls/s",
			us(g.P50Us), h.Protocol, us(h.P50Us), us(g.ServerCPUUsPerCall), us(h.ServerCPUUsPerCall), g.CallsPerS, h.CallsPerS)
		switch {
		case !tested:
			out = append(out, ct.rec("For %s under %s (%s), %s answered %.1f× sooner at p50 in one window each (not tested; `steady run --rounds 5` can): %s",
				g.Arm, g.Budget, shapeOf(g), faster, ratio, figures))
		case cr.Actionable:
			out = append(out, ct.rec("For %s under %s (%s), %s answers %.1f× sooner at p50 (%s/gRPC p50 %s, p=%s, %d+%d rounds): %s",
				g.Arm, g.Budget, shapeOf(g), faster, ratio, h.Protocol, ratioText(cr), pText(cr.PValue), cr.NA, cr.NB, figures))
		default:
			out = append(out, ct.rec("For %s under %s (%s), no p50 difference detected worth acting on between gRPC and %s (%s/gRPC %s, p=%s, %d+%d rounds): %s",
				g.Arm, g.Budget, shapeOf(g), h.Protocol, h.Protocol, ratioText(cr), pText(cr.PValue), cr.NA, cr.NB, figures))
		}
	}
	return out
}

// pairs matches each gRPC row with the other protocols' rows of the same
// arm, budget, scenario, payload and concurrency; only the first arm's
// sequential step (or its first step) per budget, to keep the list short.
func pairs(c *Campaign) [][2]SteadyRow {
	var out [][2]SteadyRow
	done := map[string]bool{}
	for _, pref := range []string{"sequential", ""} {
		for _, g := range c.Steady {
			if g.Protocol != "grpc" || (pref != "" && g.Scenario != pref) || done[g.Budget] {
				continue
			}
			found := false
			for _, h := range c.Steady {
				if h.Protocol == "grpc" || h.Arm != g.Arm || h.Budget != g.Budget || h.Scenario != g.Scenario ||
					h.PayloadBytes != g.PayloadBytes || h.Concurrency != g.Concurrency || g.P50Us <= 0 || h.P50Us <= 0 {
					continue
				}
				out = append(out, [2]SteadyRow{g, h})
				found = true
			}
			if found {
				done[g.Budget] = true
			}
		}
	}
	return out
}

// alikeCold: two cold-start rows are not told apart unless the U test over
// their samples finds a difference at the report's level that is at least
// the minimum effect. Without samples nothing is told apart.
func (r *Report) alikeCold(samples map[[2]string][]float64, a, b Summary) bool {
	xa, xb := samples[[2]string{a.Arm, a.Budget}], samples[[2]string{b.Arm, b.Budget}]
	if len(xa) == 0 || len(xb) == 0 {
		return true
	}
	return !stats.Compare(xa, xb, r.confidence()).Actionable(r.minEffect())
}

func runsText(n int) string {
	if n <= 0 {
		return "an unknown number of"
	}
	return fmt.Sprint(n)
}

// oneWindow says why a steady campaign without rounds ranks nothing.
const oneWindow = "each arm was measured in one window, so steady cannot tell the arms apart (not tested; `steady run --rounds 5` can)"

// steadyTest compares two steady rows of one campaign on a metric over
// their rounds; false when the campaign has no rounds for them.
func (r *Report) steadyTest(c *Campaign, a, b SteadyRow, metric string) (ComparisonRow, bool) {
	var xa, xb []SteadyRound
	for _, s := range c.SteadyRounds {
		switch {
		case sameStep(s.SteadyRow, a):
			xa = append(xa, s)
		case sameStep(s.SteadyRow, b):
			xb = append(xb, s)
		}
	}
	for _, m := range steadyMetrics {
		if m.name != metric {
			continue
		}
		va, vb := roundValues(xa, m.get), roundValues(xb, m.get)
		if len(va) == 0 || len(vb) == 0 {
			return ComparisonRow{}, false
		}
		return r.compare("arms", c.Label, "", metric, a.Arm, b.Arm, va, vb, m.sense), true
	}
	return ComparisonRow{}, false
}

func sameStep(x, y SteadyRow) bool {
	return x.Arm == y.Arm && x.Budget == y.Budget && x.Protocol == y.Protocol && shapeOf(x) == shapeOf(y)
}

func ms(v float64) string {
	switch {
	case v < 10:
		return fmt.Sprintf("%.2f", v)
	case v < 100:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

func us(v float64) string { return ms(v) }

func mib(b int64) string {
	return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
}
