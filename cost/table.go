package cost

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/coldstart-go/coldstart/record"
)

// gib is a GiB in bytes.
const gib = 1 << 30

// Rows simulates every arm under every policy on tr (each app of a
// population on its own, the totals summed) and returns one row each, in
// arm-then-policy order, with the Pareto front marked. Each simulation
// draws its starts from a PCG seeded with o.Seed, so every arm and policy
// sees the same arrivals and the same draws.
func Rows(tr Traffic, arms []Arm, pols []Policy, o Options) ([]record.CostRow, error) {
	o.Duration = tr.Duration
	days := tr.Duration / 86400
	var rows []record.CostRow
	for i := range arms {
		a := &arms[i]
		for _, p := range pols {
			var res Result
			for _, app := range tr.Apps {
				r, err := Simulate(app, a, p, o)
				if err != nil {
					return nil, fmt.Errorf("arm %s: %w", a.Name, err)
				}
				res.Merge(r)
			}
			row := record.CostRow{
				Traffic: tr.Name, Seed: o.Seed, DurationHours: tr.Duration / 3600,
				Arm: a.Name, Platform: a.Platform, Budget: a.Budget, StartSamples: len(a.StartMs),
				Policy: p.Short(), PolicySpec: p.String(), Requests: res.Requests, Cold: res.Cold, Starts: res.Starts,
				AddedP50Ms: res.AddedQuantile(0.50), AddedP99Ms: res.AddedQuantile(0.99), AddedP999Ms: res.AddedQuantile(0.999),
				InstanceHoursPerDay:   res.InstanceSeconds / 3600 / days,
				IdleGiBHoursPerDay:    res.IdleSeconds / 3600 * float64(a.IdleBytes) / gib / days,
				StartCPUSecondsPerDay: res.StartCPUSeconds / days,
				IdleBytes:             a.IdleBytes, IdleSource: a.IdleSource,
			}
			if res.Requests > 0 {
				row.ColdPct = 100 * float64(res.Cold) / float64(res.Requests)
			}
			rows = append(rows, row)
		}
	}
	MarkFront(rows)
	return rows, nil
}

// MarkFront sets Front on the rows no other row of the same traffic model
// dominates: one with p99 added latency and idle GiB-hours both lower or
// equal, one of them strictly lower.
func MarkFront(rows []record.CostRow) {
	for i := range rows {
		a := &rows[i]
		a.Front = true
		for j := range rows {
			b := &rows[j]
			if i == j || a.Traffic != b.Traffic {
				continue
			}
			if b.AddedP99Ms <= a.AddedP99Ms && b.IdleGiBHoursPerDay <= a.IdleGiBHoursPerDay &&
				(b.AddedP99Ms < a.AddedP99Ms || b.IdleGiBHoursPerDay < a.IdleGiBHoursPerDay) {
				a.Front = false
				break
			}
		}
	}
}

// Constraint bounds one figure of a row: an added-latency percentile (p50,
// p99, p99.9; milliseconds) or the cold fraction (cold; percent).
type Constraint struct {
	Metric string
	Max    float64
	text   string
}

func (c Constraint) String() string { return c.text }

// ParseConstraint reads "p99<=300ms", "p99.9<=1s", "p50<=20ms" or
// "cold<=1%".
func ParseConstraint(s string) (Constraint, error) {
	metric, v, ok := strings.Cut(strings.ReplaceAll(s, " ", ""), "<=")
	bad := fmt.Errorf("constraint %q: want p50, p99 or p99.9 <= a duration (p99<=300ms), or cold<=PERCENT (cold<=1%%)", s)
	if !ok {
		return Constraint{}, bad
	}
	c := Constraint{Metric: metric, text: s}
	switch metric {
	case "p50", "p99", "p99.9":
		d, err := parseDurationMs(v)
		if err != nil {
			return Constraint{}, bad
		}
		c.Max = d
	case "cold":
		f, err := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64)
		if err != nil || f < 0 {
			return Constraint{}, bad
		}
		c.Max = f
	default:
		return Constraint{}, bad
	}
	return c, nil
}

func parseDurationMs(s string) (float64, error) {
	for _, u := range []struct {
		suffix string
		ms     float64
	}{{"ms", 1}, {"µs", 1e-3}, {"us", 1e-3}, {"s", 1e3}, {"m", 60e3}} {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			f, err := strconv.ParseFloat(num, 64)
			if err != nil || f < 0 {
				return 0, fmt.Errorf("bad duration %q", s)
			}
			return f * u.ms, nil
		}
	}
	return 0, fmt.Errorf("bad duration %q", s)
}

// Meets reports whether row r satisfies c.
func (c Constraint) Meets(r record.CostRow) bool {
	v := map[string]float64{"p50": r.AddedP50Ms, "p99": r.AddedP99Ms, "p99.9": r.AddedP999Ms, "cold": r.ColdPct}[c.Metric]
	return v <= c.Max
}

// Answer is the cheapest row of traffic tr meeting c: least idle GiB-hours
// per day, then least instance-hours, then least start CPU.
func Answer(rows []record.CostRow, traffic string, c Constraint) record.CostAnswer {
	ans := record.CostAnswer{Traffic: traffic, Constraint: c.String()}
	var best *record.CostRow
	for i := range rows {
		r := &rows[i]
		if r.Traffic != traffic || !c.Meets(*r) {
			continue
		}
		if best == nil || less(r, best) {
			best = r
		}
	}
	if best == nil {
		ans.Text = fmt.Sprintf("%s: no arm and policy meets it under %s", c, traffic)
		return ans
	}
	ans.Found = true
	ans.Arm, ans.Policy, ans.PolicySpec, ans.Platform, ans.Budget = best.Arm, best.Policy, best.PolicySpec, best.Platform, best.Budget
	ans.AddedP99Ms, ans.ColdPct = best.AddedP99Ms, best.ColdPct
	ans.IdleGiBHoursPerDay, ans.InstanceHoursPerDay = best.IdleGiBHoursPerDay, best.InstanceHoursPerDay
	ans.Text = fmt.Sprintf("%s: %s with %s; %s GiB-h/day idle, %.2f instance-h/day (p99 added %.0f ms, %.2f%% cold; %s samples)",
		c, best.Policy, best.Arm, gibText(best.IdleGiBHoursPerDay), best.InstanceHoursPerDay, best.AddedP99Ms, best.ColdPct, platformText(best.Platform, best.Budget))
	return ans
}

func less(a, b *record.CostRow) bool {
	if a.IdleGiBHoursPerDay != b.IdleGiBHoursPerDay {
		return a.IdleGiBHoursPerDay < b.IdleGiBHoursPerDay
	}
	if a.InstanceHoursPerDay != b.InstanceHoursPerDay {
		return a.InstanceHoursPerDay < b.InstanceHoursPerDay
	}
	return a.StartCPUSecondsPerDay < b.StartCPUSecondsPerDay
}

// gibText prints GiB-hours with three significant digits.
func gibText(v float64) string {
	if v == 0 {
		return "0"
	}
	d := max(0, 2-int(math.Floor(math.Log10(math.Abs(v)))))
	return strconv.FormatFloat(v, 'f', d, 64)
}

func platformText(platform, budget string) string {
	if platform == "knative" {
		return "Knative"
	}
	return "local " + budget
}
