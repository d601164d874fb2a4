package cliopts

import "strings"

// Wrap folds line at spaces so that no line is wider than width columns
// (runes), continuing lines with indent.
func Wrap(line string, width int, indent string) string {
	words := strings.Fields(line)
	var b strings.Builder
	n := 0
	for i, word := range words {
		wl := len([]rune(word))
		if i > 0 && n+1+wl > width {
			b.WriteString("\n" + indent)
			n = len(indent)
		} else if i > 0 {
			b.WriteByte(' ')
			n++
		}
		b.WriteString(word)
		n += wl
	}
	return b.String()
}

// OrderedBy lists the distinct keys of rows in the order first seen: the
// groups a terminal table is printed in (budgets, steps).
func OrderedBy[T any](rows []T, key func(T) string) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range rows {
		if k := key(r); !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}
