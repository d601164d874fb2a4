package procfs

import (
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

var fixture = Proc{Root: "testdata/proc"}

func TestParseStat(t *testing.T) {
	tests := []struct {
		name, in  string
		comm      string
		nFields   int
		wantError bool
	}{
		{"plain", "1 (init) S 0 1 1", "init", 4, false},
		{"spaces and parens in comm", "9 (a (b) c)) R 1 2", "a (b) c)", 3, false},
		{"empty comm", "9 () R 1", "", 2, false},
		{"no parens", "9 init S 0", "", 0, true},
		{"only an opening paren", "9 (init S 0", "", 0, true},
		{"closing before opening", "9 )x( S", "", 0, true},
		{"empty", "", "", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			comm, f, err := parseStat(tt.in)
			if (err != nil) != tt.wantError {
				t.Fatalf("parseStat(%q) error = %v, want error %v", tt.in, err, tt.wantError)
			}
			if comm != tt.comm || len(f) != tt.nFields {
				t.Errorf("parseStat(%q) = %q, %d fields, want %q, %d", tt.in, comm, len(f), tt.comm, tt.nFields)
			}
		})
	}
}

func TestCPU(t *testing.T) {
	tests := []struct {
		name    string
		pid     int
		want    CPUStat
		seconds float64
		errHas  string // "" = no error
		notExst bool
	}{
		{name: "two threads", pid: 100, want: CPUStat{Sched: 1_000_000_000, UserTicks: 250, SysTicks: 50}, seconds: 1},
		// The threads had gone by the time task/ was read: ticks remain.
		{name: "exited mid-read, no task dir", pid: 203, want: CPUStat{UserTicks: 7, SysTicks: 3}, seconds: 0.1},
		{name: "exited mid-read, empty schedstat", pid: 207, want: CPUStat{UserTicks: 7, SysTicks: 3}, seconds: 0.1},
		{name: "truncated stat", pid: 200, errHas: "10 fields, want at least 15"},
		{name: "comm not closed", pid: 201, errHas: "no (comm)"},
		{name: "utime not a number", pid: 202, errHas: `utime "x"`},
		{name: "schedstat not a number", pid: 204, errHas: "schedstat"},
		{name: "no such process", pid: 999, errHas: "testdata/proc/999/stat", notExst: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := fixture.CPU(tt.pid)
			if tt.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("CPU(%d) error = %v, want one containing %q", tt.pid, err, tt.errHas)
				}
				if tt.notExst && !errors.Is(err, os.ErrNotExist) {
					t.Errorf("CPU(%d) error = %v, want os.ErrNotExist", tt.pid, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("CPU(%d): %v", tt.pid, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("CPU(%d) (-want +got):\n%s", tt.pid, diff)
			}
			if got.Seconds() != tt.seconds {
				t.Errorf("CPU(%d).Seconds() = %v, want %v", tt.pid, got.Seconds(), tt.seconds)
			}
		})
	}
}

func TestMem(t *testing.T) {
	tests := []struct {
		name    string
		pid     int
		want    Mem
		errHas  string
		notExst bool
	}{
		{name: "all figures", pid: 100, want: Mem{RSS: 13000 << 10, HWM: 14000 << 10, PSS: 12000 << 10, Anon: 3000 << 10, Valid: true}},
		{name: "exited mid-read: no smaps_rollup", pid: 203, errHas: "smaps_rollup", notExst: true},
		{name: "malformed value, line missing its value", pid: 205, errHas: `VmHWM: "abc"`},
		{name: "no such process", pid: 999, errHas: "999/status", notExst: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := fixture.Mem(tt.pid)
			if tt.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("Mem(%d) error = %v, want one containing %q", tt.pid, err, tt.errHas)
				}
				if tt.notExst != errors.Is(err, os.ErrNotExist) {
					t.Errorf("Mem(%d) error = %v, ErrNotExist %v, want %v", tt.pid, err, !tt.notExst, tt.notExst)
				}
				if got.Valid {
					t.Errorf("Mem(%d) = %+v after an error, want Valid false", tt.pid, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Mem(%d): %v", tt.pid, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Mem(%d) (-want +got):\n%s", tt.pid, diff)
			}
		})
	}
}

func TestAlive(t *testing.T) {
	for pid, want := range map[int]bool{100: true, 206: false, 999: false, 201: false} {
		if got := fixture.Alive(pid); got != want {
			t.Errorf("Alive(%d) = %v, want %v", pid, got, want)
		}
	}
	if !Host.Alive(os.Getpid()) {
		t.Errorf("Host.Alive(own pid %d) = false", os.Getpid())
	}
}

func TestCgroups(t *testing.T) {
	got, err := fixture.Cgroups(100)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"memory": "/coldstart/run1", "cpu": "/coldstart/run1", "cpuacct": "/coldstart/run1",
		"cpuset": "/", "name=systemd": "/user.slice", "": "/user.slice/session-1.scope",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Cgroups(100) (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(Cgroup{CPU: "/coldstart/run1", CPUAcct: "/coldstart/run1", Memory: "/coldstart/run1"}, CgroupOf(got)); diff != "" {
		t.Errorf("CgroupOf(v1 hybrid) (-want +got):\n%s", diff)
	}
	v2, err := fixture.Cgroups(300)
	if err != nil {
		t.Fatal(err)
	}
	if cg := CgroupOf(v2); cg != (Cgroup{Unified: "/coldstart/run2"}) || cg.Name() != "v2:/coldstart/run2" {
		t.Errorf("CgroupOf(pure v2) = %+v (%s), want Unified /coldstart/run2", cg, cg.Name())
	}
	// Malformed lines (no colon, two fields) are skipped.
	bad, err := fixture.Cgroups(301)
	if err != nil || len(bad) != 0 || !CgroupOf(bad).IsZero() {
		t.Errorf("Cgroups(malformed) = %v, %v; want empty", bad, err)
	}
	if _, err := fixture.Cgroups(999); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Cgroups(no such process) error = %v, want ErrNotExist", err)
	}
	self, err := fixture.ThreadCgroups()
	if err != nil || self["memory"] != "/a/b" || self["cpuacct"] != "/" {
		t.Errorf("ThreadCgroups() = %v, %v", self, err)
	}
	// The host's own: this test's thread is in some cgroup.
	if m, err := Host.ThreadCgroups(); err != nil || len(m) == 0 {
		t.Errorf("Host.ThreadCgroups() = %v, %v; want at least one hierarchy", m, err)
	}
}

func TestCgroupUsage(t *testing.T) {
	v1 := CgroupFS{Root: "testdata/cgroup/v1"}
	v2 := CgroupFS{Root: "testdata/cgroup/v2"}
	tests := []struct {
		name    string
		fs      CgroupFS
		cg      Cgroup
		want    CgroupUsage
		errHas  string
		notExst bool
	}{
		{name: "v1", fs: v1, cg: Cgroup{CPU: "/coldstart/run1", CPUAcct: "/coldstart/run1", Memory: "/coldstart/run1"},
			want: CgroupUsage{CPUSeconds: 0.0512, ThrottledSeconds: 0.025, MemPeakBytes: 15 << 20, OOMKills: 2, LimitHits: 4, Cgroup: "v1:/coldstart/run1"}},
		{name: "v1 cpuacct only", fs: v1, cg: Cgroup{CPUAcct: "/coldstart/run1"},
			want: CgroupUsage{CPUSeconds: 0.0512, Cgroup: "v1:/coldstart/run1"}},
		{name: "v2", fs: v2, cg: Cgroup{Unified: "/coldstart/run2"},
			want: CgroupUsage{CPUSeconds: 0.041, ThrottledSeconds: 0.005, MemPeakBytes: 9 << 20, OOMKills: 1, LimitHits: 3, Cgroup: "v2:/coldstart/run2"}},
		// No memory controller: no memory files, zero figures; the last
		// cpu.stat line is truncated (a key without its value) and skipped.
		{name: "v2 without memory, truncated cpu.stat", fs: v2, cg: Cgroup{Unified: "/coldstart/nomem"},
			want: CgroupUsage{CPUSeconds: 7e-6, Cgroup: "v2:/coldstart/nomem"}},
		{name: "v1 empty memory file", fs: v1, cg: Cgroup{Memory: "/coldstart/trunc"}, errHas: "memory.max_usage_in_bytes"},
		{name: "v2 malformed memory.peak", fs: v2, cg: Cgroup{Unified: "/coldstart/badpeak"}, errHas: `memory.peak`},
		{name: "v2 cgroup gone", fs: v2, cg: Cgroup{Unified: "/coldstart/gone"}, errHas: "cpu.stat", notExst: true},
		{name: "v1 cgroup gone", fs: v1, cg: Cgroup{CPUAcct: "/coldstart/gone"}, errHas: "cpuacct.usage", notExst: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.fs.Usage(tt.cg)
			if tt.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("Usage(%+v) error = %v, want one containing %q", tt.cg, err, tt.errHas)
				}
				if tt.notExst != errors.Is(err, os.ErrNotExist) {
					t.Errorf("Usage(%+v) error = %v: ErrNotExist is %v, want %v", tt.cg, err, !tt.notExst, tt.notExst)
				}
				return
			}
			if err != nil {
				t.Fatalf("Usage(%+v): %v", tt.cg, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Usage(%+v) (-want +got):\n%s", tt.cg, diff)
			}
		})
	}
}

// TestCPUOfARealProcess reads this test's own figures and those of a child
// that exits while being read repeatedly: every read either succeeds or
// fails with ErrNotExist (or a parse error of a half-gone file), and never
// panics.
func TestCPUOfARealProcess(t *testing.T) {
	c, err := Host.CPU(os.Getpid())
	if err != nil || c.Sched <= 0 {
		t.Fatalf("Host.CPU(self) = %+v, %v; want schedstat time", c, err)
	}
	if m, err := Host.Mem(os.Getpid()); err != nil || m.RSS == 0 || m.PSS == 0 {
		t.Fatalf("Host.Mem(self) = %+v, %v", m, err)
	}
	p, err := os.StartProcess("/bin/sh", []string{"sh", "-c", "i=0; while [ $i -lt 2000 ]; do i=$((i+1)); done"}, &os.ProcAttr{})
	if err != nil {
		t.Skipf("no /bin/sh: %v", err)
	}
	done := make(chan struct{})
	go func() { p.Wait(); close(done) }()
	reads, deadline := 0, time.Now().Add(10*time.Second)
	for {
		select {
		case <-done:
			if _, err := Host.CPU(p.Pid); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("CPU of a reaped process: %v, want ErrNotExist", err)
			}
			if reads == 0 {
				t.Errorf("the child exited before any read")
			}
			return
		default:
		}
		if time.Now().After(deadline) {
			p.Kill()
			<-done
			t.Fatal("child did not exit in 10 s")
		}
		reads++
		if _, err := Host.CPU(p.Pid); err != nil && !errors.Is(err, ErrGone) && !strings.Contains(err.Error(), "parse") {
			t.Fatalf("CPU of an exiting process: %v", err)
		}
		if _, err := Host.Mem(p.Pid); err != nil && !errors.Is(err, ErrGone) && !strings.Contains(err.Error(), "parse") {
			t.Fatalf("Mem of an exiting process: %v", err)
		}
	}
}

// TestPinSelf pins every thread of this process to one CPU it may use, checks
// a thread started afterwards inherits it, and restores the CPU set.
func TestPinSelf(t *testing.T) {
	var orig unix.CPUSet
	if err := unix.SchedGetaffinity(0, &orig); err != nil {
		t.Fatal(err)
	}
	first := -1
	for c := 0; c < 1024; c++ {
		if orig.IsSet(c) {
			first = c
			break
		}
	}
	t.Cleanup(func() {
		if err := Host.SetAffinity(&orig); err != nil {
			t.Errorf("restore affinity: %v", err)
		}
	})
	if err := Host.PinSelf([]int{first}); err != nil {
		t.Fatal(err)
	}
	got := make(chan int, 1)
	go func() {
		runtime.LockOSThread() // a thread of its own, maybe new
		defer runtime.UnlockOSThread()
		var s unix.CPUSet
		_ = unix.SchedGetaffinity(0, &s)
		got <- s.Count()
	}()
	if n := <-got; n != 1 {
		t.Errorf("a thread after PinSelf([%d]) may run on %d CPUs, want 1", first, n)
	}
	if err := Host.PinSelf(nil); err != nil {
		t.Errorf("PinSelf(nil) = %v, want no change and no error", err)
	}
	if err := fixture.PinSelf([]int{first}); err == nil || !strings.Contains(err.Error(), "testdata/proc/self/task") {
		t.Errorf("PinSelf with a root without self/task = %v, want an error naming it", err)
	}
}
