// Package size reads and writes byte sizes in the one grammar every
// coldstart flag takes (--budget mem=256Mi, --payload 1KiB, deploy
// --memory): a number of bytes, or a number with a unit.
package size

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// units are the suffixes Parse accepts, longest first where one ends
// another ("KiB" before "B"). Binary units count in 1024s, the decimal
// ones (kB, KB, MB, GB) in 1000s.
var units = []struct {
	suffix string
	factor int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"Ti", 1 << 40},
	{"kB", 1000}, {"KB", 1000}, {"MB", 1000 * 1000}, {"GB", 1000 * 1000 * 1000},
	{"B", 1},
}

// Known lists the units for messages.
const Known = "B, Ki or KiB, Mi or MiB, Gi or GiB, Ti or TiB (powers of 1024), kB, MB, GB (powers of 1000)"

// Parse reads a size in bytes: a plain number of bytes ("8"), or a number
// with a unit ("8B", "64KiB", "256Mi", "1.5Gi", "2kB"), space between them
// allowed. Decimals need a unit and must come to a whole number of bytes.
// Negative sizes are refused.
func Parse(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.TrimSpace(t[i:])
	if num == "" || strings.Count(num, ".") > 1 || num[0] == '.' || num[len(num)-1] == '.' {
		return 0, fmt.Errorf("malformed size %q (want a number of bytes, or a number with a unit, e.g. 256Mi or 64KiB)", s)
	}
	factor := int64(1)
	if unit != "" {
		found := false
		for _, u := range units {
			if unit == u.suffix {
				factor, found = u.factor, true
				break
			}
		}
		if !found {
			return 0, fmt.Errorf("malformed size %q: unknown unit %q (known: %s)", s, unit, Known)
		}
	}
	if !strings.Contains(num, ".") {
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil || n > math.MaxInt64/factor {
			return 0, fmt.Errorf("size %q out of range", s)
		}
		return n * factor, nil
	}
	if unit == "" {
		return 0, fmt.Errorf("malformed size %q: a fraction of a byte (a decimal needs a unit, e.g. 1.5Gi)", s)
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("malformed size %q: %w", s, err)
	}
	v := f * float64(factor)
	if v >= math.MaxInt64 {
		return 0, fmt.Errorf("size %q out of range", s)
	}
	if v != math.Trunc(v) {
		return 0, fmt.Errorf("size %q is not a whole number of bytes", s)
	}
	return int64(v), nil
}

// Format renders n bytes with the largest of Ki, Mi, Gi, Ti that divides
// it exactly (256Mi), else as plain bytes; Parse reads it back.
func Format(n int64) string {
	for _, u := range []struct {
		suffix string
		shift  uint
	}{{"Ti", 40}, {"Gi", 30}, {"Mi", 20}, {"Ki", 10}} {
		if n != 0 && n%(1<<u.shift) == 0 {
			return strconv.FormatInt(n>>u.shift, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}
