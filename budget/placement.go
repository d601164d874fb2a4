package budget

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"regexp"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/containerd/cgroups/v3"
	"golang.org/x/sys/unix"
)

// Usage is what the budget's cgroup itself reports for its processes.
type Usage struct {
	// CPUSeconds is the CPU time (user + system) charged to the cgroup.
	CPUSeconds float64 `json:"cgroup_cpu_seconds"`
	// MemPeakBytes is the cgroup's memory high-water mark (v1
	// memory.max_usage_in_bytes, v2 memory.peak; 0 where the kernel has
	// no memory.peak).
	MemPeakBytes int64 `json:"cgroup_mem_peak_bytes"`
	// OOMKills counts processes the kernel killed for the memory limit.
	OOMKills int `json:"cgroup_oom_kills"`
	// ThrottledSeconds is how long the quota held the cgroup's threads back.
	ThrottledSeconds float64 `json:"cgroup_cpu_throttled_seconds"`
	// Cgroup names the cgroup the figures come from, "v1:/coldstart/ID" or
	// "v2:/coldstart/ID" ("" = no cgroup: all figures are zero).
	Cgroup string `json:"cgroup,omitempty"`
}

// Mode is a cgroup hierarchy layout, or what a Placement uses.
type Mode string

const (
	// ModeNone: no cgroup filesystem, or (for a Placement) no cgroup used.
	ModeNone Mode = "none"
	// ModeV1: legacy cgroup v1 controllers only.
	ModeV1 Mode = "v1"
	// ModeHybrid: v1 controllers plus a cgroup2 mount without controllers
	// (/sys/fs/cgroup/unified); budgets use the v1 controllers.
	ModeHybrid Mode = "hybrid"
	// ModeV2: the unified cgroup v2 hierarchy.
	ModeV2 Mode = "v2"
)

// HostMode reports this machine's cgroup layout (containerd's cgroups.Mode).
func HostMode() Mode {
	switch cgroups.Mode() {
	case cgroups.Legacy:
		return ModeV1
	case cgroups.Hybrid:
		return ModeHybrid
	case cgroups.Unified:
		return ModeV2
	}
	return ModeNone
}

// ErrNoCgroup is returned by Place for a CPU quota or memory limit where no
// writable cgroup hierarchy exists (not root, read-only, no controller).
var ErrNoCgroup = errors.New("no writable cgroup hierarchy")

// ErrMemoryLimit is what Explain says when the kernel killed the process
// for the budget's memory limit.
var ErrMemoryLimit = errors.New("killed by the budget's memory limit")

// DefaultParent is the cgroup under which each placement's cgroup is made,
// from the root of each hierarchy (v1: in each controller's hierarchy);
// WithParent picks another. Only parent cgroups a placement created itself
// are removed again, and only when empty.
const DefaultParent = "/coldstart"

// NewID returns a fresh placement id, "coldstart-<pid>-<8 random hex>".
func NewID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("coldstart-%d-%s", os.Getpid(), hex.EncodeToString(b[:]))
}

var idRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// PlaceOption changes how Place makes a placement.
type PlaceOption func(*placeConfig)

type placeConfig struct {
	accounting bool
	parent     string
	// mode and mount force a hierarchy (tests): "" = detect.
	mode  Mode
	mount string
}

// WithAccounting makes Place use a cgroup even for a budget without a
// quota or memory limit, so that Usage reports the process's CPU and memory
// peak; where no cgroup can be made it goes without one (Usage.Cgroup "").
func WithAccounting() PlaceOption { return func(c *placeConfig) { c.accounting = true } }

// WithParent makes the placement's cgroup under parent, a cgroup path from
// the hierarchy's root such as "/coldstart" (the default) or a subtree
// delegated to this user. Missing levels are created, and removed again
// at Close when empty.
func WithParent(parent string) PlaceOption { return func(c *placeConfig) { c.parent = parent } }

// withHierarchy forces the v1 or v2 backend at a mount point (tests: the
// empty cgroup2 of a hybrid host).
func withHierarchy(m Mode, mount string) PlaceOption {
	return func(c *placeConfig) { c.mode, c.mount = m, mount }
}

// Placement holds the resources of one process's budget (a cgroup, a CPU
// set) from before it starts until Close.
type Placement struct {
	b    Budget
	id   string
	cpus *unix.CPUSet // nil = leave affinity alone
	cg   cgroup       // nil = no cgroup

	mu      sync.Mutex
	started time.Time
	pid     int
	closed  bool
	final   *Usage
	err     error
}

// cgroup is one placement's cgroup on v1 or v2.
type cgroup interface {
	mode() Mode
	name() string // "v1:/coldstart/ID"
	// start runs cmd.Start so that the child begins inside the cgroup,
	// calling pre right before the fork (and not forking if it fails); on
	// v1 it is called on a locked OS thread that is not the main one, and
	// threadOK says whether it put that thread back where it was.
	start(cmd *exec.Cmd, pre func() error) (threadOK bool, err error)
	needsThread() bool
	usage() (Usage, error)
	procs() ([]int, error)
	kill() error // SIGKILL every process inside, without waiting
	delete() error
}

// Place prepares the budget for one process; id keys its cgroup so that
// cleanup never touches anything it did not create (NewID makes one).
// The cgroup, when the budget needs one, is made here: outside the time
// Start measures. Call Close when done, also on failure paths.
func (b Budget) Place(id string, opts ...PlaceOption) (*Placement, error) {
	cfg := placeConfig{parent: DefaultParent}
	for _, o := range opts {
		o(&cfg)
	}
	if !path.IsAbs(cfg.parent) || path.Clean(cfg.parent) != cfg.parent {
		return nil, fmt.Errorf("place budget %s: parent cgroup %q: want a clean path from the hierarchy's root, e.g. %s", b, cfg.parent, DefaultParent)
	}
	if !idRE.MatchString(id) {
		return nil, fmt.Errorf("place budget %s: id %q: want letters, digits, '.', '_' or '-'", b, id)
	}
	if err := b.Validate(); err != nil {
		return nil, err
	}
	p := &Placement{b: b, id: id}
	if len(b.CPUs) > 0 {
		var set unix.CPUSet
		for _, c := range b.CPUs {
			set.Set(c)
		}
		p.cpus = &set
	}
	if b.NeedsCgroup() || cfg.accounting {
		cg, err := newCgroup(cfg, id, b)
		switch {
		case err == nil:
			p.cg = cg
		case !b.NeedsCgroup() && errors.Is(err, ErrNoCgroup):
			// Accounting only: go without.
		default:
			return nil, fmt.Errorf("place budget %s: %w", b, err)
		}
	}
	return p, nil
}

func newCgroup(cfg placeConfig, id string, b Budget) (cgroup, error) {
	mode, mount := cfg.mode, cfg.mount
	if mode == "" {
		mode = HostMode()
	}
	why := ""
	if os.Geteuid() != 0 {
		why = fmt.Sprintf(" (not root: euid %d)", os.Geteuid())
	}
	var (
		cg  cgroup
		err error
	)
	switch mode {
	case ModeV1, ModeHybrid:
		if mount == "" {
			mount = "/sys/fs/cgroup"
		}
		cg, err = newCgroupV1(mount, cfg.parent, id, b)
	case ModeV2:
		if mount == "" {
			mount = "/sys/fs/cgroup"
		}
		cg, err = newCgroupV2(mount, cfg.parent, id, b)
	default:
		return nil, fmt.Errorf("%w: no cgroup filesystem at /sys/fs/cgroup; "+
			"cores= and mem= budgets need one, cpus= budgets work without", ErrNoCgroup)
	}
	if err != nil && (errors.Is(err, os.ErrPermission) || errors.Is(err, unix.EROFS)) {
		return nil, fmt.Errorf("%w%s: %w; cores= and mem= budgets need one, cpus= budgets work without",
			ErrNoCgroup, why, err)
	}
	return cg, err
}

// Budget returns the budget p places.
func (p *Placement) Budget() Budget { return p.b }

// Mode reports what p uses: ModeV1 (also on a hybrid host), ModeV2, or
// ModeNone when it needs no cgroup (a CPU set alone, or max).
func (p *Placement) Mode() Mode {
	if p.cg == nil {
		return ModeNone
	}
	return p.cg.mode()
}

// Cgroup names p's cgroup ("v1:/coldstart/ID"), or "" without one.
func (p *Placement) Cgroup() string {
	if p.cg == nil {
		return ""
	}
	return p.cg.name()
}

// Started is when the child was forked: taken after the budget was applied
// to the starting thread and immediately before the fork. Time a cold start
// from here rather than from before Start: on cgroup v1 the first move of a
// thread into a cgroup after a quiet spell waits for an RCU grace period
// (~15 ms measured), which is the parent's cost, not the server's.
func (p *Placement) Started() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.started
}

// Start starts cmd inside the budget from its first instruction, without
// any helper process in front of it: the CPU set is the affinity of the
// forking thread (a fork inherits it); on cgroup v2 the child is cloned
// into its cgroup (SysProcAttr.UseCgroupFD); on v1 the forking thread joins
// the cgroup for the fork and goes back afterwards. A Placement starts one
// process. SysProcAttr.Pdeathsig keeps working: the forking thread stays.
func (p *Placement) Start(cmd *exec.Cmd) error {
	p.mu.Lock()
	switch {
	case p.closed:
		p.mu.Unlock()
		return fmt.Errorf("start %s in budget %s: placement closed", cmd.Path, p.b)
	case !p.started.IsZero():
		p.mu.Unlock()
		return fmt.Errorf("start %s in budget %s: placement already started pid %d", cmd.Path, p.b, p.pid)
	}
	p.mu.Unlock()
	mark := func() error {
		p.mu.Lock()
		p.started = time.Now()
		p.mu.Unlock()
		return nil
	}
	var err error
	switch {
	case p.cpus == nil && (p.cg == nil || !p.cg.needsThread()):
		if p.cg != nil {
			_, err = p.cg.start(cmd, mark)
		} else {
			_ = mark()
			err = cmd.Start()
		}
	default:
		errc := make(chan error, 1)
		go func() { errc <- p.startOnThread(cmd, mark) }()
		err = <-errc
	}
	if err != nil {
		return fmt.Errorf("start %s in budget %s: %w", cmd.Path, p.b, err)
	}
	p.mu.Lock()
	p.pid = cmd.Process.Pid
	p.mu.Unlock()
	return nil
}

// startOnThread runs on a goroutine of its own. It locks it to its OS
// thread, gives the thread the budget's CPU set (and, on v1, cgroups),
// forks, and restores the thread. A thread it cannot restore is never
// unlocked: the runtime ends it with the goroutine. It never uses the main
// thread (the thread group leader): on cgroup v1 the leader's memory cgroup
// is the whole process's, and Go reads its own cgroup limits from it.
func (p *Placement) startOnThread(cmd *exec.Cmd, mark func() error) (err error) {
	runtime.LockOSThread()
	if unix.Gettid() == unix.Getpid() {
		// Hold the main thread here; the new goroutine cannot get it.
		defer runtime.UnlockOSThread()
		errc := make(chan error, 1)
		go func() { errc <- p.startOnThread(cmd, mark) }()
		return <-errc
	}
	var old unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("read thread CPU affinity: %w", err)
	}
	start := func(cmd *exec.Cmd, pre func() error) (bool, error) {
		if err := pre(); err != nil {
			return true, err
		}
		return true, cmd.Start()
	}
	if p.cg != nil {
		start = p.cg.start
	}
	threadOK, err := start(cmd, func() error {
		if p.cpus != nil {
			if err := unix.SchedSetaffinity(0, p.cpus); err != nil {
				return fmt.Errorf("set CPU affinity %s: %w", FormatCPUList(p.b.CPUs), err)
			}
		}
		return mark()
	})
	// Restore after any cgroup move back (leaving a v1 cpuset resets the
	// affinity). A thread whose cgroups or affinity could not be restored
	// stays locked, and ends with this goroutine.
	if unix.SchedSetaffinity(0, &old) == nil && threadOK {
		runtime.UnlockOSThread()
	}
	return err
}

// Usage reads the cgroup's CPU and memory figures (zero without a cgroup).
// After Close it returns the figures read just before the cgroup was removed.
func (p *Placement) Usage() (Usage, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.final != nil {
		return *p.final, nil
	}
	if p.cg == nil || p.closed {
		return Usage{}, nil
	}
	u, err := p.cg.usage()
	if err != nil {
		return Usage{}, fmt.Errorf("read usage of cgroup %s: %w", p.cg.name(), err)
	}
	return u, nil
}

// Explain turns the error from the process's Wait into one that says so
// when the kernel killed it for the budget's memory limit (errors.Is
// ErrMemoryLimit); any other error comes back unchanged. Call it before
// Close, or after: Close keeps the last figures.
func (p *Placement) Explain(waitErr error) error {
	if waitErr == nil || p.b.MemBytes == 0 {
		return waitErr
	}
	var ee *exec.ExitError
	if !errors.As(waitErr, &ee) {
		return waitErr
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		return waitErr
	}
	u, err := p.Usage()
	if err != nil || u.OOMKills == 0 {
		return waitErr
	}
	return fmt.Errorf("%w mem=%s (cgroup %s: memory peak %s, %d OOM kill(s)): %w",
		ErrMemoryLimit, FormatSize(p.b.MemBytes), u.Cgroup, FormatSize(u.MemPeakBytes), u.OOMKills, waitErr)
}

// closeWait bounds how long Close waits for killed processes to leave.
const closeWait = 5 * time.Second

// Close removes what Place created: it SIGKILLs any process still in the
// cgroup, waits for them to leave it, then deletes the cgroup (and the
// parent cgroups this placement created, when empty). It does
// not reap the started process: its Wait stays the caller's. A CPU set
// needs no cleanup. It is safe to call more than once.
func (p *Placement) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return p.err
	}
	p.closed = true
	if p.cg == nil {
		return nil
	}
	if u, err := p.cg.usage(); err == nil {
		p.final = &u
	}
	p.err = p.closeCgroup()
	return p.err
}

func (p *Placement) closeCgroup() error {
	deadline := time.Now().Add(closeWait)
	for {
		procs, err := p.cg.procs()
		if err != nil {
			return fmt.Errorf("close cgroup %s: %w", p.cg.name(), err)
		}
		if len(procs) == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("close cgroup %s: processes %v still inside after SIGKILL and %v", p.cg.name(), procs, closeWait)
		}
		if err := p.cg.kill(); err != nil {
			return fmt.Errorf("close cgroup %s: %w", p.cg.name(), err)
		}
		time.Sleep(time.Millisecond)
	}
	if err := p.cg.delete(); err != nil {
		return fmt.Errorf("close cgroup %s: %w", p.cg.name(), err)
	}
	return nil
}
