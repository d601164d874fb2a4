package main

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/coldstart-go/coldstart/campaign"
	"github.com/coldstart-go/coldstart/cmd/internal/cliopts"
	"github.com/coldstart-go/coldstart/internal/render"
	"github.com/coldstart-go/coldstart/internal/stats"
	"github.com/coldstart-go/coldstart/record"
)

// textWidth is the widest line the terminal table aims for: it fits a
// 100-column terminal. --wide keeps every column instead.
const textWidth = 100

// coldTextOptions shape run's terminal output.
type coldTextOptions struct {
	// Confidence is the level of every interval.
	Confidence float64
	// Phases adds the table of phase medians.
	Phases bool
	// Warmup: the campaign ran one uncounted warm-up round per arm.
	Warmup bool
	// MinEffect is the difference a summary says how many runs would
	// resolve, when none was resolved.
	MinEffect float64
}

// writeColdText writes run's summaries as a person reads them at a
// terminal: one header line of what every row shares, then per budget a
// small table (arm, median with its interval, p90, the ratio to the
// baseline with its interval and verdict, startup CPU, PSS, size) and a
// verdict line, hyperfine-style. -o json, csv and markdown, and --wide,
// keep every field instead.
func writeColdText(w io.Writer, sums []campaign.Summary, o coldTextOptions) error {
	if len(sums) == 0 {
		return nil
	}
	budgets := cliopts.OrderedBy(sums, func(s campaign.Summary) string { return s.Budget })
	fmt.Fprintln(w, cliopts.Wrap(coldHeader(sums, o, budgets), textWidth, "  "))
	for _, b := range budgets {
		rows := forBudget(sums, b)
		fmt.Fprintln(w)
		if len(budgets) > 1 {
			head := b
			if p := cliopts.OrderedBy(sums, func(s campaign.Summary) string { return s.ProberCPUs }); len(p) > 1 && rows[0].ProberCPUs != "" {
				head += " (prober on CPUs " + rows[0].ProberCPUs + ")"
			}
			fmt.Fprintln(w, head)
		}
		if err := coldTable(w, rows, o); err != nil {
			return err
		}
		if line := verdictLine(b, rows, o); line != "" {
			fmt.Fprintln(w, cliopts.Wrap(line, textWidth, "  "))
		}
	}
	if o.Phases {
		fmt.Fprintln(w)
		return phasesTable(w, sums)
	}
	return nil
}

// coldHeader states what all rows share: runs, what was timed, the probe,
// the prober's CPUs and the budget when there is one.
func coldHeader(sums []campaign.Summary, o coldTextOptions, budgets []string) string {
	var parts []string
	runs := cliopts.OrderedBy(sums, func(s campaign.Summary) string { return fmt.Sprint(s.Runs) })
	switch {
	case len(runs) == 1 && o.Warmup:
		parts = append(parts, runs[0]+" runs per arm after 1 warm-up round")
	case len(runs) == 1:
		parts = append(parts, runs[0]+" runs per arm")
	default:
		parts = append(parts, "runs per arm differ (see each row)")
	}
	parts = append(parts, "spawn → first ready RPC, fresh channel per probe")
	if p := cliopts.OrderedBy(sums, func(s campaign.Summary) string { return s.Probe }); len(p) == 1 && p[0] != "" {
		parts = append(parts, "probe "+p[0])
	}
	if p := cliopts.OrderedBy(sums, func(s campaign.Summary) string { return s.ProberCPUs }); len(p) == 1 && p[0] != "" {
		parts = append(parts, "prober on CPUs "+p[0])
	}
	if len(budgets) == 1 {
		parts = append(parts, "budget "+budgets[0])
	}
	if base := sums[0].Baseline; base != "" {
		parts = append(parts, "baseline "+base)
	}
	return strings.Join(parts, "; ")
}

// coldTable writes one budget's rows.
func coldTable(w io.Writer, rows []campaign.Summary, o coldTextOptions) error {
	base := rows[0].Baseline
	vs := "vs " + base
	if base == "" {
		vs = "vs baseline"
	}
	varied := len(cliopts.OrderedBy(rows, func(s campaign.Summary) string { return fmt.Sprint(s.Runs) })) > 1
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	head := []string{"arm", fmt.Sprintf("median ms [%.0f%% CI]", 100*o.Confidence), "p90 ms", vs, "startup CPU", "PSS", "size"}
	if varied {
		head = append([]string{head[0], "runs"}, head[1:]...)
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, s := range rows {
		cells := []string{s.Arm, medianCell(s), num(s.P90Ms), vsCell(s.VsBaseline, base), optMs(s.StartupCPUMs), optMiB(s.PSSBytes), mibText(s.SizeBytes)}
		if varied {
			cells = append([]string{cells[0], fmt.Sprint(s.Runs)}, cells[1:]...)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// medianCell is "9.03 [8.92, 9.97]", or says why there is no interval.
func medianCell(s campaign.Summary) string {
	if s.Runs == 0 {
		return "– (no run succeeded)"
	}
	if s.MedianCILowMs == nil || s.MedianCIHighMs == nil {
		return fmt.Sprintf("%s (no CI: %d runs < %d)", num(s.MedianMs), s.Runs, stats.MinRunsForInterval(s.Confidence))
	}
	return fmt.Sprintf("%s [%s, %s]", num(s.MedianMs), num(*s.MedianCILowMs), num(*s.MedianCIHighMs))
}

// vsCell is "0.956× [0.86, 1.01] ~", "24.8× [23.3, 25.6] slower",
// "baseline", or "–" when nothing was compared (cliopts.VsText, as every
// command's "vs BASE" column); a variant's, against its own arm, names it
// (cliopts.VsTextIn).
func vsCell(v record.VsBaseline, base string) string { return cliopts.VsTextIn(v, base, "") }

// verdictLine says, for one budget, how each arm compares with the
// baseline: "cores=0.5: static 1.18× [1.13, 1.27] faster than default
// (p<0.001); pgo ~ default; upx 23.1× [21.9, 25.0] slower (p<0.001)", and
// when nothing was resolved, how many runs per arm would resolve a
// MinEffect difference at the spread seen.
func verdictLine(budget string, rows []campaign.Summary, o coldTextOptions) string {
	var parts []string
	resolved, need := false, 0
	rows = append([]campaign.Summary(nil), rows...)
	// Faster arms first, then those alike with the baseline, then slower,
	// each by ratio.
	rank := func(s campaign.Summary) int {
		switch s.Verdict {
		case string(stats.Faster):
			return 0
		case string(stats.Slower):
			return 2
		}
		return 1
	}
	sort.SliceStable(rows, func(i, j int) bool {
		ri, rj := rank(rows[i]), rank(rows[j])
		if ri != rj {
			return ri < rj
		}
		return rows[i].Ratio != nil && rows[j].Ratio != nil && *rows[i].Ratio < *rows[j].Ratio
	})
	for _, s := range rows {
		v := s.VsBaseline
		if !v.Compared() || v.Ratio == nil {
			continue
		}
		switch v.Verdict {
		case string(stats.Faster), string(stats.Slower):
			resolved = true
			f, lo, hi := *v.Ratio, v.CILow, v.CIHigh
			if v.Verdict == string(stats.Faster) {
				f, lo, hi = 1 / *v.Ratio, inv(v.CIHigh), inv(v.CILow)
			}
			iv := ""
			if lo != nil && hi != nil {
				iv = fmt.Sprintf(" [%s, %s]", ratioNum(*lo), ratioNum(*hi))
			}
			parts = append(parts, fmt.Sprintf("%s %s×%s %s than %s (%s)", s.Arm, ratioNum(f), iv, v.Verdict, v.Baseline, pCell(v.P)))
		default:
			parts = append(parts, fmt.Sprintf("%s ~ %s", s.Arm, v.Baseline))
			need = max(need, v.RunsToDetect)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	line := budget + ": " + strings.Join(parts, "; ")
	if !resolved && need > 0 {
		line += fmt.Sprintf("; nothing resolved: about %d runs per arm would resolve a %.0f%% difference", need, 100*o.MinEffect)
	}
	return line
}

func inv(x *float64) *float64 {
	if x == nil || *x == 0 {
		return nil
	}
	v := 1 / *x
	return &v
}

func pCell(p *float64) string {
	switch {
	case p == nil:
		return "p unknown"
	case *p < 0.001:
		return "p<0.001"
	}
	return fmt.Sprintf("p=%.3f", *p)
}

// phasesTable writes the median of every phase, ms from t0, one column a
// phase in the order the phases happen.
func phasesTable(w io.Writer, sums []campaign.Summary) error {
	at := map[string][]float64{}
	for _, s := range sums {
		for name, ms := range s.PhasesMs {
			at[name] = append(at[name], ms)
		}
	}
	names := make([]string, 0, len(at))
	for n := range at {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		mi, mj := median(at[names[i]]), median(at[names[j]])
		if mi != mj {
			return mi < mj
		}
		return names[i] < names[j]
	})
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "phase medians, ms from spawn")
	fmt.Fprintln(tw, "arm\tbudget\t"+strings.Join(names, "\t"))
	for _, s := range sums {
		cells := []string{s.Arm, s.Budget}
		for _, n := range names {
			if ms, ok := s.PhasesMs[n]; ok {
				cells = append(cells, num(ms))
			} else {
				cells = append(cells, "–")
			}
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s) == 0 {
		return math.NaN()
	}
	return s[len(s)/2]
}

func forBudget(sums []campaign.Summary, b string) []campaign.Summary {
	var out []campaign.Summary
	for _, s := range sums {
		if s.Budget == b {
			out = append(out, s)
		}
	}
	return out
}

// num keeps three significant digits, as every table does.
func num(x float64) string { return render.Number(x) }

// ratioNum writes a ratio with three significant digits: 0.956, 1.18, 24.8.
func ratioNum(x float64) string { return render.Number(x) }

func optMs(v *float64) string {
	if v == nil {
		return "–"
	}
	return num(*v) + " ms"
}

func optMiB(v *int64) string {
	if v == nil {
		return "–"
	}
	return mibText(*v)
}

func mibText(b int64) string {
	if b <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
}
