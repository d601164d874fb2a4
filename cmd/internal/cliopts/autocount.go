package cliopts

import (
	"fmt"
	"strconv"
)

// AutoCount is a count flag that also takes "auto", as a pflag.Value:
// coldstart run --runs and steady run --rounds, a fixed number of rounds
// or as many as the stopping rule (stats.AutoStop) takes. Set stores the
// count in N and whether it was auto in Auto (N is then 0); Unit names
// what is counted in Set's error ("runs", "rounds").
type AutoCount struct {
	N    *int
	Auto *bool
	Unit string
}

// String renders the value as Set reads it.
func (v *AutoCount) String() string {
	if v.Auto != nil && *v.Auto {
		return "auto"
	}
	if v.N == nil {
		return "0"
	}
	return strconv.Itoa(*v.N)
}

// Set reads a count or auto.
func (v *AutoCount) Set(s string) error {
	if s == "auto" {
		*v.N, *v.Auto = 0, true
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("%q, want a number of %s or auto", s, v.Unit)
	}
	*v.N, *v.Auto = n, false
	return nil
}

// Type names the flag's value kind in help text.
func (v *AutoCount) Type() string { return "int|auto" }
