// Package noise measures what else a machine did while coldstart measured:
// the load average, the CPU time everything outside this process and its
// children used (host CPU from /proc/stat minus ours), and steal time. A
// window run beside much other work is flagged busy, and the report says so
// next to the rows it produced.
package noise

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// BusyOtherCPUs: a window in which everything else on the machine kept more
// than this many CPUs busy on average (or steal took more than BusySteal of
// one CPU) is flagged busy. A quarter of a CPU is enough to move a
// millisecond-scale cold start on a 2-core machine.
const (
	BusyOtherCPUs = 0.25
	BusySteal     = 0.05
)

// userHZ is the clock-tick rate /proc/stat counts in (USER_HZ, 100/s on
// every Linux architecture coldstart runs on).
const userHZ = 100

// Reader reads /proc below Root ("" = /proc), so tests read fixtures.
type Reader struct {
	Root string
	// own returns this process's CPU time and that of its waited-for
	// children (nil = getrusage).
	own func() time.Duration
}

// Host reads the real /proc.
var Host = Reader{}

// Snapshot is the machine's counters at one moment.
type Snapshot struct {
	At time.Time
	// Busy is all CPUs' non-idle time (user, nice, system, irq, softirq,
	// steal); Steal the part a hypervisor gave to others.
	Busy, Steal time.Duration
	// Own is this process's CPU time plus its reaped children's.
	Own time.Duration
}

// Window is what the machine did between two snapshots. JSON keys are
// those of the results files' "noise" records.
type Window struct {
	Seconds float64 `json:"seconds"`
	// Load1 is the one-minute load average at the window's end.
	Load1 float64 `json:"load1"`
	// OtherCPUSeconds is the CPU time used by everything except this
	// process and its children (the servers it started and waited for);
	// OtherCPUs the same per second of the window: how many CPUs other work
	// kept busy on average.
	OtherCPUSeconds float64 `json:"other_cpu_seconds"`
	OtherCPUs       float64 `json:"other_cpus"`
	// StealSeconds is CPU time the hypervisor gave to other guests.
	StealSeconds float64 `json:"steal_seconds"`
	// Busy: OtherCPUs > BusyOtherCPUs or steal above BusySteal of a CPU.
	Busy bool `json:"busy"`
}

func (r Reader) path(name string) string {
	root := r.Root
	if root == "" {
		root = "/proc"
	}
	return filepath.Join(root, name)
}

// Take reads the counters now.
func (r Reader) Take() (Snapshot, error) {
	s := Snapshot{At: time.Now()}
	b, err := os.ReadFile(r.path("stat"))
	if err != nil {
		return s, fmt.Errorf("read %s: %w", r.path("stat"), err)
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 9 || f[0] != "cpu" {
		return s, fmt.Errorf("read %s: first line %q is not the cpu total", r.path("stat"), line)
	}
	// user nice system idle iowait irq softirq steal [guest guest_nice]
	// (guest time is already counted in user).
	var v [8]int64
	for i := range v {
		if v[i], err = strconv.ParseInt(f[i+1], 10, 64); err != nil {
			return s, fmt.Errorf("read %s: field %d: %w", r.path("stat"), i+1, err)
		}
	}
	busy := v[0] + v[1] + v[2] + v[5] + v[6] + v[7]
	s.Busy = ticks(busy)
	s.Steal = ticks(v[7])
	own := r.own
	if own == nil {
		own = ownCPU
	}
	s.Own = own()
	return s, nil
}

func ticks(n int64) time.Duration { return time.Duration(n) * time.Second / userHZ }

// Since returns the window from s to now.
func (r Reader) Since(s Snapshot) (Window, error) {
	e, err := r.Take()
	if err != nil {
		return Window{}, err
	}
	w := Between(s, e)
	if w.Load1, err = r.load1(); err != nil {
		return w, err
	}
	return w, nil
}

// Between is the window between two snapshots, without the load average.
func Between(s, e Snapshot) Window {
	secs := e.At.Sub(s.At).Seconds()
	other := (e.Busy - s.Busy) - (e.Own - s.Own)
	w := Window{Seconds: secs, OtherCPUSeconds: max(other.Seconds(), 0), StealSeconds: (e.Steal - s.Steal).Seconds()}
	if secs > 0 {
		w.OtherCPUs = w.OtherCPUSeconds / secs
		w.Busy = w.OtherCPUs > BusyOtherCPUs || w.StealSeconds/secs > BusySteal
	}
	return w
}

func (r Reader) load1() (float64, error) {
	b, err := os.ReadFile(r.path("loadavg"))
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", r.path("loadavg"), err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Split(bufio.ScanWords)
	if !sc.Scan() {
		return 0, fmt.Errorf("read %s: empty", r.path("loadavg"))
	}
	l, err := strconv.ParseFloat(sc.Text(), 64)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", r.path("loadavg"), err)
	}
	return l, nil
}

// ownCPU is this process's user+system CPU time plus that of its children
// that have been waited for.
func ownCPU() time.Duration {
	var total time.Duration
	for _, who := range []int{unix.RUSAGE_SELF, unix.RUSAGE_CHILDREN} {
		var ru unix.Rusage
		if unix.Getrusage(who, &ru) == nil {
			total += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}
	return total
}

// Less returns w with cpuSeconds more of its other work counted as ours
// (a child's CPU in the window, when it has not been waited for), and
// Busy judged again.
func (w Window) Less(cpuSeconds float64) Window {
	w.OtherCPUSeconds = max(w.OtherCPUSeconds-cpuSeconds, 0)
	if w.Seconds > 0 {
		w.OtherCPUs = w.OtherCPUSeconds / w.Seconds
		w.Busy = w.OtherCPUs > BusyOtherCPUs || w.StealSeconds/w.Seconds > BusySteal
	}
	return w
}
