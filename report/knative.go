package report

import (
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"

	"github.com/coldstart-go/coldstart/internal/cpulist"
	"github.com/coldstart-go/coldstart/internal/stats"
)

// knativeSection sets each Knative campaign's cold starts beside the same
// arms started locally (a process, or runc for the image arm) in the
// report's first local cold-start campaign that has them, at its widest
// budget without a quota, and names the step between two phases that took
// longest on the cluster. Nothing is printed without both kinds of
// campaign.
func (r *Report) knativeSection(m *mdw) {
	var kn, local []*Campaign
	for _, c := range r.Campaigns {
		if len(c.Samples) == 0 {
			continue
		}
		if c.Knative() {
			kn = append(kn, c)
		} else {
			local = append(local, c)
		}
	}
	if len(kn) == 0 || len(local) == 0 {
		return
	}
	m.p("## Local and on Knative\n\n")
	for _, k := range kn {
		ks := coldSamples(k)
		var rows [][]string
		var files []string
		for _, s := range sortedSummaries(k.Summaries) {
			xk := ks[[2]string{s.Arm, s.Budget}]
			lc, lb, xl := localFor(local, s.Arm)
			if len(xk) == 0 || len(xl) == 0 {
				continue
			}
			files = appendUnique(files, "`"+filepath.Base(lc.File)+"`")
			cmp := stats.Compare(xk, xl, r.confidence())
			rows = append(rows, []string{s.Arm, lb, r.medianText(xl), r.medianText(xk),
				fmt.Sprintf("%s [%s, %s]", signedMs(cmp.Diff), signedMs(cmp.DiffLow), signedMs(cmp.DiffHigh)),
				dominantStep(s.PhasesMs)})
		}
		if len(rows) == 0 {
			continue
		}
		m.p("### %s\n\n", k.Label)
		m.table([]string{"arm", "local budget", "local: spawn → first RPC, median ms", "Knative: t0 → first RPC, median ms",
			"Knative − local, ms [" + fmt.Sprintf("%.0f%%", 100*r.confidence()) + " CI]", "largest step on Knative (median ms)"}, rows)
		m.p("Local rows from %s (the widest budget without a CPU quota; the image arm runs under runc there), Knative rows from `%s`, both at the report's confidence level; the difference is the Hodges–Lehmann shift with its interval. The difference is what the cluster's path added on the machines named under the two tables above, not a production figure.\n\n",
			strings.Join(files, ", "), filepath.Base(k.File))
		r.podMemoryTable(m, k)
	}
}

// podMemoryTable sets what each arm's idle pod held on Knative, per
// container, beside the same arm's local PSS: on Knative an idle
// instance is the pod, its queue-proxy sidecar and sandbox included.
func (r *Report) podMemoryTable(m *mdw, k *Campaign) {
	if len(k.PodMemory) == 0 {
		return
	}
	var local []*Campaign
	for _, c := range r.Campaigns {
		if !c.Knative() {
			local = append(local, c)
		}
	}
	mibU := func(v *uint64) string {
		if v == nil {
			return "–"
		}
		return mib(int64(*v))
	}
	var rows [][]string
	var files []string
	for _, pm := range k.PodMemory {
		var user, qp *uint64
		for _, c := range pm.Containers {
			switch {
			case c.Name == "queue-proxy":
				qp = c.WorkingSetBytes
			case user == nil:
				user = c.WorkingSetBytes
			}
		}
		sandbox := "–"
		if pm.SandboxBytes != nil {
			sandbox = mib(*pm.SandboxBytes)
		}
		localPSS, ratio := "–", "–"
		if pss, file := localPSSOf(local, pm.Arm); pss > 0 {
			files = appendUnique(files, "`"+filepath.Base(file)+"`")
			localPSS = mib(pss)
			if pm.PodWorkingSetBytes != nil {
				ratio = fmt.Sprintf("%.1f×", float64(*pm.PodWorkingSetBytes)/float64(pss))
			}
		}
		rows = append(rows, []string{pm.Arm, mibU(user), mibU(qp), sandbox, mibU(pm.PodWorkingSetBytes), localPSS, ratio})
	}
	m.p("**What an idle instance holds there**: each arm's pod after it answered, from the kubelet's stats (cgroup working set), beside the same arm's local PSS\n\n")
	m.table([]string{"arm", "server container", "queue-proxy", "sandbox (pod − containers)", "pod", "local PSS", "pod / local"}, rows)
	src := "no local PSS measured"
	if len(files) > 0 {
		src = "local PSS from " + strings.Join(files, ", ") + " (density where measured, else at first RPC)"
	}
	m.p("Working set is what the kubelet counts against a pod's memory limit (RSS plus active page cache); PSS shares a binary's pages between instances, so the two measure differently and the ratio is indicative. %s.\n\n", src)
}

// localPSSOf is arm's idle PSS in the local campaigns: a density row's
// per-instance PSS where one was measured, else the median PSS at first
// RPC of its samples.
func localPSSOf(local []*Campaign, arm string) (int64, string) {
	for _, c := range local {
		for _, d := range c.Density {
			if d.Arm == arm && d.Budget != "knative" && d.PSSBytes > 0 {
				return d.PSSBytes, c.File
			}
		}
	}
	for _, c := range local {
		if pss := median(c.Samples, func(s Sample) (float64, bool) {
			if s.Arm != arm || s.PSSBytes == nil {
				return 0, false
			}
			return float64(*s.PSSBytes), true
		}); pss > 0 {
			return int64(pss), c.File
		}
	}
	return 0, ""
}

// localFor finds arm in the first local campaign that has it, at the
// widest budget without a quota, and returns that campaign, the budget and
// its counted first-RPC times.
func localFor(local []*Campaign, arm string) (*Campaign, string, []float64) {
	for _, c := range local {
		best, rank := "", -1
		for _, s := range c.Summaries {
			if s.Arm != arm {
				continue
			}
			if r := budgetWidth(s.Budget); r > rank {
				best, rank = s.Budget, r
			}
		}
		if rank < 0 {
			continue
		}
		if xs := coldSamples(c)[[2]string{arm, best}]; len(xs) > 0 {
			return c, best, xs
		}
	}
	return nil, "", nil
}

// budgetWidth ranks a budget's name for "closest to an unlimited pod":
// max (or none) first, then cpus=LIST by its CPU count; a quota or memory
// limit ranks 0.
func budgetWidth(b string) int {
	switch {
	case b == "" || b == "max":
		return math.MaxInt32
	case strings.Contains(b, "cores=") || strings.Contains(b, "mem="):
		return 0
	case strings.HasPrefix(b, "cpus="):
		cpus, err := cpulist.Parse(strings.TrimPrefix(b, "cpus="))
		if err != nil {
			return 0
		}
		return len(cpus)
	}
	return 0
}

// dominantStep names the longest step between consecutive phase medians
// up to first_rpc, e.g. "pod_scheduled → sandbox_ready (466)".
func dominantStep(phases map[string]float64) string {
	from, to, d := longestStep(phases)
	if to == "" {
		return ""
	}
	return fmt.Sprintf("%s → %s (%s)", from, to, ms(d))
}

// phaseAt is one phase's median, ms from t0.
type phaseAt struct {
	name string
	ms   float64
}

// inOrder lists phase medians in the order they happened (by time, then
// by name), the order every step between them is read in.
func inOrder(phases map[string]float64) []phaseAt {
	ps := make([]phaseAt, 0, len(phases))
	for n, v := range phases {
		ps = append(ps, phaseAt{n, v})
	}
	sort.Slice(ps, func(i, j int) bool {
		if ps[i].ms != ps[j].ms {
			return ps[i].ms < ps[j].ms
		}
		return ps[i].name < ps[j].name
	})
	return ps
}

// longestStep is the longest step between consecutive phase medians up to
// first_rpc: its two phases and its length ("" when there are none).
func longestStep(phases map[string]float64) (from, to string, d float64) {
	from = "t0"
	prev := phaseAt{"t0", 0}
	for _, p := range inOrder(phases) {
		if prev.name == "first_rpc" { // what follows is not the cold start's
			break
		}
		if step := p.ms - prev.ms; step > d {
			d, from, to = step, prev.name, p.name
		}
		prev = p
	}
	return from, to, d
}

// medianText is xs's median with its interval at the report's confidence
// level, "8.81 [8.28–9.41]" (the median alone when too few for one).
func (r *Report) medianText(xs []float64) string {
	md := stats.MedianCI(xs, r.confidence())
	if !md.Finite() {
		return ms(md.Value)
	}
	return fmt.Sprintf("%s [%s–%s]", ms(md.Value), ms(md.Low), ms(md.High))
}

func signedMs(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	if v >= 0 {
		return "+" + ms(v)
	}
	return "−" + ms(-v)
}
