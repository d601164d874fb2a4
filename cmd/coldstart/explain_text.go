package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/coldstart-go/coldstart/cmd/internal/cliopts"
	"github.com/coldstart-go/coldstart/explain"
	"github.com/coldstart-go/coldstart/internal/stats"
)

// writeExplainText prints explain's report for a terminal, within
// textWidth columns for package paths of ordinary length: what every row
// shares in a header line; the phases, one row per arm, ending with the
// first RPC against the baseline; the packages and the modules with one
// column per arm, so arms compare along a row; only the comparisons that
// resolved a difference, and how many did not. Every field the tables
// leave out (intervals per package, bytes, allocations, resolution) is in
// --wide, -o csv and -o json.
func writeExplainText(w io.Writer, r explain.Report) error {
	budgets := explainBudgets(r)
	fmt.Fprintln(w, cliopts.Wrap(explainHeader(r, budgets), textWidth, "  "))
	for _, b := range budgets {
		phases := filterBudget(r.Phases, b, func(p explain.PhaseRow) string { return p.Budget })
		pkgs := filterBudget(r.Packages, b, func(p explain.PackageRow) string { return p.Budget })
		mods := filterBudget(r.Modules, b, func(m explain.ModuleRow) string { return m.Budget })
		cmps := filterBudget(r.Compare, b, func(c explain.CompareRow) string { return c.Budget })
		if len(budgets) > 1 {
			fmt.Fprintf(w, "\n%s\n", b)
		}
		if len(phases) > 0 {
			fmt.Fprintln(w)
			if err := explainPhases(w, phases); err != nil {
				return err
			}
		}
		arms := explainArms(phases, pkgs, mods)
		if len(pkgs) > 0 {
			fmt.Fprintf(w, "\ninit time by package (median ms; %% of %s's init total)\n", arms[0])
			if err := explainByArm(w, "package", arms, pkgs, func(p explain.PackageRow) (string, string, float64, float64) {
				return p.Package, p.Arm, p.MedianMs, p.SharePct
			}); err != nil {
				return err
			}
		}
		if len(mods) > 0 {
			fmt.Fprintf(w, "\ninit time by module (median ms of its packages' sum)\n")
			if err := explainByArm(w, "module", arms, mods, func(m explain.ModuleRow) (string, string, float64, float64) {
				return m.Module, m.Arm, m.MedianMs, m.SharePct
			}); err != nil {
				return err
			}
		}
		if len(cmps) > 0 {
			fmt.Fprintln(w)
			if err := explainCompare(w, cmps); err != nil {
				return err
			}
		}
	}
	if len(r.Notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range r.Notes {
			fmt.Fprintln(w, cliopts.Wrap("note: "+strings.ReplaceAll(n, "\n", " "), textWidth, "  "))
		}
	}
	return nil
}

// explainHeader states what all rows share: runs, traced runs, the budget
// when there is one, the baseline and where the medians start.
func explainHeader(r explain.Report, budgets []string) string {
	var parts []string
	runs := map[string]bool{}
	for _, p := range r.Phases {
		runs[fmt.Sprintf("%d runs per arm, %d with an init trace", p.Runs, p.TracedRuns)] = true
	}
	if len(runs) == 1 {
		for k := range runs {
			parts = append(parts, k)
		}
	} else if len(runs) > 1 {
		parts = append(parts, "runs per arm differ (-o csv has them)")
	}
	if len(budgets) == 1 && budgets[0] != "" {
		parts = append(parts, "budget "+budgets[0])
	}
	if b := phaseBaseline(r.Phases); b != "" {
		parts = append(parts, "baseline "+b)
	}
	parts = append(parts, "medians in ms from t0, just before fork")
	return strings.Join(parts, "; ")
}

func explainBudgets(r explain.Report) []string {
	var out []string
	seen := map[string]bool{}
	add := func(b string) {
		if !seen[b] {
			seen[b] = true
			out = append(out, b)
		}
	}
	for _, p := range r.Phases {
		add(p.Budget)
	}
	for _, p := range r.Packages {
		add(p.Budget)
	}
	for _, m := range r.Modules {
		add(m.Budget)
	}
	for _, c := range r.Compare {
		add(c.Budget)
	}
	return out
}

func filterBudget[T any](rows []T, budget string, of func(T) string) []T {
	var out []T
	for _, r := range rows {
		if of(r) == budget {
			out = append(out, r)
		}
	}
	return out
}

// explainArms lists the arms: the baseline first, then the phases' order,
// then any only the other tables name.
func explainArms(phases []explain.PhaseRow, pkgs []explain.PackageRow, mods []explain.ModuleRow) []string {
	var out []string
	seen := map[string]bool{}
	add := func(a string) {
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	if b := phaseBaseline(phases); b != "" {
		add(b)
	}
	for _, p := range phases {
		add(p.Arm)
	}
	for _, p := range pkgs {
		add(p.Arm)
	}
	for _, m := range mods {
		add(m.Arm)
	}
	return out
}

func explainPhases(w io.Writer, rows []explain.PhaseRow) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	base := phaseBaseline(rows)
	fmt.Fprintln(tw, "arm\texec→runtime\tinits\tmain→listen\tlisten→RPC\tfirst RPC\t"+"first RPC "+cliopts.VsHeader(base))
	opt := func(x *float64) string {
		if x == nil {
			return "–"
		}
		return num(*x)
	}
	for _, p := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Arm, opt(p.ExecToRuntimeMs), opt(p.InitsMs), opt(p.MainUntilListenMs),
			num(p.ListenToFirstRPCMs), num(p.FirstRPCMs), phaseVs(p, base))
	}
	return tw.Flush()
}

// explainByArm writes one row per name (package or module) with a column
// per arm: its median ms, and the first arm's share of its init total.
// Rows follow the first arm's ranking, then names only other arms rank.
func explainByArm[T any](w io.Writer, what string, arms []string, rows []T, of func(T) (name, arm string, ms, share float64)) error {
	type cell struct{ ms, share float64 }
	cells := map[string]map[string]cell{}
	var names []string
	for _, first := range []bool{true, false} {
		for _, r := range rows {
			name, arm, ms, share := of(r)
			if (arm == arms[0]) != first {
				continue
			}
			if cells[name] == nil {
				cells[name] = map[string]cell{}
				names = append(names, name)
			}
			cells[name][arm] = cell{ms, share}
		}
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "%s\t%s\t%%\n", what, strings.Join(arms, "\t"))
	for _, n := range names {
		line := []string{n}
		for _, a := range arms {
			c, ok := cells[n][a]
			if !ok {
				line = append(line, "–")
				continue
			}
			line = append(line, num(c.ms))
		}
		share := "–"
		if c, ok := cells[n][arms[0]]; ok {
			share = fmt.Sprintf("%.0f", c.share)
		}
		fmt.Fprintln(tw, strings.Join(append(line, share), "\t"))
	}
	return tw.Flush()
}

// explainCompare lists the comparisons that resolved a difference, with
// their interval, and counts those that did not.
func explainCompare(w io.Writer, rows []explain.CompareRow) error {
	var resolved []explain.CompareRow
	for _, c := range rows {
		if c.Verdict == string(stats.NoDifference) {
			continue
		}
		resolved = append(resolved, c)
	}
	base := rows[0].Base
	tests := map[string]bool{}
	for _, c := range rows {
		tests[c.Test] = true
	}
	test := "paired by round, Wilcoxon signed-rank"
	switch {
	case !tests[stats.PairedWilcoxon]:
		test = "Mann-Whitney U"
	case len(tests) > 1:
		test = "paired by round where enough runs pair, else Mann-Whitney U"
	}
	title := fmt.Sprintf("against %s (%s, alpha %g, not corrected for the %d comparisons)", base, test, explain.Alpha, len(rows))
	fmt.Fprintln(w, title)
	if len(resolved) > 0 {
		tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "arm\twhat\tdiff ms [CI]\tp\tverdict")
		for _, c := range resolved {
			iv := ""
			if c.DiffLoMs != nil && c.DiffHiMs != nil {
				iv = fmt.Sprintf(" [%s, %s]", num(*c.DiffLoMs), num(*c.DiffHiMs))
			}
			fmt.Fprintf(tw, "%s\t%s\t%s%s\t%s\t%s\n", c.Arm, c.What, signed(c.DiffMs), iv, strings.TrimPrefix(strings.TrimPrefix(pCell(&c.P), "p="), "p"), strings.TrimPrefix(c.Verdict, c.Arm+" "))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if n := len(rows) - len(resolved); n > 0 {
		fmt.Fprintf(w, "%d of %d: no difference detected (--wide lists them)\n", n, len(rows))
	}
	return nil
}

func signed(x float64) string {
	if x > 0 {
		return "+" + num(x)
	}
	return num(x)
}
