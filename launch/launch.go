// Package launch starts server instances for measuring: a plain child
// process (Process), a runc container from an OCI image (Runc), or a
// docker/podman container (Engine), each inside a CPU and memory budget,
// with t0 taken right before the start and phases measured from it. Every
// Launcher returns an Instance that is stopped, reaped and cleaned up by
// Stop.
package launch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/coldstart-go/coldstart/budget"
	"github.com/coldstart-go/coldstart/internal/leftovers"
	"github.com/coldstart-go/coldstart/internal/procfs"
	"github.com/coldstart-go/coldstart/internal/provenance"
	"github.com/coldstart-go/coldstart/prober"
)

// Spec says how to start one server instance.
type Spec struct {
	// Arm names the artifact in errors ("upx", "pgo", ...).
	Arm string
	// Path and Args are the server's command line; Env is added to this
	// process's environment; Dir is its working directory ("" = ours).
	Path string
	Args []string
	Env  []string
	Dir  string
	// Target is where the server will listen. For TCP, PORT is set to its
	// port (the Knative convention).
	Target prober.Target
	// Budget is the CPU and memory budget it runs in (zero = none).
	Budget budget.Budget
	// Group, when set, is a budget shared with other instances: the
	// instance's cgroup is made under the group's (budget.InGroup), whose
	// limits bound it and the group's other members together; Budget is
	// then the group's Member budget. Plain processes (and the prebound
	// and as-user launchers built on them) and runc only.
	Group *budget.Group
	// ID is unique per instance; it keys the instance's cgroup, container
	// and temporary files.
	ID string
	// Log, when set, gets each spawned command line (-v), so a run can be
	// replayed by hand.
	Log io.Writer
	// Stderr, when set, also gets the server's stderr as it is written
	// (besides the tail kept for errors). Plain processes only.
	Stderr io.Writer
}

// Instance is one running server.
type Instance interface {
	// PID is the server process whose /proc figures are the server's.
	PID() int
	// T0 is when the launch began: taken immediately before the process (or
	// container) was started. Every phase is measured from it.
	T0() time.Time
	// Phases are the launcher's own phases from T0 (process_started for a
	// plain process; bundle_ready, created, process_started for runc).
	Phases() []prober.Phase
	// Done is closed when the server has exited.
	Done() <-chan struct{}
	// Err says why it exited (exit status and the tail of its stderr); nil
	// before Done.
	Err() error
	// Usage is what the instance's cgroup reports (zero without one).
	Usage() (budget.Usage, error)
	// Stop ends the server (SIGTERM, SIGKILL after a grace period), reaps
	// it and releases its budget. It is safe to call more than once.
	Stop(ctx context.Context) error
}

// Launcher starts server instances: processes, or containers.
type Launcher interface {
	Launch(ctx context.Context, s Spec) (Instance, error)
}

// ErrExited is returned when a server exits before it is ready.
var ErrExited = errors.New("server exited")

// Process launches servers as plain child processes.
type Process struct {
	// Grace is how long Stop waits after SIGTERM before SIGKILL (0 = 2 s).
	Grace time.Duration
	// Prepare, when set, adjusts the command just before it starts (extra
	// files, namespaces, stdio): what the prebound and snapshot launchers
	// add to a plain process.
	Prepare func(cmd *exec.Cmd)
	// Credential, when set, is the uid and gid the child drops to between
	// fork and exec (nil = ours); AsUser sets it.
	Credential *syscall.Credential

	// noCgroup makes no cgroup for a server whose budget needs none, as
	// where none can be made (tests: the subreaper).
	noCgroup bool
}

var _ Launcher = Process{}

// Launch starts s as a child process inside s.Budget. Every server runs in
// a cgroup of its own, its budget's or, for a budget that needs none, one
// made for it (budget.WithOwnCgroup), so that Stop kills whatever it
// started, detached or not; where no cgroup can be made, this process is
// the child subreaper of the servers it starts and Stop kills what it
// adopted. Containment says which. The cgroup is made before t0, and its
// creation is not in the cold start.
func (l Process) Launch(ctx context.Context, s Spec) (Instance, error) {
	if s.ID == "" {
		s.ID = budget.NewID()
	}
	var opts []budget.PlaceOption
	if !l.noCgroup {
		opts = append(opts, budget.WithOwnCgroup())
	}
	if s.Group != nil {
		opts = append(opts, budget.InGroup(s.Group))
	}
	pl, err := s.Budget.Place(s.ID, opts...)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", s.Arm, err)
	}
	contain := map[budget.Mode]string{budget.ModeV1: ContainCgroupV1, budget.ModeV2: ContainCgroupV2}[pl.Mode()]
	if contain == "" {
		if err := becomeSubreaper(); err != nil {
			pl.Close()
			return nil, fmt.Errorf("start %s: %w", s.Arm, err)
		}
		contain = ContainSubreaper
	}
	cmd := exec.Command(s.Path, s.Args...)
	cmd.Dir = s.Dir
	cmd.Env = append(os.Environ(), s.Env...)
	if p := s.Target.Port(); p != "" {
		cmd.Env = append(cmd.Env, "PORT="+p)
	}
	tail := &TailBuffer{Max: 4096}
	cmd.Stdout = io.Discard
	cmd.Stderr = tail
	if s.Stderr != nil {
		cmd.Stderr = io.MultiWriter(tail, s.Stderr)
	}
	// Its own process group, so a Ctrl-C at the terminal reaches coldstart
	// alone and coldstart stops the server in order.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: l.Credential}
	if l.Prepare != nil {
		l.Prepare(cmd)
	}
	if s.Log != nil {
		fmt.Fprintf(s.Log, "+ %s%s\n", envPrefix(s), shellQuote(append([]string{s.Path}, s.Args...)))
	}
	p := &proc{arm: s.Arm, cmd: cmd, tail: tail, pl: pl, contain: contain, done: make(chan struct{}), grace: l.Grace}
	if p.grace == 0 {
		p.grace = 2 * time.Second
	}
	if contain == ContainSubreaper {
		// Counted before the fork: no other server's Stop kills what
		// this one's descendants leave to us while it runs.
		reaperStarted()
	}
	if err := pl.Start(cmd); err != nil {
		pl.Close()
		if contain == ContainSubreaper {
			reaperStopped()
		}
		return nil, fmt.Errorf("start %s (%s): %w", s.Arm, s.Path, err)
	}
	// t0 is stamped by the placement right before the fork: after the
	// forking thread joined the budget's cgroup, which is the parent's
	// cost, not the server's.
	p.t0 = pl.Started()
	p.started = time.Since(p.t0)
	// Recorded in the run's state file as soon as its PID is known (its
	// cgroup, when it has one, was recorded before the start), so that a
	// SIGKILLed coldstart's server is found and stopped by the next run.
	forget := recordProcess(cmd.Process.Pid)
	go func() {
		defer forget()
		err := pl.Explain(cmd.Wait()) // names the memory limit when it killed the server
		if err != nil {
			err = fmt.Errorf("%w: %s: %v%s", ErrExited, s.Arm, err, tail.Quote())
		} else {
			err = fmt.Errorf("%w: %s: exit status 0%s", ErrExited, s.Arm, tail.Quote())
		}
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(p.done)
	}()
	return p, nil
}

type proc struct {
	arm     string
	cmd     *exec.Cmd
	tail    *TailBuffer
	pl      *budget.Placement
	contain string
	t0      time.Time
	started time.Duration
	grace   time.Duration
	done    chan struct{}

	mu   sync.Mutex
	err  error
	once stopOnce
}

func (p *proc) PID() int              { return p.cmd.Process.Pid }
func (p *proc) T0() time.Time         { return p.t0 }
func (p *proc) Done() <-chan struct{} { return p.done }
func (p *proc) Phases() []prober.Phase {
	return []prober.Phase{{Name: prober.PhaseStarted, Ms: ms(p.started)}}
}

func (p *proc) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

func (p *proc) Usage() (budget.Usage, error) { return p.pl.Usage() }

// Containment says how the server's descendants are kept from outliving
// it: ContainCgroupV1, ContainCgroupV2 or ContainSubreaper.
func (p *proc) Containment() string { return p.contain }

func (p *proc) Stop(ctx context.Context) error {
	release := func() {
		p.pl.Close() // kills all that is left in the server's cgroup
		if p.contain == ContainSubreaper {
			reaperStopped()
		}
	}
	p.once.stop(ctx, p.done, p.grace, release,
		func() { _ = p.cmd.Process.Signal(syscall.SIGTERM) },
		// Not gone after the grace period (or we are out of time): kill
		// the whole process group, then reap.
		func() { _ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL) })
	return nil
}

// stopOnce is how a launched server stops: the first call sends term,
// waits for done up to grace (or until ctx ends), then kill, and waits for
// done; release runs once, after. Later calls wait for done.
type stopOnce struct {
	mu      sync.Mutex
	stopped bool
}

func (s *stopOnce) stop(ctx context.Context, done <-chan struct{}, grace time.Duration, release, term, kill func()) {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		<-done
		return
	}
	s.stopped = true
	s.mu.Unlock()
	defer release()
	select {
	case <-done:
		return
	default:
	}
	term()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
		return
	case <-t.C:
	case <-ctx.Done():
	}
	kill()
	<-done
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func envPrefix(s Spec) string {
	var b strings.Builder
	if p := s.Target.Port(); p != "" {
		b.WriteString("PORT=" + p + " ")
	}
	for _, e := range s.Env {
		b.WriteString(shellQuote([]string{logEnv(e)}) + " ")
	}
	return b.String()
}

// logEnv is how -v shows one K=V of a server's environment: the values
// coldstart sets itself (COLDSTART_*) as they are, any other value
// redacted, since it may be a secret given with --env.
func logEnv(e string) string {
	if strings.HasPrefix(e, "COLDSTART_") {
		return e
	}
	return provenance.RedactEnv(e)
}

func shellQuote(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if a != "" && !strings.ContainsAny(a, " \t\n'\"\\$`|&;<>()*?[]{}~#") {
			q[i] = a
			continue
		}
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// TailBuffer keeps the last Max bytes written to it: a child's stderr,
// quoted in errors.
type TailBuffer struct {
	Max int
	mu  sync.Mutex
	b   []byte
}

func (t *TailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.Max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

// String is the tail as written.
func (t *TailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// Quote is the tail formatted for the end of an error message: "" when
// empty, else "; stderr:\n<tail>".
func (t *TailBuffer) Quote() string {
	s := strings.TrimSpace(t.String())
	if s == "" {
		return ""
	}
	return "; stderr:\n" + s
}

// recordProcess keeps pid (with its start time) in the run's state file
// until the returned func says it was reaped.
func recordProcess(pid int) (forget func()) {
	start, err := procfs.Host.StartTime(pid)
	if err != nil {
		return func() {} // already gone
	}
	done, err := leftovers.Add(leftovers.Entry{Kind: leftovers.Process, PID: pid, Start: start})
	if err != nil {
		return func() {}
	}
	return done
}
