package prober

import "fmt"

// An OptionError is an input of ParseProbe, or of a probe it made, that
// cannot be used: Option names it as ParseProbe does, "probe" (the spec)
// or "request", so that a front end that takes them from its own options
// (coldstart's --probe and --probe-request) can say which of its options
// is at fault without prober knowing them. Functions that take one input
// (ParseAddr, NewHTTP) return plain errors: their caller knows which
// input it gave.
type OptionError struct {
	// Option is the input at fault: "probe" or "request".
	Option string
	// Err says what is wrong with it.
	Err error
}

func (e *OptionError) Error() string { return e.Option + ": " + e.Err.Error() }

func (e *OptionError) Unwrap() error { return e.Err }

// optionf returns an OptionError for option, its Err formatted.
func optionf(option, format string, args ...any) *OptionError {
	return &OptionError{Option: option, Err: fmt.Errorf(format, args...)}
}
