package gate

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
)

// Markdown writes the result as a CI job summary: a heading, one
// paragraph on what was compared and how (and the starts refused, the
// figures not carried), one table (arm, budget, figure, base, new, ratio
// [interval], p, verdict), and the verdict on one line, last.
func (r *Result) Markdown(w io.Writer) error {
	var b strings.Builder
	b.WriteString("### coldstart gate\n\n")
	b.WriteString(r.context())
	b.WriteString("\n\n")
	conf := 100 * r.Options.confidence()
	fmt.Fprintf(&b, "| arm | budget | figure | base | new | ratio [%s%% CI] | p | verdict |\n", trimFloat(conf))
	b.WriteString("| --- | --- | --- | ---: | ---: | --- | ---: | --- |\n")
	for _, row := range r.Rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n",
			cell(row.Arm), cell(row.Budget), row.Figure, value(row.Base, row.Unit), value(row.New, row.Unit),
			ratioCell(row), pCell(row), r.verdictCell(row))
	}
	b.WriteString("\n")
	if len(r.Busy) > 0 && r.Options.AllowBusy {
		fmt.Fprintf(&b, "Judged although the host was busy (--allow-busy): %s.\n\n", busyList(r.Busy))
	}
	b.WriteString(r.VerdictLine())
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// VerdictLine is the one-line verdict: pass, fail with the regressions, or
// inconclusive with why.
func (r *Result) VerdictLine() string {
	switch r.Outcome() {
	case Inconclusive:
		return fmt.Sprintf("**Inconclusive:** %s; rerun on a quiet host (or pass --allow-busy).", busyList(r.Busy))
	case Fail:
		var parts []string
		for _, row := range r.Regressions() {
			parts = append(parts, fmt.Sprintf("%s %s", r.where(row), ratioText(row.Ratio)))
		}
		n := len(parts)
		return fmt.Sprintf("**Fail:** %d %s worse by more than %s with significance: %s.", n, plural(n, "figure", "figures"), pct(r.Options.MaxRegression), strings.Join(parts, ", "))
	}
	worse := 0
	for _, row := range r.Rows {
		if row.Verdict == Worse {
			worse++
		}
	}
	s := fmt.Sprintf("**Pass:** no figure worse by more than %s with significance", pct(r.Options.MaxRegression))
	if worse > 0 {
		s += fmt.Sprintf(" (%d worse within it)", worse)
	}
	return s + "."
}

// Summary is the verdict in one plain line, for stderr.
func (r *Result) Summary() string {
	return strings.NewReplacer("**", "").Replace(r.VerdictLine())
}

// where names a row for the verdict line: arm, budget (if any) and figure.
func (r *Result) where(row Row) string {
	if row.Budget == "–" {
		return row.Arm + " " + row.Figure
	}
	return row.Arm + "/" + row.Budget + " " + row.Figure
}

func (r *Result) context() string {
	var b strings.Builder
	if r.Paired {
		fmt.Fprintf(&b, "Base and new arms of one campaign (%s), paired by round (Wilcoxon signed-rank on the per-round ratios; p90 by bootstrap over rounds)", code(strings.Join(r.Base.Files, ", ")))
	} else {
		fmt.Fprintf(&b, "Base %s against new %s, measured apart and compared unpaired (Mann–Whitney; p90 by bootstrap)", sideText(r.Base), sideText(r.New))
	}
	fmt.Fprintf(&b, "; %s%% intervals, p adjusted for %d %s (Holm). A regression is worse by more than %s and significant.",
		trimFloat(100*r.Options.confidence()), r.Tested, plural(r.Tested, "test", "tests"), pct(r.Options.MaxRegression))
	fmt.Fprintf(&b, " Cold starts counted: base %s, new %s.", countText(r.Base), countText(r.New))
	if r.FirstEveryRound != "" {
		fmt.Fprintf(&b, " %s started first in every round: an effect of going second (the previous server's teardown) reads as a difference; coldstart run and gate --base now start the arms in turns, so measure again.", r.FirstEveryRound)
	}
	if len(r.Skipped) > 0 {
		fmt.Fprintf(&b, " Not compared: %s.", strings.Join(r.Skipped, "; "))
	}
	return b.String()
}

func sideText(s Side) string {
	files := plural(len(s.Files), "file", "files")
	return fmt.Sprintf("%s (%d %s)", code(strings.Join(s.Paths, " ")), len(s.Files), files)
}

// countText is "38 (2 refused: 2 answered before its process started)".
func countText(s Side) string {
	t := fmt.Sprint(s.Counted)
	if n := s.RefusedTotal(); n > 0 {
		var why []string
		reasons := make([]string, 0, len(s.Refused))
		for k := range s.Refused {
			reasons = append(reasons, k)
		}
		sort.Strings(reasons)
		for _, k := range reasons {
			why = append(why, fmt.Sprintf("%d %s", s.Refused[k], k))
		}
		t += fmt.Sprintf(" (%d refused as not real cold starts: %s)", n, strings.Join(why, ", "))
	}
	return t
}

func busyList(bs []BusyFile) string {
	s := make([]string, len(bs))
	for i, b := range bs {
		s[i] = b.String()
	}
	return strings.Join(s, "; ")
}

func (r *Result) verdictCell(row Row) string {
	switch row.Verdict {
	case Regression:
		return "**regression**"
	case Worse:
		return "worse, within " + pct(r.Options.MaxRegression)
	case TooFew:
		return fmt.Sprintf("too few values (%d, %d; want %d)", row.NBase, row.NNew, row.Need)
	}
	return string(row.Verdict)
}

func ratioCell(row Row) string {
	if row.Test == TestExact {
		// A size moves by kilobytes in megabytes: four decimals.
		if math.IsNaN(row.Ratio) {
			return "–"
		}
		if row.New == row.Base {
			return "1×"
		}
		return fmt.Sprintf("%.4f× (%+.0f B)", row.Ratio, row.New-row.Base)
	}
	s := ratioText(row.Ratio)
	if !math.IsNaN(row.Low) && !math.IsNaN(row.High) {
		s += fmt.Sprintf(" [%s, %s]", ratioNum(row.Low), ratioNum(row.High))
	}
	return s
}

func ratioText(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return ratioNum(v) + "×"
}

// ratioNum shows a ratio with three decimals (one from 10 up).
func ratioNum(v float64) string {
	if v >= 10 {
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.3f", v)
}

func pCell(row Row) string {
	switch {
	case row.Test == TestExact:
		return "exact"
	case math.IsNaN(row.P):
		return "–"
	case row.P < 0.001:
		return "<0.001"
	}
	return fmt.Sprintf("%.3f", row.P)
}

// value shows a figure in its unit: ms to three significant digits, bytes
// in MiB (two decimals: a binary's size moves by kilobytes).
func value(v float64, unit string) string {
	if math.IsNaN(v) {
		return "–"
	}
	if unit == "B" {
		return fmt.Sprintf("%.2f MiB", v/(1<<20))
	}
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f ms", v)
	case v >= 10:
		return fmt.Sprintf("%.1f ms", v)
	}
	return fmt.Sprintf("%.2f ms", v)
}

func pct(f float64) string { return trimFloat(100*f) + "%" }

func trimFloat(v float64) string {
	s := fmt.Sprintf("%.2f", v)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func code(s string) string { return "`" + strings.ReplaceAll(s, "`", "'") + "`" }

// cell escapes what would end a Markdown table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
