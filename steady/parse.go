package steady

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/coldstart-go/coldstart/internal/size"
)

// maxPayload bounds a payload size: a gRPC message over 2 GiB is refused
// by the library anyway.
const maxPayload = 1 << 31

// ParseSize reads a payload size in the one size grammar (see
// internal/size): "8", "8B", "1KiB", "64KiB", "2kB".
func ParseSize(s string) (int, error) {
	n, err := size.Parse(s)
	if err != nil {
		return 0, err
	}
	if n > maxPayload {
		return 0, fmt.Errorf("payload %q is too large (at most 2Gi)", s)
	}
	return int(n), nil
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
