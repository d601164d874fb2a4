package cliopts

import (
	"errors"
	"fmt"
	"testing"
)

func TestReplaceMessage(t *testing.T) {
	part := errors.New("Rate: a soak needs an open-loop rate")
	for _, tt := range []struct {
		name string
		err  error
		want string
	}{
		{"the part itself", part, "--rate: a soak needs an open-loop rate"},
		{"wrapped", fmt.Errorf("arm default: %w", part), "arm default: --rate: a soak needs an open-loop rate"},
		{"joined", errors.Join(errors.New("first"), fmt.Errorf("arm b: %w", part)), "first\narm b: --rate: a soak needs an open-loop rate"},
		{"reworded", fmt.Errorf("arm default: %v", errors.New("other")), "arm default: other"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := ReplaceMessage(tt.err, part, "--rate: a soak needs an open-loop rate")
			if got.Error() != tt.want {
				t.Errorf("ReplaceMessage(%q) = %q, want %q", tt.err, got, tt.want)
			}
			if !errors.Is(got, tt.err) {
				t.Errorf("ReplaceMessage(%q) hides the error it restates", tt.err)
			}
		})
	}
}
