package procfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// CgroupFS reads cgroup figures from a cgroup filesystem. Root is
// "/sys/fs/cgroup" in use (the v1 controllers' mounts sit below it, or it
// is the v2 unified mount) and a testdata directory in tests.
type CgroupFS struct {
	Root string
}

// HostCgroups reads the machine's own cgroup filesystem.
var HostCgroups = CgroupFS{Root: "/sys/fs/cgroup"}

// CgroupUsage is what a cgroup itself reports for its processes.
type CgroupUsage struct {
	// CPUSeconds is the CPU time (user + system) charged to the cgroup.
	CPUSeconds float64 `json:"cgroup_cpu_seconds"`
	// MemPeakBytes is the cgroup's memory high-water mark (v1
	// memory.max_usage_in_bytes, v2 memory.peak; 0 where the kernel has
	// no memory.peak).
	MemPeakBytes int64 `json:"cgroup_mem_peak_bytes"`
	// OOMKills counts processes the kernel killed for the memory limit.
	OOMKills int `json:"cgroup_oom_kills"`
	// LimitHits counts charges that met the memory limit (v2
	// memory.events max, v1 memory.failcnt; 0 where the file is absent):
	// how Explain tells a start the limit stopped from a program's own exit.
	LimitHits int `json:"-"`
	// ThrottledSeconds is how long the quota held the cgroup back, summed
	// over CPUs (v1 cpu.stat throttled_time, v2 throttled_usec).
	ThrottledSeconds float64 `json:"cgroup_cpu_throttled_seconds"`
	// Cgroup names the cgroup the figures come from, "v1:/coldstart/ID" or
	// "v2:/coldstart/ID" ("" = no cgroup: all figures are zero).
	Cgroup string `json:"cgroup,omitempty"`
}

// Cgroup names one cgroup by its path in each hierarchy ("/coldstart/ID").
// On cgroup v1 each controller has its own (empty = not in that
// controller); on v2 Unified is the path in the one hierarchy.
type Cgroup struct {
	CPU, CPUAcct, Memory string // v1: the cpu, cpuacct and memory hierarchies
	Unified              string // v2
}

// CgroupOf picks a process's cgroup from its /proc/PID/cgroup (see
// ParseCgroups): the v1 controllers' paths when it has any, else the v2
// unified path.
func CgroupOf(m map[string]string) Cgroup {
	cg := Cgroup{CPU: m["cpu"], CPUAcct: m["cpuacct"], Memory: m["memory"]}
	if cg.CPU == "" && cg.CPUAcct == "" && cg.Memory == "" {
		cg.Unified = m[""]
	}
	return cg
}

// IsZero reports whether cg names no cgroup.
func (cg Cgroup) IsZero() bool { return cg == Cgroup{} }

// Name is "v1:PATH" or "v2:PATH", as CgroupUsage.Cgroup carries it.
func (cg Cgroup) Name() string {
	switch {
	case cg.Unified != "":
		return "v2:" + cg.Unified
	case cg.CPUAcct != "":
		return "v1:" + cg.CPUAcct
	case cg.Memory != "":
		return "v1:" + cg.Memory
	case cg.CPU != "":
		return "v1:" + cg.CPU
	}
	return ""
}

// Usage reads cg's CPU time (v1 cpuacct.usage in ns; v2 cpu.stat
// usage_usec), throttling (cpu.stat), memory peak (v1
// memory.max_usage_in_bytes; v2 memory.peak, which needs Linux 5.19) and
// OOM kills (v1 memory.oom_control, v2 memory.events). A v2 cgroup without
// the memory controller has no memory files: those figures stay zero. Any
// other file that cannot be read or parsed is an error, returned with the
// figures read so far.
func (fs CgroupFS) Usage(cg Cgroup) (CgroupUsage, error) {
	u := CgroupUsage{Cgroup: cg.Name()}
	if cg.Unified != "" {
		d := filepath.Join(fs.Root, cg.Unified)
		cpu, err := readKV(filepath.Join(d, "cpu.stat"))
		if err != nil {
			return u, err
		}
		u.CPUSeconds = float64(cpu["usage_usec"]) / 1e6
		u.ThrottledSeconds = float64(cpu["throttled_usec"]) / 1e6
		if peak, err := readInt(filepath.Join(d, "memory.peak")); err == nil {
			u.MemPeakBytes = peak
		} else if !errors.Is(err, os.ErrNotExist) {
			return u, err
		}
		if ev, err := readKV(filepath.Join(d, "memory.events")); err == nil {
			u.OOMKills = int(ev["oom_kill"])
			u.LimitHits = int(ev["max"])
		} else if !errors.Is(err, os.ErrNotExist) {
			return u, err
		}
		return u, nil
	}
	if cg.CPUAcct != "" {
		ns, err := readInt(filepath.Join(fs.Root, "cpuacct", cg.CPUAcct, "cpuacct.usage"))
		if err != nil {
			return u, err
		}
		u.CPUSeconds = float64(ns) / 1e9
	}
	if cg.CPU != "" {
		kv, err := readKV(filepath.Join(fs.Root, "cpu", cg.CPU, "cpu.stat"))
		if err != nil {
			return u, err
		}
		u.ThrottledSeconds = float64(kv["throttled_time"]) / 1e9
	}
	if cg.Memory != "" {
		d := filepath.Join(fs.Root, "memory", cg.Memory)
		peak, err := readInt(filepath.Join(d, "memory.max_usage_in_bytes"))
		if err != nil {
			return u, err
		}
		u.MemPeakBytes = peak
		kv, err := readKV(filepath.Join(d, "memory.oom_control"))
		if err != nil {
			return u, err
		}
		u.OOMKills = int(kv["oom_kill"])
		if n, err := readInt(filepath.Join(d, "memory.failcnt")); err == nil {
			u.LimitHits = int(n)
		} else if !errors.Is(err, os.ErrNotExist) {
			return u, err
		}
	}
	return u, nil
}

// readInt reads a one-number cgroup file; "max" reads as 0.
func readInt(file string) (int64, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", file, err)
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse %s: %w", file, err)
	}
	return n, nil
}

// readKV reads a flat-keyed "key value" per line file (cpu.stat,
// memory.events, memory.oom_control). Lines that are not a key and a
// number are skipped (some kernels add them; a truncated file ends in one).
func readKV(file string) (map[string]int64, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", file, err)
	}
	out := map[string]int64{}
	for line := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		n, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		out[f[0]] = n
	}
	return out, nil
}
