package cliopts

import (
	"errors"
	"fmt"
	"testing"

	"github.com/coldstart-go/coldstart/steady"
)

// TestPGOFlagError: pgocollect's errors name Config's fields; the
// commands' name the flags they came from, the context around kept.
func TestPGOFlagError(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{fmt.Errorf("pgo arm: collect pgo profile from /x: %w", &steady.OptionError{Option: "Command", Err: errors.New("exited before the profile was fetched: exit status 1")}),
			"pgo arm: collect pgo profile from /x: --pgo-load: exited before the profile was fetched: exit status 1"},
		{fmt.Errorf("pgo arm: %w", &steady.OptionError{Option: "Call.Method", Err: errors.New("the server: service hot.v1.Hot has no method Nope (methods: Spin)")}),
			"pgo arm: --pgo-call: the server: service hot.v1.Hot has no method Nope (methods: Spin)"},
		{fmt.Errorf("pgo arm: %w", &steady.OptionError{Option: "Rate", Err: errors.New("x")}), "pgo arm: Rate: x"},
		{errors.New("plain"), "plain"},
	}
	for _, tt := range tests {
		if got := PGOFlagError(tt.err).Error(); got != tt.want {
			t.Errorf("PGOFlagError(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}
