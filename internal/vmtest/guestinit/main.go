// Command guestinit is the /init of vmtest's guests: a static Go program
// that makes a bare kernel into a place to run tests on pure cgroup v2.
//
// As PID 1 it mounts /proc, /sys, /dev (devtmpfs) and cgroup2 at
// /sys/fs/cgroup with every available controller enabled in the root's
// cgroup.subtree_control, brings up loopback, and starts itself again as
// the runner (PID 1 only reaps orphans, as an init must). The runner prints
// what the guest is (kernel, cgroup mode, controllers, CPUs, memory), runs
// the steps of vmtest.PlanPath with their output on the console, checks
// after each that no cgroup was left behind, copies the exported files out
// over the console, and prints the end marker with the exit status. After
// each step it also checks that no process of the step outlived it (one
// that detached from the step's process group, say). Then
// PID 1 powers the machine off. The console protocol is vmtest.Marker's.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/coldstart-go/coldstart/internal/vmtest"
)

const runnerEnv = "VMTEST_RUNNER"

func main() {
	if os.Getenv(runnerEnv) == "1" {
		os.Exit(runner())
	}
	if os.Getpid() != 1 {
		fmt.Fprintln(os.Stderr, "guestinit: not PID 1: this is a guest's /init, not a command to run")
		os.Exit(2)
	}
	status := 1
	if err := setup(); err != nil {
		say("step setup fail %v", err)
	} else {
		status = runAndReap()
	}
	say("end %d", status)
	unix.Sync()
	_ = unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF)
	select {} // PID 1 must not exit: the kernel would panic
}

// say prints one console protocol line.
func say(format string, args ...any) {
	fmt.Printf("\n"+vmtest.Marker+format+"\n", args...)
}

func setup() error {
	for _, m := range []struct{ src, dir, fstype, opts string }{
		{"proc", "/proc", "proc", ""},
		{"sysfs", "/sys", "sysfs", ""},
		{"devtmpfs", "/dev", "devtmpfs", ""},
		{"cgroup2", "/sys/fs/cgroup", "cgroup2", "nsdelegate"},
		{"tmpfs", "/tmp", "tmpfs", "mode=1777"},
	} {
		if err := os.MkdirAll(m.dir, 0o755); err != nil {
			return err
		}
		if err := unix.Mount(m.src, m.dir, m.fstype, 0, m.opts); err != nil {
			return fmt.Errorf("mount %s on %s: %w", m.fstype, m.dir, err)
		}
	}
	// Results written in the guest name it as their host.
	if err := unix.Sethostname([]byte("vmtest-guest")); err != nil {
		return fmt.Errorf("set hostname: %w", err)
	}
	ctl, err := os.ReadFile("/sys/fs/cgroup/cgroup.controllers")
	if err != nil {
		return err
	}
	for _, c := range strings.Fields(string(ctl)) {
		if err := os.WriteFile("/sys/fs/cgroup/cgroup.subtree_control", []byte("+"+c), 0); err != nil {
			fmt.Printf("guestinit: enable controller %s: %v\n", c, err)
		}
	}
	return loopbackUp()
}

func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("bring up lo: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bring up lo: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bring up lo: %w", err)
	}
	return nil
}

// runAndReap starts the runner and reaps every process that ends up with
// PID 1 as its parent, until the runner itself exits.
func runAndReap() int {
	cmd := exec.Command("/proc/self/exe")
	cmd.Env = append(baseEnv(), runnerEnv+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		say("step runner fail start: %v", err)
		return 1
	}
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			say("step runner fail wait: %v", err)
			return 1
		}
		if pid == cmd.Process.Pid {
			if ws.Exited() {
				return ws.ExitStatus()
			}
			say("step runner fail %v", ws.Signal())
			return 1
		}
	}
}

func baseEnv() []string {
	return []string{"PATH=/bin:/usr/bin:/sbin", "HOME=/root", "TMPDIR=/tmp", "USER=root"}
}

// runner runs the plan; its exit status is the guest's.
func runner() int {
	info()
	raw, err := os.ReadFile(vmtest.PlanPath)
	if err != nil {
		say("step plan fail %v", err)
		return 1
	}
	var plan vmtest.Plan
	if err := json.Unmarshal(raw, &plan); err != nil {
		say("step plan fail read %s: %v", vmtest.PlanPath, err)
		return 1
	}
	status := 0
	for _, s := range plan.Steps {
		if !runStep(s) {
			status = 1
		}
	}
	if !export(plan.Export) {
		status = 1
	}
	return status
}

func info() {
	var u unix.Utsname
	_ = unix.Uname(&u)
	var st unix.Statfs_t
	mode := "unknown"
	if unix.Statfs("/sys/fs/cgroup", &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
		mode = "v2"
	}
	read := func(p string) string {
		b, _ := os.ReadFile(p)
		return strings.Join(strings.Fields(string(b)), ",")
	}
	var si unix.Sysinfo_t
	_ = unix.Sysinfo(&si)
	say("info kernel=%s cgroup=%s controllers=%s subtree_control=%s cpus=%d mem_mib=%d",
		unix.ByteSliceToString(u.Release[:]), mode, read("/sys/fs/cgroup/cgroup.controllers"),
		read("/sys/fs/cgroup/cgroup.subtree_control"), runtime.NumCPU(), si.Totalram*uint64(si.Unit)>>20)
}

func runStep(s vmtest.Step) bool {
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	say("step %s start %s", s.Name, strings.Join(s.Argv, " "))
	ok := true
	fail := func(format string, args ...any) {
		ok = false
		say("step %s fail "+format, append([]any{s.Name}, args...)...)
	}
	if len(s.Argv) == 0 {
		fail("no command")
		return false
	}
	cmd := exec.Command(s.Argv[0], s.Argv[1:]...)
	cmd.Env = append(baseEnv(), s.Env...)
	cmd.Dir = s.Dir
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stdout
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if s.User != 0 {
		fd, undo, err := delegate(s.User)
		defer undo()
		if err != nil {
			fail("delegate a cgroup to uid %d: %v", s.User, err)
			return false
		}
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(s.User), Gid: uint32(s.User)}
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, fd
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		fail("start: %v", err)
		return false
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var poll <-chan time.Time
	if s.InterruptWhenPopulated != "" {
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		poll = t.C
	}
	var err error
	exit, timedOut := -1, false
wait:
	for {
		select {
		case err = <-done:
			exit = cmd.ProcessState.ExitCode()
			break wait
		case <-poll:
			if ev, _ := os.ReadFile(filepath.Join(s.InterruptWhenPopulated, "cgroup.events")); strings.Contains(string(ev), "populated 1") {
				fmt.Printf("guestinit: a process is in %s: SIGINT to %s\n", s.InterruptWhenPopulated, s.Name)
				_ = cmd.Process.Signal(os.Interrupt)
				poll = nil
			}
		case <-timer.C:
			_ = unix.Kill(-cmd.Process.Pid, unix.SIGKILL)
			err = <-done
			timedOut = true
			fail("killed at its timeout %v", timeout)
			break wait
		}
	}
	// Whatever the step left in its process group goes now.
	_ = unix.Kill(-cmd.Process.Pid, unix.SIGKILL)
	say("step %s exit %d %.3f", s.Name, exit, time.Since(start).Seconds())
	if err != nil && !timedOut && !s.AnyExit {
		fail("%v", err)
	}
	if s.InterruptWhenPopulated != "" && poll != nil {
		fail("never interrupted: no process ever was in %s", s.InterruptWhenPopulated)
	}
	left := leftProcesses()
	fmt.Printf("guestinit: step %s left %d processes\n", s.Name, len(left))
	if len(left) > 0 {
		var desc []string
		for _, pid := range left {
			cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			desc = append(desc, fmt.Sprintf("%d(%s)", pid, strings.ReplaceAll(strings.TrimRight(string(cmdline), "\x00"), "\x00", " ")))
			_ = unix.Kill(pid, unix.SIGKILL)
		}
		fail("processes left behind: %s", strings.Join(desc, " "))
	}
	if s.User != 0 {
		// The subtree's own two levels go; what is left in them stays
		// for leftCgroups to report.
		for _, d := range []string{"init", ""} {
			_ = unix.Rmdir(filepath.Join("/sys/fs/cgroup", vmtest.DelegatedCgroup(s.User), d))
		}
	}
	if left := leftCgroups(); len(left) > 0 {
		fail("cgroups left behind: %s", strings.Join(left, " "))
		removeCgroups(left)
	}
	return ok
}

// leftProcesses lists the processes other than PID 1, this runner and
// kernel threads (no command line), waiting up to 2 s for ones that are
// exiting to be reaped: after a step and its process group are gone, each
// is one a step left behind.
func leftProcesses() []int {
	var out []int
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		out = out[:0]
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == 1 || pid == os.Getpid() {
				continue
			}
			if cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && len(cmdline) > 0 {
				out = append(out, pid)
			}
		}
		if len(out) == 0 || time.Now().After(deadline) {
			return out
		}
	}
}

// leftCgroups lists every cgroup below the root, deepest first: the guest
// has no other user of cgroups, so each was left by a step.
func leftCgroups() []string {
	var out []string
	_ = filepath.WalkDir("/sys/fs/cgroup", func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && p != "/sys/fs/cgroup" {
			out = append(out, p)
		}
		return nil
	})
	slices.Reverse(out)
	return out
}

func removeCgroups(dirs []string) {
	for _, d := range dirs {
		_ = os.WriteFile(filepath.Join(d, "cgroup.kill"), []byte("1"), 0)
	}
	for _, d := range dirs {
		for i := 0; i < 100 && unix.Rmdir(d) == unix.EBUSY; i++ {
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func export(globs []string) bool {
	ok := true
	for _, g := range globs {
		files, err := filepath.Glob(g)
		if err != nil || len(files) == 0 {
			say("step export fail no file matches %s", g)
			ok = false
			continue
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				say("step export fail %v", err)
				ok = false
				continue
			}
			if err := vmtest.WriteFileBlock(os.Stdout, f, data); err != nil {
				ok = false
			}
		}
	}
	return ok
}

// delegate makes the cgroup subtree a step with User runs in, chowned to
// uid as systemd chowns a delegated unit's, and returns an O_PATH
// descriptor of its leaf "init" for the step to be cloned into, and what
// closes it.
func delegate(uid int) (fd int, undo func(), err error) {
	undo = func() {}
	top := filepath.Join("/sys/fs/cgroup", vmtest.DelegatedCgroup(uid))
	for _, d := range []string{top, filepath.Join(top, "init")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return -1, undo, err
		}
		for _, f := range []string{"", "cgroup.procs", "cgroup.subtree_control", "cgroup.threads"} {
			if err := os.Chown(filepath.Join(d, f), uid, uid); err != nil {
				return -1, undo, err
			}
		}
	}
	fd, err = unix.Open(filepath.Join(top, "init"), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, undo, err
	}
	return fd, func() { unix.Close(fd) }, nil
}
