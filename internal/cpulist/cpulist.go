// Package cpulist reads CPU sets in the kernel's list format ("0",
// "0-3", "0,2-3"), the one grammar of --budget cpus=, the --pin-* flags
// and the budget names results files carry, so that code which only reads
// results (report) need not import the package that controls cgroups.
package cpulist

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// MaxCPU bounds CPU numbers to what a CPU set holds (unix.CPUSet: 1024).
const MaxCPU = 1023

// Parse reads one list: "0", "0-3", "0,2-3", in the order given, neither
// sorted nor checked against the machine.
func Parse(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("empty CPU list (want e.g. cpus=0, cpus=0-1 or cpus=0,2)")
	}
	var out []int
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := parseCPU(lo)
		if err != nil {
			return nil, fmt.Errorf("malformed CPU list %q: %w", s, err)
		}
		b := a
		if isRange {
			if b, err = parseCPU(hi); err != nil {
				return nil, fmt.Errorf("malformed CPU list %q: %w", s, err)
			}
			if b < a {
				return nil, fmt.Errorf("malformed CPU list %q: range %d-%d runs backwards", s, a, b)
			}
		}
		for c := a; c <= b; c++ {
			out = append(out, c)
		}
	}
	return out, nil
}

func parseCPU(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a CPU number", s)
	}
	if n > MaxCPU {
		return 0, fmt.Errorf("CPU %d is beyond %d", n, MaxCPU)
	}
	return n, nil
}
