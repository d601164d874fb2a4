package cliopts

import (
	"fmt"

	"github.com/coldstart-go/coldstart/internal/render"
	"github.com/coldstart-go/coldstart/internal/stats"
	"github.com/coldstart-go/coldstart/record"
)

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
