package budget

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/coldstart-go/coldstart/internal/procfs"
	"github.com/containerd/cgroups/v3/cgroup1"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// cgroupV1 is one placement's cgroup in the v1 cpu, cpuacct, memory,
// freezer (and, with a CPU set, cpuset) hierarchies, at <parent>/<id> in
// each; one that only contains its process (trackOnly) is in the freezer
// hierarchy alone (else pids, else cpuacct).
//
// A process cannot be cloned into a v1 cgroup. Instead the forking thread
// (locked, never the thread group leader) joins the cgroup by writing its
// TID to each controller's tasks file, forks, and goes back: the child
// inherits the thread's cgroups, and the memory it maps after exec is
// charged to the cgroup from its first instruction. No extra exec.
type cgroupV1 struct {
	root  string // the v1 mounts' parent, /sys/fs/cgroup
	group string // /coldstart/<id>
	cg    cgroup1.Cgroup
	subs  []cgroup1.Name // controllers the cgroup exists in
	move  []cgroup1.Name // of those, one per distinct hierarchy (co-mounts)
	// madeParents lists the parent directories Close tries to remove,
	// deepest first (see parentsToRemove).
	madeParents []string
	owned       owned // the group's directories, in the run's state file
	frozen      bool  // the group is in the freezer hierarchy
}

var (
	_ cgroup  = (*cgroupV1)(nil)
	_ freezer = (*cgroupV1)(nil)
)

func newCgroupV1(root, parent, id string, b Budget, trackOnly bool) (_ *cgroupV1, err error) {
	c := &cgroupV1{root: root, group: path.Join(parent, id)}
	type ctl struct {
		name     cgroup1.Name
		required bool
		why      string
	}
	// The freezer hierarchy is for Close: a frozen group cannot fork
	// while its processes are killed. It is joined before the memory
	// cgroup: once the thread is in a small memory cgroup, opening the
	// next tasks file is charged to it and can fail (ENOMEM).
	ctls := []ctl{
		{cgroup1.Cpu, b.Cores > 0, "a CPU quota"},
		{cgroup1.Cpuacct, false, ""},
		{cgroup1.Freezer, false, ""},
		{cgroup1.Memory, b.MemBytes > 0, "a memory limit"},
	}
	if len(b.CPUs) > 0 {
		ctls = append(ctls, ctl{cgroup1.Cpuset, false, ""})
	}
	if trackOnly {
		// One hierarchy is enough to find every descendant: the first of
		// these that is mounted. None of them charges on the paths a
		// start runs (pids charges one counter per fork).
		ctls = []ctl{{cgroup1.Freezer, false, ""}, {cgroup1.Pids, false, ""}, {cgroup1.Cpuacct, false, ""}}
	}
	var (
		subs []cgroup1.Subsystem
		seen = map[string]bool{}
	)
	for _, k := range ctls {
		dir := filepath.Join(root, string(k.name))
		var st unix.Statfs_t
		if err := unix.Statfs(dir, &st); err != nil || st.Type != unix.CGROUP_SUPER_MAGIC {
			if k.required {
				return nil, fmt.Errorf("%w: %s needs the v1 %s controller, not mounted at %s", ErrNoCgroup, k.why, k.name, dir)
			}
			continue
		}
		if trackOnly && len(c.subs) > 0 {
			break
		}
		if _, err := os.Lstat(filepath.Join(dir, c.group)); err == nil {
			return nil, fmt.Errorf("create cgroup %s: %s already exists", c.name(), filepath.Join(dir, c.group))
		}
		real, err := filepath.EvalSymlinks(dir)
		if err != nil {
			return nil, fmt.Errorf("resolve %s: %w", dir, err)
		}
		if !seen[real] {
			seen[real] = true
			c.move = append(c.move, k.name)
			c.madeParents = append(c.madeParents, parentsToRemove(real, parent)...)
		}
		c.subs = append(c.subs, k.name)
		switch k.name {
		case cgroup1.Cpu:
			subs = append(subs, cgroup1.NewCpu(root))
		case cgroup1.Cpuacct:
			subs = append(subs, cgroup1.NewCpuacct(root))
		case cgroup1.Memory:
			subs = append(subs, cgroup1.NewMemory(root))
		case cgroup1.Cpuset:
			subs = append(subs, cgroup1.NewCpuset(root))
		case cgroup1.Freezer:
			subs = append(subs, cgroup1.NewFreezer(root))
			c.frozen = true
		case cgroup1.Pids:
			subs = append(subs, cgroup1.NewPids(root))
		}
	}
	if len(subs) == 0 {
		return nil, fmt.Errorf("%w: no v1 cpu, cpuacct, memory, freezer or pids controller under %s", ErrNoCgroup, root)
	}
	res := &specs.LinuxResources{CPU: &specs.LinuxCPU{}}
	if b.Cores > 0 {
		quota, period := b.CFSQuota()
		res.CPU.Quota, res.CPU.Period = &quota, &period
	}
	if len(b.CPUs) > 0 {
		res.CPU.Cpus = FormatCPUList(b.CPUs)
	}
	if b.MemBytes > 0 {
		res.Memory = &specs.LinuxMemory{Limit: &b.MemBytes}
	}
	defer func() {
		if err != nil {
			c.removeDirs()
		}
	}()
	for _, n := range c.subs {
		if err := c.owned.add(c.dir(n)); err != nil {
			return nil, fmt.Errorf("create cgroup %s: %w", c.name(), err)
		}
	}
	hier := func() ([]cgroup1.Subsystem, error) { return subs, nil }
	c.cg, err = cgroup1.New(cgroup1.StaticPath(c.group), res, cgroup1.WithHierarchy(hier))
	if err != nil {
		return nil, fmt.Errorf("create cgroup %s: %w", c.name(), err)
	}
	if b.MemBytes > 0 {
		// Without swap accounting there is no memsw file and nothing to swap
		// to beyond what memory.limit_in_bytes already bounds.
		memsw := filepath.Join(root, string(cgroup1.Memory), c.group, "memory.memsw.limit_in_bytes")
		if _, err := os.Stat(memsw); err == nil {
			if err := os.WriteFile(memsw, []byte(strconv.FormatInt(b.MemBytes, 10)), 0); err != nil {
				return nil, fmt.Errorf("write %s: %w", memsw, err)
			}
		}
	}
	return c, nil
}

func (c *cgroupV1) mode() Mode   { return ModeV1 }
func (c *cgroupV1) name() string { return "v1:" + c.group }

func (c *cgroupV1) dir(n cgroup1.Name) string { return filepath.Join(c.root, string(n), c.group) }

func (c *cgroupV1) prepare(*exec.Cmd) (func(), error) { return func() {}, nil }

// join writes the calling thread's TID into the cgroup's tasks file in
// each hierarchy; leave writes it back where /proc/thread-self/cgroup said
// it was.
func (c *cgroupV1) join() (leave func() bool, err error) {
	tid := unix.Gettid()
	from, err := procfs.Host.ThreadCgroups()
	if err != nil {
		return nil, err
	}
	// Back in the reverse order: out of the memory cgroup first, so the
	// other moves are not charged to its limit.
	leave = func() bool {
		ok := true
		for _, n := range slices.Backward(c.move) {
			p, found := from[string(n)]
			if !found {
				ok = false
				continue
			}
			tasks := filepath.Join(c.root, string(n), p, "tasks")
			if err := os.WriteFile(tasks, []byte(strconv.Itoa(tid)), 0); err != nil {
				ok = false
			}
		}
		return ok
	}
	if err := c.cg.AddTask(cgroup1.Process{Pid: tid}, c.move...); err != nil {
		return leave, fmt.Errorf("join cgroup %s: %w", c.name(), err)
	}
	return leave, nil
}

// freezeStep bounds how long freeze waits for the group to be FROZEN: a
// task in uninterruptible sleep holds it in FREEZING. Close then kills
// without the freeze, and tries again.
const freezeStep = 100 * time.Millisecond

// freeze writes FROZEN to the group's freezer.state and waits, until the
// earlier of until and freezeStep from now, for the kernel to say FROZEN;
// not frozen by then, it thaws the group again and returns false.
func (c *cgroupV1) freeze(until time.Time) bool {
	if !c.frozen {
		return false
	}
	state := filepath.Join(c.dir(cgroup1.Freezer), "freezer.state")
	if os.WriteFile(state, []byte("FROZEN"), 0) != nil {
		return false
	}
	if step := time.Now().Add(freezeStep); step.Before(until) {
		until = step
	}
	for {
		b, err := os.ReadFile(state)
		if err == nil && strings.TrimSpace(string(b)) == "FROZEN" {
			return true
		}
		if err != nil || time.Now().After(until) {
			c.thaw()
			return false
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// thaw lets the group run again: its killed processes die only then.
func (c *cgroupV1) thaw() {
	_ = os.WriteFile(filepath.Join(c.dir(cgroup1.Freezer), "freezer.state"), []byte("THAWED"), 0)
}

func (c *cgroupV1) procs() ([]int, error) {
	seen := map[int]bool{}
	var out []int
	for _, n := range c.move {
		ps, err := c.cg.Processes(n, true)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return nil, fmt.Errorf("list processes in %s: %w", c.dir(n), err)
		}
		for _, p := range ps {
			if !seen[p.Pid] {
				seen[p.Pid] = true
				out = append(out, p.Pid)
			}
		}
	}
	return out, nil
}

func (c *cgroupV1) delete() error {
	if err := c.cg.Delete(); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	c.owned.forgetGone()
	c.removeParents()
	return nil
}

// removeDirs undoes a partial creation: the group in every controller,
// then the parents this placement made.
func (c *cgroupV1) removeDirs() {
	for _, n := range c.subs {
		_ = unix.Rmdir(c.dir(n))
	}
	c.owned.forgetGone()
	c.removeParents()
}

// removeParents removes the parent directories this placement created,
// when empty: rmdir never removes a cgroup with children, so another run's
// cgroup keeps it (it is then left behind, empty).
func (c *cgroupV1) removeParents() { removeDirs(c.madeParents) }

// parentsToRemove lists the parent directories under root a placement
// removes again when empty, deepest first: DefaultParent, coldstart's
// own, always; of another parent, the levels that do not exist yet (the
// placement is about to create them).
func parentsToRemove(root, parent string) []string {
	if parent == DefaultParent {
		return []string{filepath.Join(root, DefaultParent)}
	}
	return missingDirs(root, parent)
}

// missingDirs lists the directories of cgroup path parent under root that
// do not exist yet, deepest first.
func missingDirs(root, parent string) []string {
	var out []string
	for p := parent; p != "/" && p != "."; p = path.Dir(p) {
		d := filepath.Join(root, p)
		if _, err := os.Lstat(d); err == nil {
			break
		}
		out = append(out, d)
	}
	return out
}

// removeDirs removes empty cgroup directories, in order, ignoring those
// that are gone or still in use.
func removeDirs(dirs []string) {
	for _, d := range dirs {
		_ = unix.Rmdir(d)
	}
}

func (c *cgroupV1) usage() (Usage, error) {
	var cg procfs.Cgroup
	for _, n := range c.subs {
		switch n {
		case cgroup1.Cpuacct:
			cg.CPUAcct = c.group
		case cgroup1.Cpu:
			cg.CPU = c.group
		case cgroup1.Memory:
			cg.Memory = c.group
		}
	}
	u, err := procfs.CgroupFS{Root: c.root}.Usage(cg)
	if err != nil {
		return Usage{}, err
	}
	u.Cgroup = c.name()
	return u, nil
}
