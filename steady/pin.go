package steady

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// setAffinity restricts every thread of this process to set. Threads the
// runtime starts later inherit the affinity of the thread that creates
// them, so this also covers the threads to come.
func setAffinity(set *unix.CPUSet) error {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return fmt.Errorf("pin generator: %w", err)
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, set); err != nil && err != unix.ESRCH {
			return fmt.Errorf("pin generator thread %d: %w", tid, err)
		}
	}
	return nil
}

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
	return setAffinity(p.gen)
}

func (p *pin) release() error {
	if p == nil {
		return nil
	}
	return setAffinity(p.orig)
}
