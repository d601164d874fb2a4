package procfs

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// PinSelf restricts every thread of this process to cpus (nil or empty =
// leave it as it is). Threads the runtime starts later inherit the
// affinity of the thread that creates them, so this covers them too. It
// walks Root/self/task; a thread that exits meanwhile is skipped.
func (p Proc) PinSelf(cpus []int) error {
	if len(cpus) == 0 {
		return nil
	}
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	return p.SetAffinity(&set)
}

// SetAffinity gives every thread of this process the CPU set set.
func (p Proc) SetAffinity(set *unix.CPUSet) error {
	dir := filepath.Join(p.Root, "self", "task")
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("read %s: %w", dir, err)
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, set); err != nil && err != unix.ESRCH {
			return fmt.Errorf("set CPU affinity of thread %d: %w", tid, err)
		}
	}
	return nil
}
