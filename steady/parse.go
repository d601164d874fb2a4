package steady

import (
	"fmt"
	"strconv"
	"strings"
)

// sizeUnits are the payload size units ParseSize accepts.
var sizeUnits = []struct {
	suffix string
	factor int
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"kB", 1000}, {"KB", 1000}, {"MB", 1000 * 1000}, {"B", 1},
}

// ParseSize reads a payload size: a number of bytes with an optional unit
// B, KiB, MiB (powers of 1024) or kB, MB (powers of 1000): "8", "8B",
// "1KiB", "64KiB".
func ParseSize(s string) (int, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("%q is not a size (want a number of bytes, e.g. 8, 1KiB, 64KiB)", s)
	}
	n, err := strconv.Atoi(t[:i])
	if err != nil {
		return 0, fmt.Errorf("%q is not a size: %w", s, err)
	}
	unit := strings.TrimSpace(t[i:])
	if unit == "" {
		return n, nil
	}
	for _, u := range sizeUnits {
		if unit == u.suffix {
			if n > (1<<31)/u.factor {
				return 0, fmt.Errorf("%q is too large", s)
			}
			return n * u.factor, nil
		}
	}
	return 0, fmt.Errorf("unknown unit %q in %q (known: B, KiB, MiB, kB, MB)", unit, s)
}

// ParseSizes reads a comma-separated list of sizes.
func ParseSizes(list string) ([]int, error) {
	var out []int
	for _, f := range splitList(list) {
		n, err := ParseSize(f)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty list")
	}
	return out, nil
}

// ParseCounts reads a comma-separated list of positive integers
// ("1,32"), as for concurrency levels and connection counts.
func ParseCounts(list string) ([]int, error) {
	var out []int
	for _, f := range splitList(list) {
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("%q is not a whole number", f)
		}
		if n < 1 {
			return nil, fmt.Errorf("%d, want at least 1", n)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty list")
	}
	return out, nil
}

func splitList(list string) []string {
	var out []string
	for _, f := range strings.Split(list, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
