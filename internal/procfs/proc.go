// Package procfs reads what the kernel says about processes and cgroups:
// /proc (CPU time, memory, cgroup membership, liveness) and the cgroup
// filesystem (a cgroup's CPU, memory peak, OOM kills), for cgroup v1 and v2.
// Every reader takes its root as a field, so tests read testdata/ trees.
// It also pins this process's threads, which walks /proc/self/task.
package procfs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat.
// Linux fixes it at 100 per second for user space on every architecture Go
// supports, so one tick is 10 ms: too coarse for a 5 ms start-up, which is why
// CPU below is taken from schedstat (nanoseconds) and the ticks are kept only
// as a cross-check.
const clockTicks = 100

// Proc reads process figures from a /proc tree. Root is "/proc" in use and a
// testdata directory in tests.
type Proc struct {
	Root string
}

// ErrGone is returned when the process exited while it was read: its
// /proc files are gone (ENOENT) or no longer readable (ESRCH, a zombie's
// smaps_rollup). It is an os.ErrNotExist.
var ErrGone = fmt.Errorf("process gone: %w", os.ErrNotExist)

// readProcFile reads a /proc file, reporting a vanished process as ErrGone.
func readProcFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
			return nil, fmt.Errorf("read %s: %w (%v)", path, ErrGone, err)
		}
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return b, nil
}

// Host reads the machine's own /proc.
var Host = Proc{Root: "/proc"}

// CPUStat is a process's CPU time, summed over all its threads.
type CPUStat struct {
	// Sched is the sum of the first field of every thread's
	// /proc/PID/task/TID/schedstat: time on a CPU, in nanoseconds.
	Sched time.Duration
	// UserTicks and SysTicks are utime and stime from /proc/PID/stat (all
	// threads, live and reaped), in clock ticks of 1/clockTicks s.
	UserTicks, SysTicks int64
}

// Seconds is the CPU time in seconds: schedstat's figure where the kernel
// has it, else utime+stime.
func (c CPUStat) Seconds() float64 {
	if c.Sched > 0 {
		return c.Sched.Seconds()
	}
	return float64(c.UserTicks+c.SysTicks) / clockTicks
}

// CPU reads the CPU time of process pid, all threads.
func (p Proc) CPU(pid int) (CPUStat, error) {
	var c CPUStat
	statPath := filepath.Join(p.Root, strconv.Itoa(pid), "stat")
	b, err := readProcFile(statPath)
	if err != nil {
		return c, err
	}
	_, fields, err := parseStat(string(b))
	if err != nil {
		return c, fmt.Errorf("parse %s: %w", statPath, err)
	}
	// Fields after comm, counted from 3 (state) as in proc(5): utime is 14,
	// stime is 15, so indexes 11 and 12 here.
	if len(fields) < 13 {
		return c, fmt.Errorf("parse %s: %d fields, want at least 15", statPath, len(fields)+2)
	}
	if c.UserTicks, err = strconv.ParseInt(fields[11], 10, 64); err != nil {
		return c, fmt.Errorf("parse %s utime %q: %w", statPath, fields[11], err)
	}
	if c.SysTicks, err = strconv.ParseInt(fields[12], 10, 64); err != nil {
		return c, fmt.Errorf("parse %s stime %q: %w", statPath, fields[12], err)
	}
	tasks, _ := filepath.Glob(filepath.Join(p.Root, strconv.Itoa(pid), "task", "*", "schedstat"))
	for _, t := range tasks {
		sb, err := os.ReadFile(t)
		if err != nil {
			continue // the thread exited between Glob and ReadFile
		}
		f := strings.Fields(string(sb))
		if len(f) == 0 {
			continue
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return c, fmt.Errorf("parse %s: %w", t, err)
		}
		c.Sched += time.Duration(ns)
	}
	return c, nil
}

// parseStat splits /proc/PID/stat into comm (what lies between the first
// '(' and the last ')', which may itself hold spaces and parentheses) and the
// fields after it.
func parseStat(s string) (comm string, fields []string, err error) {
	i := strings.IndexByte(s, '(')
	j := strings.LastIndexByte(s, ')')
	if i < 0 || j < i {
		return "", nil, fmt.Errorf("no (comm) in %q", s)
	}
	return s[i+1 : j], strings.Fields(s[j+1:]), nil
}

// Mem is a process's memory at one moment, in bytes.
type Mem struct {
	RSS   int64 `json:"rss_bytes"`      // VmRSS: resident, shared pages counted in full
	HWM   int64 `json:"peak_rss_bytes"` // VmHWM: peak resident set
	PSS   int64 `json:"pss_bytes"`      // Pss from smaps_rollup: shared pages divided among sharers
	Anon  int64 `json:"pss_anon_bytes"` // Pss_Anon: private (unshareable) part
	Swap  int64 `json:"swap_bytes"`
	Valid bool  `json:"-"`
}

// Mem reads VmRSS and VmHWM from /proc/PID/status and Pss from
// /proc/PID/smaps_rollup.
func (p Proc) Mem(pid int) (Mem, error) {
	var m Mem
	dir := filepath.Join(p.Root, strconv.Itoa(pid))
	status := filepath.Join(dir, "status")
	if err := scanKB(status, map[string]*int64{"VmRSS:": &m.RSS, "VmHWM:": &m.HWM, "VmSwap:": &m.Swap}); err != nil {
		return m, err
	}
	rollup := filepath.Join(dir, "smaps_rollup")
	if err := scanKB(rollup, map[string]*int64{"Pss:": &m.PSS, "Pss_Anon:": &m.Anon}); err != nil {
		return m, err
	}
	m.Valid = true
	return m, nil
}

// scanKB reads "Key:   N kB" lines into the named fields, in bytes.
func scanKB(path string, want map[string]*int64) error {
	b, err := readProcFile(path)
	if err != nil {
		return err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		dst, ok := want[f[0]]
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return fmt.Errorf("parse %s %s %q: %w", path, f[0], f[1], err)
		}
		*dst = n * 1024
	}
	return nil
}

// Alive reports whether process pid exists and is neither a zombie nor
// dead (state Z or X in /proc/PID/stat).
func (p Proc) Alive(pid int) bool {
	b, err := os.ReadFile(filepath.Join(p.Root, strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	_, f, err := parseStat(string(b))
	return err == nil && len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// Cgroups reads /proc/PID/cgroup: controller → path of the process's
// cgroup in that controller's hierarchy (see ParseCgroups).
func (p Proc) Cgroups(pid int) (map[string]string, error) {
	return readCgroups(filepath.Join(p.Root, strconv.Itoa(pid), "cgroup"))
}

// ThreadCgroups reads /proc/thread-self/cgroup: the cgroups of the calling
// thread (on v1 a thread may sit in other cgroups than its process).
func (p Proc) ThreadCgroups() (map[string]string, error) {
	return readCgroups(filepath.Join(p.Root, "thread-self", "cgroup"))
}

func readCgroups(file string) (map[string]string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", file, err)
	}
	return ParseCgroups(string(b)), nil
}

// ParseCgroups reads the "hierarchy-ID:controller-list:path" lines of a
// /proc/PID/cgroup file into controller → path ("cpu" → "/", "memory" →
// "/a/b"); co-mounted controllers ("cpu,cpuacct") each get the path, and
// the v2 unified hierarchy's line ("0::/path") is under "". Lines without
// three fields are skipped.
func ParseCgroups(s string) map[string]string {
	out := map[string]string{}
	for line := range strings.SplitSeq(s, "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		if f[1] == "" {
			if f[0] == "0" {
				out[""] = f[2]
			}
			continue
		}
		for ctl := range strings.SplitSeq(f[1], ",") {
			out[ctl] = f[2]
		}
	}
	return out
}

// StartTime is process pid's start time after boot, in clock ticks
// (field 22 of /proc/PID/stat): with the PID it names one process, since a
// PID is reused only by a process started later.
func (p Proc) StartTime(pid int) (uint64, error) {
	statPath := filepath.Join(p.Root, strconv.Itoa(pid), "stat")
	b, err := readProcFile(statPath)
	if err != nil {
		return 0, err
	}
	_, fields, err := parseStat(string(b))
	if err != nil {
		return 0, fmt.Errorf("parse %s: %w", statPath, err)
	}
	if len(fields) < 20 {
		return 0, fmt.Errorf("parse %s: %d fields, want at least 22", statPath, len(fields)+2)
	}
	n, err := strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse %s starttime %q: %w", statPath, fields[19], err)
	}
	return n, nil
}
