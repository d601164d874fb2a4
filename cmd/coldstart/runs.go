package main

import (
	"fmt"
	"strconv"
)

// runsValue is --runs: a count of rounds, or "auto" (rounds until the
// medians are known to --precision).
type runsValue struct {
	n    *int
	auto *bool
}

func (v *runsValue) String() string {
	if v.auto != nil && *v.auto {
		return "auto"
	}
	if v.n == nil {
		return "0"
	}
	return strconv.Itoa(*v.n)
}

func (v *runsValue) Set(s string) error {
	if s == "auto" {
		*v.n, *v.auto = 0, true
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("%q, want a number of runs or auto", s)
	}
	*v.n, *v.auto = n, false
	return nil
}

func (v *runsValue) Type() string { return "int|auto" }
