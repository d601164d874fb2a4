package cliopts

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/coldstart-go/coldstart/internal/render"
	"github.com/coldstart-go/coldstart/internal/stats"
	"github.com/coldstart-go/coldstart/record"
)

// BaselineHelp is --baseline's help text, on every command that has it.
const BaselineHelp = "arm every other arm is compared against, with a ratio, interval and verdict (\"\" = default when measured, else the first arm)"

// CheckBaseline refuses a --baseline (baseline; "" = the default choice)
// that names none of the arms to be measured, naming them.
func CheckBaseline(baseline string, arms []string) error {
	if baseline == "" || slices.Contains(arms, baseline) {
		return nil
	}
	return fmt.Errorf("--baseline: %q is not measured (arms: %s)", baseline, strings.Join(arms, ", "))
}

// VsFields are the columns record.VsBaseline adds to a row: what a
// terminal table shows as one "vs BASELINE" cell (VsText).
var VsFields = []string{"vs_baseline_ratio", "vs_baseline_ci_low", "vs_baseline_ci_high", "vs_baseline_p", "vs_baseline_verdict"}

// VsHeader is the column header of the comparison with base: "vs
// default", or "vs baseline" when no row names one.
func VsHeader(base string) string {
	if base == "" {
		return "vs baseline"
	}
	return "vs " + base
}

// VsText is a row's comparison as a table cell: "0.855× [0.752, 0.953]
// faster", "1.02× [0.97, 1.08] ~" (no difference detected, written "~" as
// benchstat does), "baseline" on the baseline's own row, "–" when nothing
// was compared. noCI stands where the interval is missing ("" = "[no
// CI]"), so that a row can say why: "(no CI: 1 round)".
func VsText(v record.VsBaseline, noCI string) string {
	switch {
	case v.Verdict == record.VerdictBaseline:
		return "baseline"
	case v.Ratio == nil:
		return "–"
	}
	iv := noCI
	if v.CILow != nil && v.CIHigh != nil {
		iv = fmt.Sprintf("[%s, %s]", render.Number(*v.CILow), render.Number(*v.CIHigh))
	} else if iv == "" {
		iv = "[no CI]"
	}
	verdict := v.Verdict
	if verdict == string(stats.NoDifference) {
		verdict = "~"
	}
	return fmt.Sprintf("%s× %s %s", render.Number(*v.Ratio), iv, verdict)
}

// VsTextIn is VsText for a row of a table whose "vs" column is against
// base (VsHeader): a row set against another arm (a variant, against its
// own arm) says which, "vs static: 0.95× [0.91, 0.99] faster".
func VsTextIn(v record.VsBaseline, base, noCI string) string {
	t := VsText(v, noCI)
	if v.Compared() && v.Baseline != "" && v.Baseline != base && v.Ratio != nil {
		return "vs " + v.Baseline + ": " + t
	}
	return t
}

// VsColumn is one column a terminal table shows in place of several
// fields: Fields are the json names it replaces (it stands where the
// first of them did), Cell gives row i's text. With no Header the fields
// are dropped and nothing stands in their place (rows that never hold
// them, such as a soak's).
type VsColumn struct {
	Header string
	Fields []string
	Cell   func(i int) string
}

// WriteVs writes rows (a slice of structs) in format f as render.Write
// does, except that at a terminal (render.Table) each of cols replaces
// its fields with its one column: a ratio, its interval and a verdict
// read as one cell, and five columns of them would not fit. JSON, CSV and
// Markdown keep every field.
func WriteVs(w io.Writer, f render.Format, rows any, cols ...VsColumn) error {
	if f != render.Table || len(cols) == 0 {
		return render.Write(w, f, rows)
	}
	header, cells, err := render.Cells(rows)
	if err != nil {
		return err
	}
	var keep []int
	at := map[int]VsColumn{} // kept position → the column shown there
	for j, h := range header {
		replaced := false
		for _, c := range cols {
			if !slices.Contains(c.Fields, h) {
				continue
			}
			replaced = true
			if h == c.Fields[0] && c.Header != "" {
				at[len(keep)] = c
				keep = append(keep, -1)
			}
		}
		if !replaced {
			keep = append(keep, j)
		}
	}
	pick := func(row []string, i int) []string {
		out := make([]string, 0, len(keep))
		for k, j := range keep {
			switch {
			case j >= 0:
				out = append(out, row[j])
			case i < 0:
				out = append(out, at[k].Header)
			default:
				out = append(out, at[k].Cell(i))
			}
		}
		return out
	}
	out := make([][]string, len(cells))
	for i, row := range cells {
		out[i] = pick(row, i)
	}
	return render.WriteTable(w, pick(header, -1), out)
}

// RowsVs is Rows written with WriteVs: rows in the -o format, each of
// cols one column at a terminal; nothing when there are no rows.
func RowsVs[T any](f render.Format, rows []T, cols ...VsColumn) func(io.Writer) error {
	return func(w io.Writer) error {
		if len(rows) == 0 {
			return nil
		}
		return WriteVs(w, f, rows, cols...)
	}
}
