package cliopts

import (
	"errors"
	"fmt"
	"testing"

	"github.com/coldstart-go/coldstart/budget"
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

func TestBudgetError(t *testing.T) {
	err := fmt.Errorf("start default: place budget cores=0.5: %w (not root: euid 1000): mkdir: permission denied; %w", budget.ErrNoCgroup, budget.ErrNeedSubtree)
	got := BudgetError(err)
	want := "start default: place budget cores=0.5: no writable cgroup hierarchy (not root: euid 1000): mkdir: permission denied; " + NoCgroupHelp
	if got.Error() != want {
		t.Errorf("BudgetError = %q, want %q", got, want)
	}
	if !errors.Is(got, budget.ErrNoCgroup) {
		t.Errorf("BudgetError hides ErrNoCgroup")
	}
	if other := errors.New("other"); BudgetError(other) != other {
		t.Errorf("BudgetError changed an error without the budget's advice")
	}
}
