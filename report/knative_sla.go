package report

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/coldstart-go/coldstart/internal/stats"
	"github.com/coldstart-go/coldstart/record"
)

// knativeSLA is one size's limits in Knative's own scale-from-zero
// benchmark (test/performance/benchmarks/scale-from-zero, checkSLA):
// N Services requested at once, each one's time until it answers, whose
// p95 and max must stay within these.
type knativeSLA struct {
	n            int
	p95Ms, maxMs float64
}

// knativeSLAs are the benchmark's limits since serving #14662 (Dec 2023);
// it defines none for other sizes.
var knativeSLAs = []knativeSLA{
	{1, 50, 50},
	{5, 50, 50},
	{25, 2000, 5000},
	{100, 25000, 25000},
}

// podStartupSLOMs is Kubernetes' pod-startup SLO (sig-scalability): p99
// of pod created → all containers started, image pulls excluded, within
// 5 s per cluster-day.
const podStartupSLOMs = 5000

// knativeParallelSLA writes, for a Knative --parallel campaign, each arm
// and N against Knative's benchmark SLAs (met in how many counted rounds)
// and the pods' own start against Kubernetes' pod-startup SLO, with the
// longest step of the median instance: where an N's time goes.
func (r *Report) knativeParallelSLA(m *mdw, c *Campaign) {
	if !c.Knative() || len(c.Bursts) == 0 {
		return
	}
	if c.Provenance.Notes["burst_requests"] != "" {
		requestBursts(m, c)
		return
	}
	type key struct {
		arm string
		n   int
	}
	var order []key
	rounds := map[key][]Burst{}
	// unfit are the bursts, warm-up ones too, that the cluster could not
	// hold at once: in whichever round one was, N at once does not fit.
	unfit := map[key][]Burst{}
	for _, b := range c.Bursts {
		if b.Warmup && !b.DidNotFit() {
			continue
		}
		k := key{b.Arm, b.N}
		if _, ok := rounds[k]; !ok {
			if _, ok := unfit[k]; !ok {
				order = append(order, k)
			}
		}
		if b.DidNotFit() {
			unfit[k] = append(unfit[k], b)
			continue
		}
		rounds[k] = append(rounds[k], b)
	}
	podStart := map[key][]float64{}
	phases := map[key]map[string][]float64{}
	for _, in := range c.BurstInstances {
		if in.Warmup || in.Error != "" {
			continue
		}
		k := key{in.Arm, in.N}
		at := map[string]float64{}
		for _, p := range in.Phases {
			at[p.Name] = p.Ms
		}
		if from, ok := at["pod_created"]; ok {
			if to, ok := at["container_started"]; ok {
				podStart[k] = append(podStart[k], to-from)
			}
		}
		if phases[k] == nil {
			phases[k] = map[string][]float64{}
		}
		for n, v := range at {
			phases[k][n] = append(phases[k][n], v)
		}
	}
	armAt := map[string]int{} // arms in the campaign's order, then by N
	for _, s := range c.BurstSummaries {
		if _, ok := armAt[s.Arm]; !ok {
			armAt[s.Arm] = len(armAt)
		}
	}
	for _, k := range order {
		if _, ok := armAt[k.arm]; !ok {
			armAt[k.arm] = len(armAt)
		}
	}
	slices.SortStableFunc(order, func(a, b key) int {
		if a.arm != b.arm {
			return armAt[a.arm] - armAt[b.arm]
		}
		return a.n - b.n
	})
	held := heldText(c)
	var rows [][]string
	var stops []string
	stopped := map[string]bool{}
	for _, k := range order {
		bs := rounds[k]
		if u := unfit[k]; len(u) > 0 {
			text := fitText(held, u[0])
			if !stopped[k.arm] {
				stopped[k.arm] = true
				stops = append(stops, fmt.Sprintf("%s: %s", k.arm, text))
			}
			if len(bs) == 0 {
				rows = append(rows, []string{k.arm, strconv.Itoa(k.n), "0", "–", "–", "did not fit: " + text, "–", "–"})
				continue
			}
		}
		var p95s, maxs []float64
		for _, b := range bs {
			if b.Failed == 0 {
				p95s, maxs = append(p95s, b.P95Ms), append(maxs, b.MaxMs)
			}
		}
		sla := "no SLA at this N"
		i := slices.IndexFunc(knativeSLAs, func(s knativeSLA) bool { return s.n == k.n })
		if i >= 0 {
			s := knativeSLAs[i]
			met := 0
			for j := range p95s {
				if p95s[j] <= s.p95Ms && maxs[j] <= s.maxMs {
					met++
				}
			}
			verdict := "missed"
			if met == len(bs) {
				verdict = "met"
			}
			sla = fmt.Sprintf("p95 ≤ %s, max ≤ %s: %s (%d of %d rounds)", limitText(s.p95Ms), limitText(s.maxMs), verdict, met, len(bs))
		}
		for _, u := range unfit[k] {
			sla += fmt.Sprintf("; round %d did not fit: %s", u.Run, fitText(held, u))
		}
		pod := "–"
		if xs := podStart[k]; len(xs) > 0 {
			p99 := record.Quantiles(xs, 0.99)[0]
			v := "within"
			if p99 > podStartupSLOMs {
				v = "beyond"
			}
			pod = fmt.Sprintf("%s (%s 5 s)", ms(p99), v)
		}
		med := map[string]float64{}
		for n, xs := range phases[k] {
			med[n] = stats.MedianCI(xs, r.confidence()).Value
		}
		rows = append(rows, []string{k.arm, strconv.Itoa(k.n), strconv.Itoa(len(bs)), msOrDashSlice(p95s), msOrDashSlice(maxs), sla, pod, dominantStep(med)})
	}
	if len(rows) == 0 {
		return
	}
	m.p("**Against Knative's own benchmark and Kubernetes' SLO** (`%s`)\n\n", c.Label)
	m.table([]string{"arm", "N", "rounds", "p95 ms (median of rounds)", "max ms (median of rounds)", "Knative benchmark SLA", "pod created → started, p99 ms (Kubernetes SLO)", "longest step, median instance"}, rows)
	if len(stops) > 0 {
		m.p("**Where the cluster stopped:** %s. A burst stops at the first of its pods the scheduler cannot place (PodScheduled False, Unschedulable, in the scheduler's words), since every pod of the campaign was gone at t0: placing it would wait for other pods of the burst to scale back to zero, and its time would be queueing, not N at once. No larger N of that arm was run after it.\n\n", strings.Join(stops, "; "))
	}
	m.p("N Services of one arm were scaled from zero at once, each first proven at zero (its revision's Deployment at 0 replicas and no pod, seen by synced informers; each instance's `zero_at_t0` records it), and probed together from one t0 through the activator. Knative's benchmark (`test/performance/benchmarks/scale-from-zero`) holds each run's p95 and max of the Services' time to answer to the limits shown, defined for N = 1, 5, 25 and 100; it never checks that no pod existed at t0. Kubernetes' pod-startup SLO counts pod created → containers started, image pulls excluded, p99 ≤ 5 s per cluster-day.\n\n")
}

// heldText names what held a burst's pods: "the node" on a single-node
// cluster, else "the cluster".
func heldText(c *Campaign) string {
	if c.Provenance.Notes["cluster_nodes"] == "1" {
		return "the node"
	}
	return "the cluster"
}

// fitText says how much of a burst that did not fit the cluster held at
// once, and the scheduler's reason: "the node held 2 of 5 at once: N=5
// did not fit (pod X: Unschedulable: 0/1 nodes are available: 1
// Insufficient cpu)".
func fitText(held string, b Burst) string {
	k := "?"
	if b.ScheduledAtOnce != nil {
		k = strconv.Itoa(*b.ScheduledAtOnce)
	}
	return fmt.Sprintf("%s held %s of %d at once: N=%d did not fit (%s)", held, k, b.N, b.N, strings.TrimSuffix(b.Unschedulable, "."))
}

// msOrDashSlice is the median of xs in ms, or "–" for none.
func msOrDashSlice(xs []float64) string {
	if len(xs) == 0 {
		return "–"
	}
	return ms(stats.MedianCI(xs, 0.95).Value)
}

// limitText is a limit as the benchmark states it: "50 ms", "2 s".
func limitText(msv float64) string {
	if msv >= 1000 {
		return fmt.Sprintf("%g s", msv/1000)
	}
	return fmt.Sprintf("%g ms", msv)
}

// requestBursts writes a --burst-requests campaign's counted bursts: per
// burst, the pods the autoscaler made for R requests at one Service at
// zero, when the first and the last were Ready, and when the requests
// were answered.
func requestBursts(m *mdw, c *Campaign) {
	var rows [][]string
	for _, b := range c.Bursts {
		if b.Warmup {
			continue
		}
		ready := b.PodsReadyMs()
		first, last := "–", "–"
		if len(ready) > 0 {
			first, last = ms(slices.Min(ready)), ms(slices.Max(ready))
		}
		cc := c.Provenance.Notes["container_concurrency_"+b.Arm]
		made := fmt.Sprintf("%d (%d Ready)", len(b.Pods), len(ready))
		rows = append(rows, []string{b.Arm, cc, strconv.Itoa(b.Run), strconv.Itoa(b.N), made, first, last, ms(b.P50Ms), ms(b.P95Ms), ms(b.MaxMs)})
	}
	if len(rows) == 0 {
		return
	}
	m.p("**One Service under a burst of requests** (`%s`)\n\n", c.Label)
	m.table([]string{"arm", "containerConcurrency", "round", "requests", "pods made", "first pod Ready, ms", "last pod Ready, ms", "answers p50 ms", "p95 ms", "last ms"}, rows)
	m.p("All requests were sent at once at the arm's Service at zero (t0), each one attempt held by the activator until a pod took it; pods are those the watch showed after t0, each Ready when first seen so.\n\n")
}
