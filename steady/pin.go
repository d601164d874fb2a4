package steady

import (
	"fmt"
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// PinSelf restricts this process, every thread it has and every thread it
// will start, to cpus, and sets GOMAXPROCS to their number, as `taskset -c`
// would have from the start. Children started later inherit the set unless
// their budget names CPUs of its own.
func PinSelf(cpus []int) error {
	if len(cpus) == 0 {
		return nil
	}
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	// New threads inherit the affinity of the thread that creates them, so
	// pinning every existing thread covers the ones to come.
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return fmt.Errorf("pin generator: %w", err)
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, &set); err != nil && err != unix.ESRCH {
			return fmt.Errorf("pin generator thread %d to CPUs %v: %w", tid, cpus, err)
		}
	}
	runtime.GOMAXPROCS(len(cpus))
	return nil
}
