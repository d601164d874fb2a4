package steady

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/coldstart-go/coldstart/internal/procfs"
)

func cpuSet(cpus []int) *unix.CPUSet {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	return &set
}

// pin holds the generator's CPU set and the one it had before, which is
// restored around each server launch so that a server's budget may name
// CPUs outside the generator's.
type pin struct {
	orig, gen *unix.CPUSet
}

func newPin(cpus []int) (*pin, error) {
	if len(cpus) == 0 {
		return nil, nil
	}
	var orig unix.CPUSet
	if err := unix.SchedGetaffinity(0, &orig); err != nil {
		return nil, fmt.Errorf("read CPU affinity: %w", err)
	}
	return &pin{orig: &orig, gen: cpuSet(cpus)}, nil
}

func (p *pin) apply() error {
	if p == nil {
		return nil
	}
	return procfs.Host.SetAffinity(p.gen)
}

func (p *pin) release() error {
	if p == nil {
		return nil
	}
	return procfs.Host.SetAffinity(p.orig)
}
