package report

import (
	"strings"

	"github.com/coldstart-go/coldstart/record"
)

// Variants are the campaign's variants (--variant, --sweep) by name: arms
// that start another arm's binary with more settings, each compared
// against that arm (kind "variants") rather than the baseline. Read from
// the artifact rows, which name each one's settings, and from the rows of
// figures (summaries, density and steady rows), which carry them too.
func (c *Campaign) Variants() map[string]record.Variant {
	out := map[string]record.Variant{}
	add := func(arm string, v record.Variant) {
		if v.IsVariant() {
			out[arm] = v
		}
	}
	for _, a := range c.Artifacts {
		add(a.Arm, a.Variant)
	}
	for _, s := range c.Summaries {
		add(s.Arm, s.Variant)
	}
	for _, d := range c.Density {
		add(d.Arm, d.Variant)
	}
	for _, s := range c.Steady {
		add(s.Arm, s.Variant)
	}
	return out
}

// plainArms are arms without c's variants, in order.
func (c *Campaign) plainArms(arms []string) []string {
	vs := c.Variants()
	var out []string
	for _, a := range arms {
		if _, ok := vs[a]; !ok {
			out = append(out, a)
		}
	}
	return out
}

// variantArms are c's variants among arms, in order, each with its arm.
func (c *Campaign) variantArms(arms []string) [][2]string {
	vs := c.Variants()
	var out [][2]string
	for _, a := range arms {
		if v, ok := vs[a]; ok {
			out = append(out, [2]string{a, v.Of})
		}
	}
	return out
}

// variantsTable writes, for a campaign with variants, what each one
// sets: its arm, its environment and its arguments.
func (r *Report) variantsTable(m *mdw, c *Campaign, arms []string) {
	vs := c.Variants()
	var rows [][]string
	for _, a := range arms {
		v, ok := vs[a]
		if !ok {
			continue
		}
		rows = append(rows, []string{a, v.Of, codeList(v.Env), codeList(v.Args)})
	}
	if len(rows) == 0 {
		return
	}
	m.p("Variants: each starts its arm's binary with these settings added, and is compared against that arm as it is.\n\n")
	m.table([]string{"variant", "of arm", "environment", "arguments"}, rows)
}

// codeList renders settings as code, comma-separated ("–" for none).
func codeList(xs []string) string {
	if len(xs) == 0 {
		return "–"
	}
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = "`" + strings.ReplaceAll(x, "`", "'") + "`"
	}
	return strings.Join(out, ", ")
}
