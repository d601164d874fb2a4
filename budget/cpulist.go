package budget

import (
	"errors"
	"fmt"
)

// CPUList is a CPU set as a pflag.Value for the flags that pin one side
// (--pin-server, --pin-prober, --pin-generator): the kernel's list format
// ("1", "0-1", "0,2-3"), read and checked against this machine as a cpus=
// budget is. Empty = not pinned.
type CPUList []int

// String renders the list in the kernel's list format ("" when empty).
func (l *CPUList) String() string {
	if l == nil || len(*l) == 0 {
		return ""
	}
	return FormatCPUList(*l)
}

// Set reads a CPU list. Its errors leave the flag's name to pflag.
func (l *CPUList) Set(v string) error {
	b, err := ParseOne("cpus=" + v)
	if ue := (*usageError)(nil); errors.As(err, &ue) {
		return &usageError{msg: ue.msg, noFlag: true}
	}
	if err != nil {
		return err
	}
	if b.Cores != 0 || b.MemBytes != 0 || len(b.CPUs) == 0 {
		return &usageError{msg: fmt.Sprintf("%q: want CPUs only, e.g. 1, 0-1 or 0,2", v), noFlag: true}
	}
	*l = b.CPUs
	return nil
}

// Type names the flag's value in help text.
func (l *CPUList) Type() string { return "cpus" }
