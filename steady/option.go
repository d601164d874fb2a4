package steady

import "fmt"

// An OptionError is a setting that cannot run: Validate, Run and RunSoak
// return one for a value of Config (or of its Call or Target) that is
// wrong, or wrong beside another. It names the setting by its field path
// in Config, not by how a front end lets its user set it, so that steady
// knows no front end: a command that fills Config from its own flags (as
// steady run does) says which flag is at fault by calling Text with its
// names for the fields.
type OptionError struct {
	// Option is the setting at fault, as its field path in Config:
	// "Concurrency", "Call.DataFile", "Target.PID". A setting that is
	// missing is the one at fault ("Rate", for an open-loop scenario).
	Option string
	// Err says what is wrong with the setting's value, and what would do.
	Err error
	// Fix, when set, is another setting, by field path as Option, that
	// would let the value run ("Target.AllowRemote" for a remote
	// address). The message names it after Err, in parentheses, so Err
	// ends with what it does ("unless allowed").
	Fix string
}

// Error is the message with the settings named by their field paths.
func (e *OptionError) Error() string { return e.Text(nil) }

func (e *OptionError) Unwrap() error { return e.Err }

// Text is the message with each setting called what name returns for its
// field path (nil = the field path itself): a front end passes its flag
// for each field, so that its user reads the flag at fault, and the flag
// that would fix it, where Error has Config's fields.
func (e *OptionError) Text(name func(option string) string) string {
	if name == nil {
		name = func(option string) string { return option }
	}
	s := name(e.Option) + ": " + e.Err.Error()
	if e.Fix != "" {
		s += " (" + name(e.Fix) + ")"
	}
	return s
}

// optionf returns an OptionError for option, its Err formatted.
func optionf(option, format string, args ...any) *OptionError {
	return &OptionError{Option: option, Err: fmt.Errorf(format, args...)}
}
