package cliopts

import (
	"fmt"
	"time"
)

// AutoDuration is a duration flag that also takes "auto", as a
// pflag.Value: steady run --soak, a fixed length or as long as its
// stopping rule takes. Set stores the duration in D and whether it was
// auto in Auto (D is then 0).
type AutoDuration struct {
	D    *time.Duration
	Auto *bool
}

// String renders the value as Set reads it.
func (v *AutoDuration) String() string {
	if v.Auto != nil && *v.Auto {
		return "auto"
	}
	if v.D == nil {
		return "0s"
	}
	return v.D.String()
}

// Set reads a duration or auto.
func (v *AutoDuration) Set(s string) error {
	if s == "auto" {
		*v.D, *v.Auto = 0, true
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q, want a duration (10m) or auto", s)
	}
	*v.D, *v.Auto = d, false
	return nil
}

// Type names the flag's value kind in help text.
func (v *AutoDuration) Type() string { return "duration|auto" }
