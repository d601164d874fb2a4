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
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/containerd/cgroups/v3"
	"golang.org/x/sys/unix"

	"github.com/coldstart-go/coldstart/internal/procfs"
)

// Usage is what the budget's cgroup itself reports for its processes
// (read by internal/procfs, which also reads a container's cgroup).
type Usage = procfs.CgroupUsage

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

// DefaultParent is the cgroup under which root makes each placement's
// cgroup, from the root of each hierarchy (v1: in each controller's
// hierarchy); WithParent or UseParent picks another, and a process that
// is not root on cgroup v2 uses its delegated subtree instead (see
// delegatedParent). Close removes DefaultParent when it is empty
// (it is coldstart's own, shared by concurrent runs: rmdir fails while
// another run's cgroup is inside, and a run that loses its parent between
// two mkdirs tries again); of another parent, only the levels that
// placement created, when empty.
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
	own        bool
	parent     string
	// mode and mount force a hierarchy (tests): "" = detect.
	mode  Mode
	mount string
	// noMemSearch: a start that fails for the memory limit is not
	// explained by a search (the search's own placements).
	noMemSearch bool
}

// WithAccounting makes Place use a cgroup even for a budget without a
// quota or memory limit, so that Usage reports the process's CPU and memory
// peak; where no cgroup can be made it goes without one (Usage.Cgroup "").
func WithAccounting() PlaceOption { return func(c *placeConfig) { c.accounting = true } }

// WithOwnCgroup makes Place give the process a cgroup of its own even for
// a budget that needs none (max, or a CPU set alone), so that Close kills
// every process it leaves behind, those that detached (setsid, double
// fork) included: no descendant outlives its run. On v1 such a cgroup is
// made only in the freezer hierarchy (else pids, else cpuacct: the first
// mounted), which charges nothing on the paths a server's start runs (a
// memory cgroup would charge every page, a cpu one add a scheduling
// level) and lets Close freeze the group so nothing forks while it is
// killed; on v2 it is a leaf with no controllers enabled, killed through
// cgroup.kill. Usage stays zero for it: it tracks, it does not account.
// Where no cgroup can be made (ErrNoCgroup: not root and no delegated
// subtree) the placement goes without one (Mode ModeNone) and the caller
// must contain the process another way.
func WithOwnCgroup() PlaceOption { return func(c *placeConfig) { c.own = true } }

// WithParent makes the placement's cgroup under parent, a cgroup path from
// the hierarchy's root such as "/coldstart" (root's default) or a subtree
// delegated to this user (overriding UseParent). Missing levels are created, and removed again
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
	cfg  placeConfig  // how it was placed, for placing its like (memStartSearch)
	cpus *unix.CPUSet // nil = leave affinity alone
	cg   cgroup       // nil = no cgroup
	// trackOnly: cg exists only to contain the process (WithOwnCgroup),
	// not for the budget or accounting; Usage reports nothing from it.
	trackOnly bool

	mu      sync.Mutex
	started time.Time
	pid     int
	// restored is closed once the thread that forked the child is back in
	// its own cgroups and affinity (nil: Start used no thread of its own).
	restored chan struct{}
	closed   bool
	final    *Usage
	err      error
}

// cgroup is one placement's cgroup on v1 or v2.
type cgroup interface {
	mode() Mode
	name() string // "v1:/coldstart/ID"
	// prepare readies cmd to be started straight into the cgroup (v2:
	// clone into it); done releases what it holds, once cmd has started.
	prepare(cmd *exec.Cmd) (done func(), err error)
	// join moves the calling OS thread into the cgroup, so that a fork
	// from it starts there (v1), and returns how to move it back (false:
	// it could not). nil leave: nothing to undo.
	join() (leave func() bool, err error)
	usage() (Usage, error)
	// procs lists the processes inside, this one included when one of its
	// threads is.
	procs() ([]int, error)
	delete() error
}

// Place prepares the budget for one process; id keys its cgroup so that
// cleanup never touches anything it did not create (NewID makes one).
// The cgroup, when the budget needs one, is made here: outside the time
// Start measures. Call Close when done, also on failure paths.
func (b Budget) Place(id string, opts ...PlaceOption) (*Placement, error) {
	var cfg placeConfig
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.parent != "" && (!path.IsAbs(cfg.parent) || path.Clean(cfg.parent) != cfg.parent) {
		return nil, fmt.Errorf("place budget %s: parent cgroup %q: want a clean path from the hierarchy's root, e.g. %s", b, cfg.parent, DefaultParent)
	}
	if !idRE.MatchString(id) {
		return nil, fmt.Errorf("place budget %s: id %q: want letters, digits, '.', '_' or '-'", b, id)
	}
	if err := b.Validate(); err != nil {
		return nil, err
	}
	p := &Placement{b: b, id: id, cfg: cfg}
	if len(b.CPUs) > 0 {
		var set unix.CPUSet
		for _, c := range b.CPUs {
			set.Set(c)
		}
		p.cpus = &set
	}
	if b.NeedsCgroup() || cfg.accounting || cfg.own {
		p.trackOnly = !b.NeedsCgroup() && !cfg.accounting
		cg, err := newCgroup(cfg, id, b, p.trackOnly)
		switch {
		case err == nil:
			p.cg = cg
		case !b.NeedsCgroup() && errors.Is(err, ErrNoCgroup):
			// Accounting or containment only: go without.
		default:
			return nil, fmt.Errorf("place budget %s: %w", b, err)
		}
	}
	return p, nil
}

// newCgroup makes the placement's cgroup; trackOnly makes one that only
// contains the process (see WithOwnCgroup).
func newCgroup(cfg placeConfig, id string, b Budget, trackOnly bool) (cgroup, error) {
	mode, mount := cfg.mode, cfg.mount
	if mode == "" {
		mode = HostMode()
	}
	if mount == "" {
		mount = "/sys/fs/cgroup"
	}
	why := ""
	if os.Geteuid() != 0 {
		why = fmt.Sprintf(" (not root: euid %d)", os.Geteuid())
	}
	if cfg.parent == "" && usedParent() != "" {
		cfg.parent = usedParent()
	}
	if cfg.parent == "" {
		var need []string
		if !trackOnly {
			if b.Cores > 0 {
				need = append(need, "cpu")
			}
			if b.MemBytes > 0 {
				need = append(need, "memory")
			}
		}
		var err error
		if cfg.parent, err = resolveParent(mode, mount, need); err != nil {
			return nil, err
		}
	} else if mode == ModeV2 {
		if err := checkJoinable(mount, cfg.parent); err != nil {
			return nil, err
		}
	}
	var (
		cg  cgroup
		err error
	)
	// Another run closing may remove an empty parent between our mkdir of
	// it and of our cgroup inside it (ENOENT): try again.
	for attempt := 0; attempt < 3; attempt++ {
		switch mode {
		case ModeV1, ModeHybrid:
			cg, err = newCgroupV1(mount, cfg.parent, id, b, trackOnly)
		case ModeV2:
			cg, err = newCgroupV2(mount, cfg.parent, id, b, trackOnly)
		default:
			return nil, fmt.Errorf("%w: no cgroup filesystem at %s; "+
				"cores= and mem= budgets need one, cpus= budgets work without", ErrNoCgroup, mount)
		}
		if !errors.Is(err, os.ErrNotExist) {
			break
		}
	}
	switch {
	case err == nil:
		return cg, nil
	case os.Geteuid() != 0 && errors.Is(err, os.ErrPermission):
		return nil, fmt.Errorf("%w%s: %w; %w", ErrNoCgroup, why, err, ErrNeedSubtree)
	case errors.Is(err, os.ErrPermission) || errors.Is(err, unix.EROFS):
		return nil, fmt.Errorf("%w%s: %w; cores= and mem= budgets need one, cpus= budgets work without",
			ErrNoCgroup, why, err)
	case mode == ModeV2 && errors.Is(err, unix.EBUSY):
		// A v2 cgroup with processes in it cannot hand controllers down:
		// typically a container whose processes sit in its root cgroup.
		return nil, fmt.Errorf("%w: %w (a v2 cgroup that holds processes cannot enable controllers for its "+
			"children, as in a container's root cgroup); cores= and mem= budgets need one, cpus= budgets work without",
			ErrNoCgroup, err)
	}
	return nil, err
}

// Check reports whether b can be placed on this machine now, making and
// removing a cgroup where b needs one: for validating --budget before a
// campaign starts. Errors wrap ErrUsage or ErrNoCgroup.
func (b Budget) Check() error {
	p, err := b.Place(NewID())
	if err != nil {
		return err
	}
	return p.Close()
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

// PID is the started process's pid (0 before Start).
func (p *Placement) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pid
}

// Started is when the child was forked: taken after the budget was applied
// to the forking thread and immediately before the fork. Time a cold start
// from here rather than from before Start: on cgroup v1 the first move of a
// thread into a cgroup after a quiet spell waits for an RCU grace period
// (2 ms median, up to tens of ms measured), which is the parent's cost, not
// the server's.
func (p *Placement) Started() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.started
}

// Start starts cmd inside the budget from its first instruction, without
// any helper process in front of it. The CPU set is the affinity of the
// forking thread, which a fork inherits; on cgroup v2 the child is cloned
// into its cgroup (SysProcAttr.UseCgroupFD); on v1 the forking thread joins
// the cgroup for the fork. That thread (locked, never the main one) is put
// back after Start returns, so the parent's clean-up is not in the child's
// time; Close waits for it. A Placement starts one process; do not call
// Close during Start. SysProcAttr.Pdeathsig fires only if the forking
// thread could not be put back (it then exits).
func (p *Placement) Start(cmd *exec.Cmd) error {
	p.mu.Lock()
	switch {
	case p.closed:
		p.mu.Unlock()
		return fmt.Errorf("start %s in budget %s: placement closed", cmd.Path, p.b)
	case !p.started.IsZero() || p.restored != nil:
		p.mu.Unlock()
		return fmt.Errorf("start %s in budget %s: placement already started pid %d", cmd.Path, p.b, p.pid)
	}
	onThread := p.cpus != nil || (p.cg != nil && p.cg.mode() == ModeV1)
	if onThread {
		p.restored = make(chan struct{})
	}
	p.mu.Unlock()

	var err error
	if p.cg != nil {
		var done func()
		if done, err = p.cg.prepare(cmd); err != nil {
			return fmt.Errorf("start %s in budget %s: %w", cmd.Path, p.b, err)
		}
		defer done()
	}
	if onThread {
		res := make(chan error, 1)
		go func() {
			defer close(p.restored)
			p.startOnThread(cmd, res)
		}()
		err = <-res
	} else {
		p.mark()
		err = cmd.Start()
	}
	if err != nil {
		if p.b.MemBytes > 0 && isENOMEM(err) && !p.cfg.noMemSearch {
			return p.memTooSmall(cmd, err)
		}
		return fmt.Errorf("start %s in budget %s: %w", cmd.Path, p.b, err)
	}
	p.mu.Lock()
	p.pid = cmd.Process.Pid
	p.mu.Unlock()
	return nil
}

// settle waits until the thread that forked the child is restored (tests).
func (p *Placement) settle() {
	p.mu.Lock()
	r := p.restored
	p.mu.Unlock()
	if r != nil {
		<-r
	}
}

func (p *Placement) mark() {
	p.mu.Lock()
	p.started = time.Now()
	p.mu.Unlock()
}

// startOnThread runs on a goroutine of its own, locked to its OS thread:
// it gives the thread the budget's CPU set and (v1) cgroups, forks, sends
// cmd.Start's result on res, and then restores the thread. A thread it
// cannot restore is never unlocked: the runtime ends it with the
// goroutine. It never uses the main thread (the thread group leader): on
// cgroup v1 the leader's memory cgroup is the whole process's, and Go
// reads its own cgroup limits from it. It returns once the thread is
// restored.
func (p *Placement) startOnThread(cmd *exec.Cmd, res chan<- error) {
	runtime.LockOSThread()
	if unix.Gettid() == unix.Getpid() {
		// Hold the main thread here; the new goroutine cannot get it.
		defer runtime.UnlockOSThread()
		done := make(chan struct{})
		go func() {
			defer close(done)
			p.startOnThread(cmd, res)
		}()
		<-done
		return
	}
	var old unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		runtime.UnlockOSThread()
		res <- fmt.Errorf("read thread CPU affinity: %w", err)
		return
	}
	threadOK := true
	restore := func() {
		// After any cgroup move back: leaving a v1 cpuset resets affinity.
		if unix.SchedSetaffinity(0, &old) == nil && threadOK {
			runtime.UnlockOSThread()
		}
	}
	var leave func() bool
	if p.cg != nil {
		var err error
		if leave, err = p.cg.join(); err != nil {
			if leave != nil {
				threadOK = leave()
			}
			restore()
			res <- err
			return
		}
	}
	if p.cpus != nil {
		if err := unix.SchedSetaffinity(0, p.cpus); err != nil {
			if leave != nil {
				threadOK = leave()
			}
			restore()
			res <- fmt.Errorf("set CPU affinity %s: %w", FormatCPUList(p.b.CPUs), err)
			return
		}
	}
	p.mark()
	res <- cmd.Start()
	if leave != nil {
		threadOK = leave()
	}
	restore()
}

// Usage reads the cgroup's CPU and memory figures (zero without a cgroup,
// or with one that only contains the process: WithOwnCgroup for a budget
// that needs none). After Close it returns the figures read just before
// the cgroup was removed.
func (p *Placement) Usage() (Usage, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.trackOnly {
		return Usage{}, nil
	}
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
	if ok && ws.Exited() && ws.ExitStatus() == forkExecFailed && p.limitHit() {
		// cgroup v2 charges nothing for joining, so the start "succeeds";
		// then the child of fork cannot exec (nor even write why to the
		// pipe its parent reads) within the limit, which the cgroup counts
		// as a charge that met it. A program's own exit 253 is left alone.
		return fmt.Errorf("%w: mem=%s is below what the process needs to start: it failed between fork and exec, "+
			"without room to report why (exit status %d); give a larger mem= (on cgroup v1 coldstart names the smallest that starts it): %w",
			ErrMemoryTooSmall, FormatSize(p.b.MemBytes), forkExecFailed, waitErr)
	}
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

// limitHit reports whether a charge met the budget's memory limit.
func (p *Placement) limitHit() bool {
	u, err := p.Usage()
	return err == nil && u.LimitHits > 0
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
	if p.closed {
		defer p.mu.Unlock()
		return p.err
	}
	p.closed = true
	restored := p.restored
	if p.cg != nil && !p.trackOnly {
		if u, err := p.cg.usage(); err == nil {
			p.final = &u
		}
	}
	p.mu.Unlock()
	if p.cg == nil {
		return nil
	}
	if restored != nil {
		<-restored // the forking thread has left the cgroup
	}
	final, err := p.closeCgroup()
	p.mu.Lock()
	defer p.mu.Unlock()
	if final != nil {
		p.final = final
	}
	p.err = err
	return err
}

// freezer is a cgroup that can be frozen (v1 with the freezer
// hierarchy): while frozen, nothing inside runs, so nothing forks between
// reading its process list and killing each one.
type freezer interface {
	freeze(until time.Time) bool // false: not frozen (no freezer, or not in time)
	thaw()
}

// closeCgroup empties and deletes the cgroup, returning its figures from
// just before the delete. v2: cgroup.kill kills the whole group at once.
// v1: freeze the group, SIGKILL every process in it, thaw (a frozen task
// dies only once thawed), and repeat until it is empty.
func (p *Placement) closeCgroup() (*Usage, error) {
	self := os.Getpid()
	deadline := time.Now().Add(closeWait)
	for {
		procs, err := p.cg.procs()
		if err != nil {
			return nil, fmt.Errorf("close cgroup %s: %w", p.cg.name(), err)
		}
		if len(procs) == 0 {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("close cgroup %s: processes %v still inside after SIGKILL and %v", p.cg.name(), procs, closeWait)
		}
		mine := slices.Contains(procs, self)
		if k, ok := p.cg.(interface{ killAll() bool }); ok && !mine && k.killAll() {
			time.Sleep(time.Millisecond)
			continue
		}
		// Never freeze a group one of our threads is in (it could not be
		// moved back and is exiting): it would stop with the rest.
		if f, ok := p.cg.(freezer); ok && !mine && f.freeze(deadline) {
			// Read again: a fork between the first read and the freeze
			// is in this list.
			procs, err = p.cg.procs()
			if err == nil {
				err = killEach(procs, self)
			}
			f.thaw()
			if err != nil {
				return nil, fmt.Errorf("close cgroup %s: %w", p.cg.name(), err)
			}
			time.Sleep(time.Millisecond)
			continue
		}
		if err := killEach(procs, self); err != nil {
			return nil, fmt.Errorf("close cgroup %s: %w", p.cg.name(), err)
		}
		time.Sleep(time.Millisecond)
	}
	var final *Usage
	if u, err := p.cg.usage(); err == nil {
		final = &u
	}
	if err := p.cg.delete(); err != nil {
		return final, fmt.Errorf("close cgroup %s: %w", p.cg.name(), err)
	}
	return final, nil
}

// killEach SIGKILLs each of procs but self.
func killEach(procs []int, self int) error {
	for _, pid := range procs {
		// Never this process: one of its threads can only be inside if
		// it could not be moved back, and then it is exiting.
		if pid == self {
			continue
		}
		if err := unix.Kill(pid, unix.SIGKILL); err != nil && !errors.Is(err, unix.ESRCH) {
			return fmt.Errorf("kill %d: %w", pid, err)
		}
	}
	return nil
}
