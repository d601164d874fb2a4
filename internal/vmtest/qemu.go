package vmtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Machine is one guest: its kernel, its virtual hardware and how long it
// may run.
type Machine struct {
	// Kernel is the vmlinuz to boot.
	Kernel string
	// CPUs is the number of virtual CPUs (0 = 2).
	CPUs int
	// MemoryMiB is the guest's memory; the initramfs lives in it (0 = 1024).
	MemoryMiB int
	// Timeout bounds the run from start to power-off; a guest still running
	// then is killed (0 = 10 minutes).
	Timeout time.Duration
	// SilenceTimeout kills a guest that printed nothing for this long
	// once it has printed its first line (0 = only Timeout): a hang shows
	// sooner than Timeout, however long a busy host takes to boot it.
	SilenceTimeout time.Duration
	// Console, when set, receives each console line as it arrives.
	Console io.Writer
	// Verbose prints the qemu command line to Console.
	Verbose bool
}

// Cmdline is the kernel command line: console on the first UART, reboot at
// once on a panic (qemu -no-reboot then exits), only errors worse than
// KERN_ERR on the console, and no cgroup v1 controllers: pure v2.
const Cmdline = "console=ttyS0 panic=-1 quiet loglevel=3 cgroup_no_v1=all"

// Args returns qemu's arguments for booting initramfs on m (TCG: /dev/kvm
// hung at boot on the machines this was written on).
func (m Machine) Args(initramfs string) []string {
	cpus, mem := m.CPUs, m.MemoryMiB
	if cpus <= 0 {
		cpus = 2
	}
	if mem <= 0 {
		mem = 1024
	}
	return []string{
		"-accel", "tcg,thread=multi",
		"-smp", strconv.Itoa(cpus), "-m", strconv.Itoa(mem),
		"-nodefaults", "-display", "none", "-monitor", "none", "-serial", "stdio",
		"-no-reboot",
		"-kernel", m.Kernel, "-initrd", initramfs,
		"-append", Cmdline,
	}
}

// Run boots initramfs (whose /init is guestinit) and waits for the guest
// to power off, reading the console protocol as it goes. It returns the
// outcome whenever qemu started; the error says what failed (steps, a
// crash, a hang killed at m.Timeout) with the console's tail.
func (m Machine) Run(ctx context.Context, initramfs string) (*Outcome, error) {
	qemu, err := LookQEMU()
	if err != nil {
		return nil, err
	}
	timeout := m.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ctx, silenced := context.WithCancelCause(ctx)
	defer silenced(nil)
	cmd := exec.CommandContext(ctx, qemu, m.Args(initramfs)...)
	cmd.Cancel = func() error { return cmd.Process.Kill() }
	cmd.WaitDelay = 5 * time.Second
	// qemu does not outlive the test that started it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var stderr tail
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if m.Verbose && m.Console != nil {
		fmt.Fprintf(m.Console, "%s %s\n", qemu, strings.Join(m.Args(initramfs), " "))
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", qemu, err)
	}
	p := newParser()
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var silence *time.Timer
	for sc.Scan() {
		switch {
		case m.SilenceTimeout <= 0:
		case silence == nil:
			silence = time.AfterFunc(m.SilenceTimeout, func() { silenced(errSilent) })
			defer silence.Stop()
		default:
			silence.Reset(m.SilenceTimeout)
		}
		p.line(sc.Text())
		if m.Console != nil {
			fmt.Fprintln(m.Console, strings.TrimRight(sc.Text(), "\r"))
		}
	}
	werr := cmd.Wait()
	o := &p.o
	const tailLines = 40
	switch {
	case o.KernelPanic != "":
		return o, fmt.Errorf("guest %s: %w after %.1fs: %s; console tail:\n%s",
			m.Kernel, ErrKernelPanic, time.Since(start).Seconds(), o.KernelPanic, o.Tail(tailLines))
	case errors.Is(context.Cause(ctx), errSilent):
		return o, fmt.Errorf("guest %s printed nothing for %v: killed as hung; console tail:\n%s", m.Kernel, m.SilenceTimeout, o.Tail(tailLines))
	case ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		return o, fmt.Errorf("guest %s still running after %v: killed; console tail:\n%s", m.Kernel, timeout, o.Tail(tailLines))
	case ctx.Err() != nil:
		return o, fmt.Errorf("guest %s: %w", m.Kernel, ctx.Err())
	case werr != nil && !o.Ended:
		return o, fmt.Errorf("run %s: %w after %.1fs; qemu said: %s; console tail:\n%s",
			qemu, werr, time.Since(start).Seconds(), stderr.String(), o.Tail(tailLines))
	}
	if f := o.Failed(); len(f) > 0 {
		return o, fmt.Errorf("guest %s: %s; console tail:\n%s", m.Kernel, strings.Join(f, "; "), o.Tail(tailLines))
	}
	return o, nil
}

var errSilent = errors.New("guest console silent")

// ErrKernelPanic: the guest kernel panicked, which the guest's programs
// cannot cause by failing: it is a kernel bug or the emulator. The one
// seen in CI under multi-threaded TCG faulted inside the 5-byte NOP of a
// static branch in __alloc_pages, as a memory cgroup OOM-killed: code
// patched under a running vCPU. A caller may boot once more.
var ErrKernelPanic = errors.New("guest kernel panicked")

// tail keeps the last 4 KiB written to it.
type tail struct {
	mu sync.Mutex
	b  []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 4096 {
		t.b = t.b[len(t.b)-4096:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.b))
}
