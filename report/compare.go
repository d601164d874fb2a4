package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/coldstart-go/coldstart/internal/stats"
	"github.com/coldstart-go/coldstart/record"
)

// SteadyRound is one measured window of a steady step: `steady run
// --rounds R` writes one per arm, budget, step and round ("step_round"),
// beside the step row that holds the medians over rounds.
type SteadyRound struct {
	SteadyRow
	Round int `json:"round"`
}

// ComparisonRow is one comparison the report makes: metric of a against
// b, as the ratio a/b with its interval, the p-value of Test and a
// verdict. JSON keys are what `coldstart report -o json` writes.
type ComparisonRow struct {
	// Kind is what is compared: "arms", "variants" (a variant against
	// its own arm), "budgets", "protocols" or "campaigns"; Campaign the
	// results file(s) the samples come from.
	Kind     string `json:"kind"`
	Campaign string `json:"campaign"`
	// Scope is what the two sides share ("budget=cpus=0",
	// "arm=static budget=cpus=0 sequential 64B c1").
	Scope string `json:"scope"`
	// Metric names the figure with its unit ("first_rpc_ms").
	Metric string `json:"metric"`
	A      string `json:"a"`
	B      string `json:"b"`
	// MedianA and MedianB are the two samples' medians.
	MedianA *float64 `json:"median_a"`
	MedianB *float64 `json:"median_b"`
	// Ratio is a over b (Hodges–Lehmann); null when undefined.
	Ratio       *float64 `json:"ratio"`
	RatioCILow  *float64 `json:"ratio_ci_low"`
	RatioCIHigh *float64 `json:"ratio_ci_high"`
	PValue      float64  `json:"p_value"`
	// Test is the test behind PValue and the interval:
	// stats.PairedWilcoxon ("paired-wilcoxon", on the per-round ratios,
	// when both sides ran in the same rounds) or stats.MannWhitney
	// ("mann-whitney", unpaired).
	Test string `json:"test"`
	// Verdict is faster, slower, lower, higher or "no difference
	// detected", said of a against b.
	Verdict string `json:"verdict"`
	NA      int    `json:"n_a"`
	NB      int    `json:"n_b"`
	// Confidence is the intervals' level; MinEffect the smallest relative
	// difference a recommendation acts on.
	Confidence float64 `json:"confidence"`
	MinEffect  float64 `json:"min_effect"`
	// Actionable: significant and at least MinEffect in size.
	Actionable bool `json:"actionable"`
	// RunsToDetect estimates the runs per side needed to detect a
	// MinEffect difference at this spread, by Test (0 = unknown).
	RunsToDetect int `json:"runs_to_detect"`
	// LoadBound, on a steady calls/s comparison, says why a side's calls/s
	// is the load's limit rather than the server's (record.SteadyRow.
	// LoadBound, from the median of its rounds): the verdict then holds
	// for the whole loop, client included, not for the server alone.
	LoadBound string `json:"load_bound,omitempty"`

	cmp   stats.Comparison
	sense stats.Sense
}

// confidence and minEffect are the report's settings, defaults filled.
func (r *Report) confidence() float64 {
	if r.Confidence == 0 {
		return stats.DefaultConfidence
	}
	return r.Confidence
}

func (r *Report) minEffect() float64 {
	if r.MinEffect == 0 {
		return stats.DefaultMinEffect
	}
	return r.MinEffect
}

func fp(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// compare builds one row from unpaired samples (Mann–Whitney).
func (r *Report) compare(kind, campaign, scope, metric, a, b string, xa, xb []float64, sense stats.Sense) ComparisonRow {
	conf := r.confidence()
	return r.row(kind, campaign, scope, metric, a, b, xa, xb, stats.Compare(xa, xb, conf),
		stats.RunsToDetect(xa, xb, r.minEffect(), conf, 0.8), sense)
}

// compareRounds builds one row from values keyed by the round they were
// measured in: paired where the rounds pair (stats.CompareRounds), so
// noise that hit a whole round cancels. The medians are over all values.
func (r *Report) compareRounds(kind, campaign, scope, metric, a, b string, xa, xb stats.Rounds, sense stats.Sense) ComparisonRow {
	conf := r.confidence()
	return r.row(kind, campaign, scope, metric, a, b, xa.Values(), xb.Values(), stats.CompareRounds(xa, xb, conf),
		stats.RunsToDetectRounds(xa, xb, r.minEffect(), conf, 0.8), sense)
}

func (r *Report) row(kind, campaign, scope, metric, a, b string, xa, xb []float64, c stats.Comparison, runsToDetect int, sense stats.Sense) ComparisonRow {
	conf := r.confidence()
	return ComparisonRow{
		Kind: kind, Campaign: campaign, Scope: scope, Metric: metric, A: a, B: b,
		MedianA: fp(stats.MedianCI(xa, conf).Value), MedianB: fp(stats.MedianCI(xb, conf).Value),
		Ratio: fp(c.Ratio), RatioCILow: fp(c.RatioLow), RatioCIHigh: fp(c.RatioHigh),
		PValue: c.P, Test: c.Test, Verdict: string(c.Verdict(sense)), NA: c.NA, NB: c.NB,
		Confidence: conf, MinEffect: r.minEffect(), Actionable: c.Actionable(r.minEffect()),
		RunsToDetect: runsToDetect,
		cmp:          c, sense: sense,
	}
}

// DefaultBaseline is the arm others are compared against when the user
// names none and it was measured: what `go build` ships today.
const DefaultBaseline = "default"

// BaselineOf picks the baseline among the arms measured together, in
// their order: the report's Baseline where it is one of them, else
// DefaultBaseline, else the first. "" for no arms.
func (r *Report) BaselineOf(arms []string) string {
	if len(arms) == 0 {
		return ""
	}
	for _, want := range []string{r.Baseline, DefaultBaseline} {
		if want != "" && contains(arms, want) {
			return want
		}
	}
	return arms[0]
}

// Arms lists every arm any campaign measured, in the order first seen.
func (r *Report) Arms() []string {
	var out []string
	for _, c := range r.Campaigns {
		for _, s := range c.Summaries {
			out = appendUnique(out, s.Arm)
		}
		for _, d := range c.Density {
			out = appendUnique(out, d.Arm)
		}
		for _, s := range c.Steady {
			out = appendUnique(out, s.Arm)
		}
		for _, p := range c.Pull {
			out = appendUnique(out, p.Arm)
		}
		for _, t := range c.Traces {
			out = appendUnique(out, t.Arm)
		}
	}
	return out
}

// withBaselineFirst returns arms with the baseline moved to the front, the
// others in their order.
func (r *Report) withBaselineFirst(arms []string) []string {
	b := r.BaselineOf(arms)
	out := []string{b}
	for _, a := range arms {
		if a != b {
			out = append(out, a)
		}
	}
	return out
}

// coldRounds are a campaign's counted first-RPC times by arm and budget,
// keyed by run: the arms (and budgets) of a campaign run interleaved, one
// start each per round.
func coldRounds(c *Campaign) map[[2]string]stats.Rounds {
	return roundsOf(c, coldMetrics["first_rpc_ms"].get)
}

// startupCPURounds are a campaign's counted startup CPU readings by arm
// and budget, keyed by run.
func startupCPURounds(c *Campaign) map[[2]string]stats.Rounds {
	return roundsOf(c, coldMetrics["startup_cpu_ms"].get)
}

func roundsOf(c *Campaign, get func(Sample) (float64, bool)) map[[2]string]stats.Rounds {
	out := map[[2]string]stats.Rounds{}
	for _, s := range c.Samples {
		v, ok := get(s)
		if s.Warmup || s.Error != "" || !ok {
			continue
		}
		k := [2]string{s.Arm, s.Budget}
		if out[k] == nil {
			out[k] = stats.Rounds{}
		}
		out[k][s.Run] = v
	}
	return out
}

// coldSamples are a campaign's counted first-RPC times by arm and budget.
func coldSamples(c *Campaign) map[[2]string][]float64 {
	out := map[[2]string][]float64{}
	for _, s := range c.Samples {
		if s.Warmup || s.Error != "" || s.FirstRPCMs <= 0 {
			continue
		}
		k := [2]string{s.Arm, s.Budget}
		out[k] = append(out[k], s.FirstRPCMs)
	}
	return out
}

// coldMetrics are the cold-start figures compared arm against arm, with
// the readings each counts (failed ones left out) and their sense.
var coldMetrics = map[string]struct {
	get   func(Sample) (float64, bool)
	sense stats.Sense
}{
	"first_rpc_ms": {func(s Sample) (float64, bool) { return s.FirstRPCMs, s.FirstRPCMs > 0 }, stats.LessIsFaster},
	"startup_cpu_ms": {func(s Sample) (float64, bool) {
		if s.StartupCPUMs == nil {
			return 0, false
		}
		return *s.StartupCPUMs, *s.StartupCPUMs > 0
	}, stats.Neutral},
}

// coldRow compares arm a with arm b of cold-start campaign c under budget
// on metric ("first_rpc_ms" or "startup_cpu_ms"), paired by run: a
// campaign's arms start interleaved, one each per round, so noise that
// hit a round cancels (compareRounds, unpaired where too few runs pair).
// It is the one comparison of two arms of a campaign that the comparisons
// table, the Decision and the recommendations all read, so that no verdict
// contradicts the row beside it.
func (r *Report) coldRow(c *Campaign, budget, metric, a, b string) ComparisonRow {
	m := coldMetrics[metric]
	rounds := roundsOf(c, m.get)
	return r.compareRounds("arms", c.Label, "budget="+budget, metric, a, b, rounds[[2]string{a, budget}], rounds[[2]string{b, budget}], m.sense)
}

// densityRow compares the idle PSS of arm a's instances with arm b's in
// density campaign c under budget. An arm's instances run together, one
// arm after another, so equal instance numbers of two arms pair nothing:
// unpaired. Like coldRow, it is the one comparison the table, the
// Decision and the recommendations read.
func (r *Report) densityRow(c *Campaign, budget, a, b string) ComparisonRow {
	var xa, xb []float64
	for _, s := range c.DensitySamples {
		if s.Budget != budget || s.PSSBytes <= 0 {
			continue
		}
		switch s.Arm {
		case a:
			xa = append(xa, float64(s.PSSBytes))
		case b:
			xb = append(xb, float64(s.PSSBytes))
		}
	}
	return r.compare("arms", c.Label, "budget="+budget, "idle_pss_bytes", a, b, xa, xb, stats.Neutral)
}

// Comparisons lists every comparison the report makes: within each
// cold-start campaign every arm against the baseline (BaselineOf) under
// each budget, on first RPC and on startup CPU (coldRow), and every budget
// against the first for each arm, paired by run (compareRounds); within
// each density campaign every arm's idle PSS against the first arm's
// (densityRow); within each steady campaign with rounds, every arm against
// the first on calls/s, p50 and server CPU per call, and each HTTP
// protocol and budget against gRPC and the first (steadyRow); and across
// campaigns, each later campaign's arm and budget against the first one
// holding it (unpaired: their runs are not rounds of one campaign).
func (r *Report) Comparisons() []ComparisonRow {
	var out []ComparisonRow
	type first struct {
		label string
		xs    []float64
	}
	firstSeen := map[[2]string]first{}
	for _, c := range r.Campaigns {
		samples := coldSamples(c)
		if len(samples) == 0 {
			continue
		}
		rounds, cpu := coldRounds(c), startupCPURounds(c)
		arms := budgetsOf(c.Samples, func(s Sample) string { return s.Arm })
		budgets := budgetsOf(c.Samples, func(s Sample) string { return s.Budget })
		for _, b := range budgets {
			base := ""
			for _, a := range r.withBaselineFirst(c.plainArms(arms)) {
				xs := samples[[2]string{a, b}]
				if len(xs) == 0 {
					continue
				}
				if base == "" {
					base = a
					continue
				}
				out = append(out, r.coldRow(c, b, "first_rpc_ms", a, base))
				if len(cpu[[2]string{a, b}]) > 0 && len(cpu[[2]string{base, b}]) > 0 {
					out = append(out, r.coldRow(c, b, "startup_cpu_ms", a, base))
				}
			}
			// Each variant against its own arm, in the same rounds.
			for _, v := range c.variantArms(arms) {
				a, of := v[0], v[1]
				if len(samples[[2]string{a, b}]) == 0 || len(samples[[2]string{of, b}]) == 0 {
					continue
				}
				out = append(out, variantRow(r.coldRow(c, b, "first_rpc_ms", a, of)))
				if len(cpu[[2]string{a, b}]) > 0 && len(cpu[[2]string{of, b}]) > 0 {
					out = append(out, variantRow(r.coldRow(c, b, "startup_cpu_ms", a, of)))
				}
			}
		}
		for _, a := range arms {
			base := ""
			for _, b := range budgets {
				xs := samples[[2]string{a, b}]
				if len(xs) == 0 {
					continue
				}
				if base == "" {
					base = b
					continue
				}
				out = append(out, r.compareRounds("budgets", c.Label, "arm="+a, "first_rpc_ms", b, base, rounds[[2]string{a, b}], rounds[[2]string{a, base}], stats.LessIsFaster))
			}
		}
		for _, a := range arms {
			for _, b := range budgets {
				k := [2]string{a, b}
				xs := samples[k]
				if len(xs) == 0 {
					continue
				}
				f, ok := firstSeen[k]
				if !ok {
					firstSeen[k] = first{c.Label, xs}
					continue
				}
				out = append(out, r.compare("campaigns", f.label+" → "+c.Label, "arm="+a+" budget="+b, "first_rpc_ms", c.Label, f.label, xs, f.xs, stats.LessIsFaster))
			}
		}
	}
	for _, c := range r.Campaigns {
		has := map[[2]string]bool{}
		for _, s := range c.DensitySamples {
			if s.PSSBytes > 0 {
				has[[2]string{s.Arm, s.Budget}] = true
			}
		}
		arms := budgetsOf(c.DensitySamples, func(s DensitySample) string { return s.Arm })
		for _, b := range budgetsOf(c.DensitySamples, func(s DensitySample) string { return s.Budget }) {
			base := ""
			for _, a := range r.withBaselineFirst(c.plainArms(arms)) {
				if !has[[2]string{a, b}] {
					continue
				}
				if base == "" {
					base = a
					continue
				}
				out = append(out, r.densityRow(c, b, a, base))
			}
			for _, v := range c.variantArms(arms) {
				if has[[2]string{v[0], b}] && has[[2]string{v[1], b}] {
					out = append(out, variantRow(r.densityRow(c, b, v[0], v[1])))
				}
			}
		}
	}
	for _, c := range r.Campaigns {
		out = append(out, r.steadyComparisons(c)...)
	}
	return out
}

// steadyMetrics are the steady figures compared round by round, each in
// the kinds of comparison its kinds name: arms against the baseline,
// variants against their own arm (the tail, GC and PSS too: a setting's
// effect, for Settings worth setting) and protocols against each other
// (allocation per call too: what each protocol's stack costs the same
// handler).
var steadyMetrics = []struct {
	name  string
	get   func(SteadyRow) float64
	sense stats.Sense
	kinds []string
}{
	{"calls_per_s", func(s SteadyRow) float64 { return s.CallsPerS }, stats.MoreIsFaster, allSteadyKinds},
	{"p50_us", func(s SteadyRow) float64 { return s.P50Us }, stats.LessIsFaster, allSteadyKinds},
	{"server_cpu_us_per_call", func(s SteadyRow) float64 { return valF(s.ServerCPUUsPerCall) }, stats.Neutral, allSteadyKinds},
	{"alloc_bytes_per_call", func(s SteadyRow) float64 { return deref(s.AllocBytesPerCall) }, stats.Neutral, []string{KindProtocols}},
	{"p99_us", func(s SteadyRow) float64 { return s.P99Us }, stats.LessIsFaster, []string{KindVariants}},
	{"gc_cpu_us_per_call", func(s SteadyRow) float64 { return deref(s.GCCPUUsPerCall) }, stats.Neutral, []string{KindVariants}},
	{"pss_bytes", func(s SteadyRow) float64 { return float64(valI(s.PSSBytes)) }, stats.Neutral, []string{KindVariants}},
}

var allSteadyKinds = []string{"arms", KindVariants, KindProtocols}

// KindProtocols is the kind of a comparison of two protocols loading one
// arm's server on one step.
const KindProtocols = "protocols"

// roundValues are the per-round values of one metric, failed readings
// (zero or less) left out.
func roundValues(rs []SteadyRound, get func(SteadyRow) float64) []float64 {
	var xs []float64
	for _, r := range rs {
		if v := get(r.SteadyRow); v > 0 && !math.IsNaN(v) {
			xs = append(xs, v)
		}
	}
	return xs
}

// roundsOfMetric are roundValues keyed by round.
func roundsOfMetric(rs []SteadyRound, get func(SteadyRow) float64) stats.Rounds {
	out := stats.Rounds{}
	for _, r := range rs {
		if v := get(r.SteadyRow); v > 0 && !math.IsNaN(v) {
			out[r.Round] = v
		}
	}
	return out
}

// steadyRow compares steady rounds xa (named a) with xb (named b) on
// metric. Two arms of one step (same budget, protocol and shape) ran each
// round in turn, so they pair by round (compareRounds), and so do two
// protocols whose rounds steady interleaved (sharedRounds); steps and
// budgets run separately, minutes apart, as did protocols before steady
// interleaved them, so their equal round numbers are no pairs: unpaired.
// It is the one steady comparison that the table and the recommendations
// read.
func (r *Report) steadyRow(kind, campaign, scope, metric, a, b string, xa, xb []SteadyRound) ComparisonRow {
	for _, m := range steadyMetrics {
		if m.name != metric {
			continue
		}
		var row ComparisonRow
		if oneStep(xa, xb) || sharedRounds(xa, xb) {
			row = r.compareRounds(kind, campaign, scope, metric, a, b, roundsOfMetric(xa, m.get), roundsOfMetric(xb, m.get), m.sense)
		} else {
			row = r.compare(kind, campaign, scope, metric, a, b, roundValues(xa, m.get), roundValues(xb, m.get), m.sense)
		}
		if metric == "calls_per_s" {
			for i, x := range [][]SteadyRound{xa, xb} {
				if t := mediansOf(x).LoadBoundText(); t != "" {
					row.LoadBound = []string{a, b}[i] + ": " + t
					break
				}
			}
		}
		return row
	}
	panic("report: no steady metric " + metric)
}

// mediansOf is what LoadBound reads of a side's rounds: the first
// round's step with the median of their server CPU shares.
func mediansOf(rs []SteadyRound) record.SteadyRow {
	if len(rs) == 0 {
		return record.SteadyRow{}
	}
	out := rs[0].SteadyRow
	var shares []float64
	calls := make([]float64, 0, len(rs))
	client := make([]float64, 0, len(rs))
	for _, r := range rs {
		if r.ServerCPUShare != nil {
			shares = append(shares, *r.ServerCPUShare)
		}
		out.ServerCPULimit = max(out.ServerCPULimit, r.ServerCPULimit)
		calls, client = append(calls, r.CallsPerS), append(client, r.ClientCPUUsPerCall)
	}
	out.ServerCPUShare = nil
	if len(shares) > 0 {
		m := stats.MedianCI(shares, stats.DefaultConfidence).Value
		out.ServerCPUShare = &m
	}
	out.CallsPerS = stats.MedianCI(calls, stats.DefaultConfidence).Value
	out.ClientCPUUsPerCall = stats.MedianCI(client, stats.DefaultConfidence).Value
	return out
}

// oneStep: every round of xa and xb is of one budget, protocol and shape
// (their arms may differ).
func oneStep(xa, xb []SteadyRound) bool {
	all := append(xa[:len(xa):len(xa)], xb...)
	for _, s := range all {
		if x := all[0]; s.Budget != x.Budget || s.Protocol != x.Protocol || shapeOf(s.SteadyRow) != shapeOf(x.SteadyRow) {
			return false
		}
	}
	return true
}

// sharedRounds: every round of xa and xb is of one budget, scenario,
// payload, concurrency and rate, and names both sides' protocols among
// those its rounds interleaved (record.SteadyRow.RoundProtocols).
func sharedRounds(xa, xb []SteadyRound) bool {
	if len(xa) == 0 || len(xb) == 0 {
		return false
	}
	pa, pb := xa[0].Protocol, xb[0].Protocol
	all := append(xa[:len(xa):len(xa)], xb...)
	for _, s := range all {
		x := all[0]
		if s.Budget != x.Budget || s.Scenario != x.Scenario || s.PayloadBytes != x.PayloadBytes || s.Concurrency != x.Concurrency || s.RateReq != x.RateReq ||
			!slices.Contains(s.RoundProtocols, pa) || !slices.Contains(s.RoundProtocols, pb) {
			return false
		}
	}
	return true
}

// protocolScope names where two protocols are compared: the arm, the
// budget and the step, and when their connection shapes differ (h3 over
// 4 connections × 8 streams against HTTP/1.1 over 32 connections) each
// side's.
func protocolScope(arm, budget string, a, b string, sa, sb shape) string {
	if sa == sb {
		return fmt.Sprintf("arm=%s budget=%s %s", arm, budget, sa)
	}
	common := sa
	common.conns, common.depth = 0, 0
	return fmt.Sprintf("arm=%s budget=%s %s, %s %s vs %s %s", arm, budget, common, a, connShape(sa), b, connShape(sb))
}

// connShape is a step's connections and what each carries in flight:
// "4 conns × 8".
func connShape(s shape) string {
	return fmt.Sprintf("%d conns × %d", s.conns, max(s.depth, 1))
}

// steadyComparisons compares a steady campaign's rounds (steadyRow): arms
// against the baseline, per budget, protocol and step; the protocols
// against each other, per arm, budget and step (record.ProtocolBefore); each
// budget against the first.
func (r *Report) steadyComparisons(c *Campaign) []ComparisonRow {
	if len(c.SteadyRounds) == 0 {
		return nil
	}
	type key struct {
		arm, budget, proto string
		sh                 shape
	}
	groups := map[key][]SteadyRound{}
	var keys []key
	for _, s := range c.SteadyRounds {
		k := key{s.Arm, s.Budget, string(s.Protocol), shapeOf(s.SteadyRow)}
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], s)
	}
	all := budgetsOf(c.SteadyRounds, func(s SteadyRound) string { return s.Arm })
	arms := r.withBaselineFirst(c.plainArms(all))
	var out []ComparisonRow
	// Arms against the baseline, per budget, protocol and step; each
	// variant against its own arm.
	against := func(kind string, k key, a string) {
		ka := k
		ka.arm = a
		if _, ok := groups[ka]; !ok {
			return
		}
		for _, m := range steadyMetrics {
			if !slices.Contains(m.kinds, kind) {
				continue
			}
			if len(roundValues(groups[ka], m.get)) == 0 || len(roundValues(groups[k], m.get)) == 0 {
				continue
			}
			out = append(out, r.steadyRow(kind, c.Label, fmt.Sprintf("budget=%s %s %s", k.budget, k.proto, k.sh), m.name, a, k.arm, groups[ka], groups[k]))
		}
	}
	for _, k := range keys {
		if k.arm == arms[0] {
			for _, a := range arms[1:] {
				against("arms", k, a)
			}
		}
		for _, v := range c.variantArms(all) {
			if k.arm == v[1] {
				against(KindVariants, k, v[0])
			}
		}
	}
	// Each protocol against each later one (record.ProtocolBefore), per arm,
	// budget and step: the steps of one scenario, payload, concurrency and
	// rate, whatever their connections.
	for _, k := range keys {
		for _, h := range keys {
			if !record.ProtocolBefore(record.Protocol(k.proto), record.Protocol(h.proto)) || h.arm != k.arm || h.budget != k.budget || h.sh.scenario != k.sh.scenario ||
				h.sh.payload != k.sh.payload || h.sh.conc != k.sh.conc || h.sh.rate != k.sh.rate {
				continue
			}
			for _, m := range steadyMetrics {
				if !slices.Contains(m.kinds, KindProtocols) {
					continue
				}
				if len(roundValues(groups[h], m.get)) == 0 || len(roundValues(groups[k], m.get)) == 0 {
					continue
				}
				out = append(out, r.steadyRow(KindProtocols, c.Label, protocolScope(k.arm, k.budget, k.proto, h.proto, k.sh, h.sh), m.name, k.proto, h.proto, groups[k], groups[h]))
			}
		}
	}
	// Budgets against the first, per arm, protocol and step.
	budgets := budgetsOf(c.SteadyRounds, func(s SteadyRound) string { return s.Budget })
	for _, k := range keys {
		if k.budget != budgets[0] {
			continue
		}
		for _, b := range budgets[1:] {
			kb := k
			kb.budget = b
			if _, ok := groups[kb]; !ok {
				continue
			}
			for _, m := range steadyMetrics[:1] {
				if len(roundValues(groups[kb], m.get)) == 0 || len(roundValues(groups[k], m.get)) == 0 {
					continue
				}
				out = append(out, r.steadyRow("budgets", c.Label, fmt.Sprintf("arm=%s %s %s", k.arm, k.proto, k.sh), m.name, b, k.budget, groups[kb], groups[k]))
			}
		}
	}
	return out
}

// JSON writes the comparisons as a JSON array of ComparisonRow.
func (r *Report) JSON(w io.Writer) error {
	rows := r.Comparisons()
	if rows == nil {
		rows = []ComparisonRow{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rows)
}

// ratioText renders "0.86× [0.82, 0.91]".
func ratioText(c ComparisonRow) string {
	if c.Ratio == nil {
		return "–"
	}
	lo, hi := "−∞", "∞"
	if c.RatioCILow != nil {
		lo = fmt.Sprintf("%.3f", *c.RatioCILow)
	}
	if c.RatioCIHigh != nil {
		hi = fmt.Sprintf("%.3f", *c.RatioCIHigh)
	}
	return fmt.Sprintf("%.3f× [%s, %s]", *c.Ratio, lo, hi)
}

func numText(v *float64) string {
	if v == nil {
		return "–"
	}
	return ms(*v)
}

// comparisonTable writes the comparisons of one campaign (or across
// campaigns, for label "").
func (r *Report) comparisonTable(m *mdw, rows []ComparisonRow) {
	var out [][]string
	for _, c := range rows {
		v := c.Verdict
		if c.Verdict != string(stats.NoDifference) && !c.Actionable {
			v += fmt.Sprintf(" (< %.0f%%)", 100*c.MinEffect)
		}
		if c.LoadBound != "" {
			v += " (load-bound)"
		}
		need := ""
		if c.RunsToDetect > 0 && !c.Actionable {
			need = fmt.Sprint(c.RunsToDetect)
		}
		out = append(out, []string{c.Scope, c.Metric, c.A, c.B, numText(c.MedianA), numText(c.MedianB), ratioText(c),
			pText(c.PValue), v, c.Test, fmt.Sprintf("%d+%d", c.NA, c.NB), need})
	}
	m.table([]string{"scope", "metric", "a", "b", "median a", "median b", fmt.Sprintf("a/b [%.0f%% CI]", 100*r.confidence()),
		"p", "verdict (a vs b)", "test", "n", fmt.Sprintf("runs to detect %.0f%%", 100*r.minEffect())}, out)
}

// comparisonsSection writes every comparison, grouped by campaign.
func (r *Report) comparisonsSection(m *mdw) {
	rows := r.Comparisons()
	if len(rows) == 0 {
		return
	}
	m.p("## Comparisons\n\n")
	m.p("Each row tests a against b and estimates a/b with its %.0f%% interval (Hodges–Lehmann, inverting the same test). "+
		"Sides that ran in the same rounds of one campaign compare paired (%s: the Wilcoxon signed-rank test on each round's log ratio, "+
		"which cancels noise that hit the whole round; n counts the pairs); others, and sides with fewer than half their rounds paired, "+
		"unpaired (%s: the two-sided U test over the counted runs or steady rounds). A verdict other than \"%s\" needs p < %.2f; "+
		"recommendations act only on those at least %.0f%% in size. \"runs to detect\" estimates the runs per side needed to detect a %.0f%% "+
		"difference at the spread seen (80%% power).\n\n",
		100*r.confidence(), stats.PairedWilcoxon, stats.MannWhitney, stats.NoDifference, 1-r.confidence(), 100*r.minEffect(), 100*r.minEffect())
	if slices.ContainsFunc(rows, func(c ComparisonRow) bool { return c.LoadBound != "" }) {
		m.p("\"(load-bound)\" marks a calls/s comparison where a side's closed loop left its server below %.0f%% of the CPUs it could use: "+
			"that calls/s is the limit of the load (the generator's CPU, the connections), not of the server, so the verdict holds for "+
			"client and server together; server CPU per call compares the servers alone. The JSON's load_bound says which side and why.\n\n",
			100*record.LoadBoundShare)
	}
	if slices.ContainsFunc(rows, func(c ComparisonRow) bool { return c.Kind == KindVariants }) {
		m.p("A row whose a is a variant (an arm's binary started with more settings: --variant, --sweep; their settings are under Builds) " +
			"sets it against the arm it varies, as it is, measured in the same rounds; the Decision picks among the builds and start arms only.\n\n")
	}
	var labels []string
	by := map[string][]ComparisonRow{}
	for _, c := range rows {
		if _, ok := by[c.Campaign]; !ok {
			labels = append(labels, c.Campaign)
		}
		by[c.Campaign] = append(by[c.Campaign], c)
	}
	for _, l := range labels {
		m.p("### %s\n\n", l)
		rs := by[l]
		sort.SliceStable(rs, func(i, j int) bool { return kindOrder(rs[i].Kind) < kindOrder(rs[j].Kind) })
		r.comparisonTable(m, rs)
	}
}

func kindOrder(k string) int {
	return strings.Index("arms variants budgets protocols campaigns", k)
}

// KindVariants is the kind of a comparison of a variant (--variant,
// --sweep) against its own arm: a setting's effect, beside the arms'
// comparisons with the baseline.
const KindVariants = "variants"

// variantRow is an arms comparison made a variant's: a against the arm it
// varies.
func variantRow(c ComparisonRow) ComparisonRow {
	c.Kind = KindVariants
	return c
}

// pText renders a p-value: three decimals, or "<0.001".
func pText(p float64) string {
	if p < 0.001 {
		return "<0.001"
	}
	return fmt.Sprintf("%.3f", p)
}
