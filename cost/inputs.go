package cost

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/coldstart-go/coldstart/report"
)

// The platforms start samples come from.
const (
	Local    = "local"
	KnativeP = "knative"
)

// ArmsFrom takes each arm's costs from results files read by report.Load:
// the counted cold starts (warm-up rounds left out) measured on platform
// (Local: under budget, "" = the first budget the files measured;
// KnativeP: scales from zero through the activator), the CPU each start
// took, and one idle instance's PSS. names picks arms (nil = every arm
// with starts there, in the order measured); an arm named without
// cold-start rows there is an error naming it.
//
// Idle memory: a density row of budget "knative" (a pod's, once one is
// measured on a cluster) where the platform is Knative, else the local
// density PSS, else the cold-start samples' PSS at first RPC. A Knative
// start takes the CPU of the same arm's local starts (their median):
// the cluster's samples carry none.
func ArmsFrom(r *report.Report, platform, budget string, names []string) ([]Arm, error) {
	if platform != Local && platform != KnativeP {
		return nil, fmt.Errorf("platform %q: want local or knative", platform)
	}
	type key struct{ arm, budget string }
	local := map[key][]report.Sample{}
	knative := map[string][]report.Sample{}
	var localArms, knArms, budgets []string
	for _, c := range r.Campaigns {
		for _, s := range c.Samples {
			if s.Warmup {
				continue
			}
			if c.Knative() {
				if _, ok := knative[s.Arm]; !ok {
					knArms = append(knArms, s.Arm)
				}
				knative[s.Arm] = append(knative[s.Arm], s)
				continue
			}
			k := key{s.Arm, s.Budget}
			if !slices.Contains(localArms, s.Arm) {
				localArms = append(localArms, s.Arm)
			}
			if !slices.Contains(budgets, s.Budget) {
				budgets = append(budgets, s.Budget)
			}
			local[k] = append(local[k], s)
		}
	}
	if budget == "" && len(budgets) > 0 {
		budget = budgets[0]
	}
	if platform == Local && len(budgets) > 0 && !slices.Contains(budgets, budget) {
		return nil, fmt.Errorf("budget %q: no local cold starts under it (measured: %s)", budget, strings.Join(budgets, ", "))
	}
	measured := localArms
	if platform == KnativeP {
		measured = knArms
	}
	if len(names) == 0 {
		names = measured
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no cold-start rows on %s in the files given", platform)
	}
	var arms []Arm
	for _, n := range names {
		a := Arm{Name: n, Platform: platform, Budget: budget}
		samples := local[key{n, budget}]
		where := "local under " + budget
		if platform == KnativeP {
			samples, a.Budget, where = knative[n], "knative", "on Knative"
		}
		if len(samples) == 0 {
			return nil, fmt.Errorf("arm %s: no cold-start rows %s (arms with some: %s)", n, where, strings.Join(measured, ", "))
		}
		localCPU := median(cpus(local[key{n, budget}]))
		for _, s := range samples {
			a.StartMs = append(a.StartMs, s.FirstRPCMs)
			cpu := localCPU
			if s.StartupCPUMs != nil {
				cpu = *s.StartupCPUMs
			}
			a.StartCPUMs = append(a.StartCPUMs, cpu)
		}
		a.IdleBytes, a.IdleSource = idleMemory(r, n, platform, samples, local[key{n, budget}])
		if a.IdleBytes == 0 {
			return nil, fmt.Errorf("arm %s: no idle memory measured (give a coldstart density results file, or cold starts that read PSS)", n)
		}
		arms = append(arms, a)
	}
	return arms, nil
}

// idleMemory is one idle instance's memory and where it was read. For
// Knative policies it is the idle pod's, measured on the cluster where the
// files hold it (run --on knative's pod_memory rows), not the local PSS:
// there an idle instance is the whole pod.
func idleMemory(r *report.Report, arm, platform string, samples, localSamples []report.Sample) (int64, string) {
	var dens []report.DensityRow
	for _, c := range r.Campaigns {
		for _, d := range c.Density {
			if d.Arm == arm {
				dens = append(dens, d)
			}
		}
	}
	if platform == KnativeP {
		for _, c := range r.Campaigns {
			for _, pm := range c.PodMemory {
				if pm.Arm == arm && pm.PodWorkingSetBytes != nil && *pm.PodWorkingSetBytes > 0 {
					return int64(*pm.PodWorkingSetBytes), "the idle pod's working set on Knative (server, queue-proxy and sandbox; kubelet stats)"
				}
			}
		}
		for _, d := range dens {
			if d.Budget == "knative" && d.PSSBytes > 0 {
				return d.PSSBytes, "pod PSS (density on Knative)"
			}
		}
	}
	for _, d := range dens {
		if d.Budget != "knative" && d.PSSBytes > 0 {
			return d.PSSBytes, fmt.Sprintf("local PSS (density, %d idle instances)", d.Instances)
		}
	}
	var pss []float64
	for _, s := range append(slices.Clone(samples), localSamples...) {
		if s.PSSBytes != nil {
			pss = append(pss, float64(*s.PSSBytes))
		}
	}
	if len(pss) > 0 {
		return int64(median(pss)), "local PSS at first RPC (no density file)"
	}
	return 0, ""
}

func cpus(ss []report.Sample) []float64 {
	var out []float64
	for _, s := range ss {
		if s.StartupCPUMs != nil {
			out = append(out, *s.StartupCPUMs)
		}
	}
	return out
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	c := slices.Clone(xs)
	sort.Float64s(c)
	if len(c)%2 == 1 {
		return c[len(c)/2]
	}
	return (c[len(c)/2-1] + c[len(c)/2]) / 2
}
