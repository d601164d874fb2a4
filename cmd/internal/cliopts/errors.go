package cliopts

import (
	"errors"
	"strings"

	"github.com/coldstart-go/coldstart/budget"
)

// NoCgroupHelp is what a command says, naming its flag, where the budget
// library says how a process that is not root gets a cgroup
// (budget.ErrNeedSubtree).
const NoCgroupHelp = "cores= and mem= budgets need a writable cgroup v2 subtree: " +
	"run as root, or under systemd user delegation (e.g. systemd-run --user --scope), " +
	"or run inside a cgroup directory chowned to you and pass it as --cgroup-parent; " +
	"cpus= budgets work without"

// BudgetError is err with budget.ErrNeedSubtree's advice said as
// NoCgroupHelp, which names --cgroup-parent (err as it is otherwise).
func BudgetError(err error) error {
	if !errors.Is(err, budget.ErrNeedSubtree) {
		return err
	}
	return ReplaceMessage(err, budget.ErrNeedSubtree, NoCgroupHelp)
}

// ReplaceMessage returns err with the message of part, an error in its
// tree, said as text instead, the rest of err's message kept: how a
// command names its own flag where a library's error names the library's
// setting (a field of steady.Config, a prober.ParseProbe input), without
// losing the context the library and the command added around it ("arm
// default: ..."). fmt.Errorf's %w and errors.Join keep a wrapped error's
// message whole inside their own, so part's message is found there; when
// it is not (an error that rewords what it wraps), err is returned as it
// is. errors.Is and errors.As see through the result to err.
func ReplaceMessage(err, part error, text string) error {
	msg, old := err.Error(), part.Error()
	i := strings.LastIndex(msg, old)
	if i < 0 || old == text {
		return err
	}
	return &replaced{msg: msg[:i] + text + msg[i+len(old):], err: err}
}

type replaced struct {
	msg string
	err error
}

func (r *replaced) Error() string { return r.msg }
func (r *replaced) Unwrap() error { return r.err }
