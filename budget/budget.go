// Package budget runs a process inside a container-shaped CPU and memory
// budget: a CPU set (like taskset), a cgroup CPU quota and a cgroup memory
// limit, on cgroup v1 or v2 through containerd/cgroups/v3.
package budget

import (
	"fmt"
	"os/exec"
)

// Budget is one CPU and memory budget. The zero value is "max": no limit.
type Budget struct {
	// CPUs is the CPU set the process may run on (nil = any).
	CPUs []int `json:"cpus,omitempty"`
	// Cores is a cgroup CPU quota in cores, e.g. 0.5 (0 = no quota).
	Cores float64 `json:"cores,omitempty"`
	// MemBytes is a cgroup memory limit in bytes (0 = no limit).
	MemBytes int64 `json:"mem_bytes,omitempty"`
}

// String renders the budget in the syntax Parse reads ("max" when empty).
func (b Budget) String() string {
	if len(b.CPUs) == 0 && b.Cores == 0 && b.MemBytes == 0 {
		return "max"
	}
	return fmt.Sprintf("%+v", b) // replaced by the real renderer
}

// Usage is what the budget's cgroup itself reports for its processes.
type Usage struct {
	CPUSeconds   float64 `json:"cgroup_cpu_seconds"`
	MemPeakBytes int64   `json:"cgroup_mem_peak_bytes"`
	OOMKills     int     `json:"cgroup_oom_kills"`
}

// Placement holds the resources of one process's budget (a cgroup, a CPU
// set) from before it starts until Close.
type Placement struct {
	b Budget
}

// Place prepares the budget for one process; id keys its cgroup so that
// cleanup never touches anything it did not create.
func (b Budget) Place(id string) (*Placement, error) {
	return &Placement{b: b}, nil
}

// Start starts cmd inside the budget from its first instruction.
func (p *Placement) Start(cmd *exec.Cmd) error { return cmd.Start() }

// Usage reads the cgroup's CPU and memory figures (zero without a cgroup).
func (p *Placement) Usage() (Usage, error) { return Usage{}, nil }

// Close removes what Place created. It is safe to call more than once.
func (p *Placement) Close() error { return nil }
