package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/coldstart-go/coldstart/campaign"
	"github.com/coldstart-go/coldstart/cmd/internal/cliopts"
	"github.com/coldstart-go/coldstart/internal/render"
	"github.com/coldstart-go/coldstart/internal/stats"
	"github.com/coldstart-go/coldstart/knative"
	"github.com/coldstart-go/coldstart/prober"
	"github.com/coldstart-go/coldstart/record"
)

const burstHelp = "bursts: for each N in this list (e.g. 1,2,4,8,16), start N instances of each arm at once in one shared budget " +
	"(each --budget as a node's allocatable, each instance in a cgroup of its own), each probed on its own fresh channel; " +
	"N=1 is always measured, every N is compared with it"

// validateBurst checks --burst and the flags it does not go with.
func (o *runOptions) validateBurst() error {
	if !o.BurstGiven {
		return nil
	}
	if _, err := campaign.BurstSizes(o.Burst); err != nil {
		return fmt.Errorf("--burst: %w", err)
	}
	switch {
	case o.Knative():
		return errors.New("--burst: only with --on local: it starts instances on this machine (on Knative, the platform scales a Service)")
	case o.AutoRuns:
		return errors.New("--burst: give --runs a number of rounds, not auto")
	case o.PageCache != "warm":
		return errors.New("--burst: only with --page-cache warm (N instances share their files' pages)")
	case o.Addr != "":
		return errors.New("--burst: each instance of a burst needs an address of its own; --addr gives one")
	case o.Polls != "":
		return errors.New("--burst: --poll-interval is for single cold starts")
	}
	return nil
}

// runBurst builds the arms and runs the burst campaign.
func runBurst(ctx context.Context, o *runOptions, w io.Writer) error {
	checker, rf, built, err := o.begin(ctx, "coldstart", o.Transport)
	defer built.Close()
	if err != nil {
		return err
	}
	arms, not := campaign.BurstArms(built.Arms)
	for _, e := range not {
		rf.Notef("not measured in bursts: %v", e)
	}
	built.Failed = append(built.Failed, not...)
	built.Arms = arms // what End names as measured
	if len(arms) == 0 {
		return fmt.Errorf("--burst: no arm to burst: %w", errors.Join(not...))
	}
	sizes, _ := campaign.BurstSizes(o.Burst)
	c := campaign.Burst{
		Arms: arms, Budgets: o.budgets(), Sizes: sizes, Runs: o.Runs, Transport: campaign.Transport(o.Transport),
		Checker: checker, Wait: prober.WaitOptions{Timeout: o.Timeout}, ProberCPUs: o.PinProber,
		Progress: o.Progress(), Log: o.Log(),
	}
	bursts, err := c.Run(ctx, func(kind string, v any) error { return rf.Add(kind, v) })
	size := map[string]int64{}
	for _, a := range arms {
		size[a.Name] = a.SizeBytes
	}
	sums := record.SummarizeBursts(bursts, size, o.Baseline, o.Confidence, stats.DefaultMinEffect)
	if rerr := cliopts.AddAll(rf, record.BurstSummaryKind, sums); rerr != nil && err == nil {
		err = rerr
	}
	print := cliopts.Rows(o.Output, sums)
	if o.Output == render.Table && !o.Wide {
		print = func(w io.Writer) error { return writeBurstText(w, sums, o.Confidence, c.Runs) }
	}
	return rf.End(w, print, err, built)
}

// writeBurstText writes the burst summaries as run's terminal output does
// its cold starts: a header line of what every row shares, then per
// budget one table (a row per arm and N: the instances' p50, p99 and max
// spawn → first RPC, when all N served, that against the baseline arm's,
// the p50 against N=1's, the group's CPU and memory peak) and a verdict
// line. Rows are medians over the counted rounds.
func writeBurstText(w io.Writer, sums []record.BurstSummary, conf float64, runs int) error {
	if len(sums) == 0 {
		return nil
	}
	budgets := cliopts.OrderedBy(sums, func(s record.BurstSummary) string { return s.Budget })
	head := fmt.Sprintf("%d rounds after 1 warm-up start per arm; N instances at once in one shared budget, "+
		"each spawn → first ready RPC on its own fresh channel; ms, medians over rounds; all = until all N serve", runs)
	if len(budgets) == 1 && budgets[0] == knative.Budget {
		head = fmt.Sprintf("%d rounds after 1 warm-up round; N Services of an arm from zero at once on Knative, each proven at zero, "+
			"each t0 → first ready RPC on its own fresh channel; ms, medians over rounds; all = until all N serve", runs)
	} else if len(budgets) == 1 {
		head += "; budget " + budgets[0]
	}
	if base := sums[0].VsBaseline.Baseline; base != "" {
		head += "; baseline " + base
	}
	fmt.Fprintln(w, cliopts.Wrap(head, textWidth, "  "))
	for _, b := range budgets {
		var rows []record.BurstSummary
		for _, s := range sums {
			if s.Budget == b {
				rows = append(rows, s)
			}
		}
		fmt.Fprintln(w)
		if len(budgets) > 1 {
			fmt.Fprintln(w, b)
		}
		tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
		base := rows[0].VsBaseline.Baseline
		fmt.Fprintln(tw, strings.Join([]string{"arm", "N", "p50", "p99", "max", "all", "all vs " + base, "p50 vs N=1", "CPU ms", "peak MiB"}, "\t"))
		for _, arm := range cliopts.OrderedBy(rows, func(s record.BurstSummary) string { return s.Arm }) {
			for _, s := range rows {
				if s.Arm != arm {
					continue
				}
				fmt.Fprintln(tw, strings.Join([]string{s.Arm, fmt.Sprint(s.N), num(s.P50Ms), num(s.P99Ms), num(s.MaxMs), num(s.AllReadyMs),
					shortVs(s.VsBaseline), kneeCell(s), optNum(s.GroupCPUMs), optMiBNum(s.GroupMemPeakBytes)}, "\t"))
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintln(w, cliopts.Wrap(burstVerdict(b, rows), textWidth, "  "))
	}
	return nil
}

// shortVs is a ratio and its verdict without the interval ("1.18×
// slower", "0.97× ~"), which the verdict line gives.
func shortVs(v record.VsBaseline) string {
	switch {
	case v.Verdict == record.VerdictBaseline:
		return "baseline"
	case v.Ratio == nil:
		return "–"
	case v.Verdict == string(stats.NoDifference):
		return ratioNum(*v.Ratio) + "× ~"
	}
	return ratioNum(*v.Ratio) + "× " + v.Verdict
}

// kneeCell is the p50 against N=1's, marked where it is the arm's knee.
func kneeCell(s record.BurstSummary) string {
	c := shortVs(s.VsN1.Vs())
	if s.Knee {
		c += " knee"
	}
	return c
}

// burstVerdict says, for one budget, at the largest N measured, when each
// arm's last start served against the baseline's, and each arm's knee.
func burstVerdict(budget string, rows []record.BurstSummary) string {
	largest := 0
	for _, s := range rows {
		largest = max(largest, s.N)
	}
	var parts []string
	for _, s := range rows {
		if s.N != largest || !s.VsBaseline.Compared() || s.VsBaseline.Ratio == nil {
			continue
		}
		v := s.VsBaseline
		if v.Verdict == string(stats.Faster) || v.Verdict == string(stats.Slower) {
			parts = append(parts, fmt.Sprintf("%s %s (%s)", s.Arm, cliopts.VsText(v, ""), pCell(v.P)))
		} else {
			parts = append(parts, s.Arm+" ~ "+v.Baseline)
		}
	}
	line := fmt.Sprintf("%s: at N=%d, all serve: ", budget, largest)
	if len(parts) == 0 {
		line += "one arm, nothing to compare"
	} else {
		line += strings.Join(parts, "; ")
	}
	var knees, none []string
	for _, arm := range cliopts.OrderedBy(rows, func(s record.BurstSummary) string { return s.Arm }) {
		k := ""
		for _, s := range rows {
			if s.Arm == arm && s.Knee {
				k = fmt.Sprintf("%s at N=%d", arm, s.N)
			}
		}
		if k == "" {
			none = append(none, arm)
		} else {
			knees = append(knees, k)
		}
	}
	if len(none) > 0 {
		knees = append(knees, fmt.Sprintf("%s none up to N=%d", strings.Join(none, ", "), largest))
	}
	return line + fmt.Sprintf("; knee (p50 over %g× N=1's, significant): %s", record.KneeFactor, strings.Join(knees, "; "))
}

func optNum(v *float64) string {
	if v == nil {
		return "–"
	}
	return num(*v)
}

func optMiBNum(v *int64) string {
	if v == nil || *v <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f", float64(*v)/(1<<20))
}
