package budget

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/coldstart-go/coldstart/internal/procfs"
	"github.com/containerd/cgroups/v3/cgroup2"
	"golang.org/x/sys/unix"
)

// cgroupV2 is one placement's cgroup at <parent>/<id> of the unified
// hierarchy. The child is cloned straight into it (clone3 with
// CLONE_INTO_CGROUP, through SysProcAttr.UseCgroupFD): no thread moves.
//
// One that only contains its process (trackOnly) enables no controller: a
// cgroup without controllers costs the server's start nothing, and
// cgroup.kill (Linux 5.14) works in it all the same.
//
// It never sits under this process's own cgroup: a v2 cgroup that holds
// processes cannot hand controllers to its children ("no internal
// processes"), and ours holds us. For root it goes by default under the
// hierarchy's root (DefaultParent); for anyone else beside its own, in
// the subtree delegated to it (see delegatedParent).
type cgroupV2 struct {
	mount       string // /sys/fs/cgroup
	group       string // /coldstart/<id>
	m           *cgroup2.Manager
	madeParents []string // deepest first
	owned       owned    // the group's directory, in the run's state file
}

var _ cgroup = (*cgroupV2)(nil)

func newCgroupV2(mount, parent, id string, b Budget, trackOnly bool) (_ *cgroupV2, err error) {
	c := &cgroupV2{mount: mount, group: path.Join(parent, id)}
	// Root can enable any controller of the hierarchy on the way down;
	// anyone else only what the nearest level that exists already has.
	ctlFile := filepath.Join(mount, "cgroup.controllers")
	if os.Geteuid() != 0 {
		ctlFile = filepath.Join(nearestExisting(mount, parent), "cgroup.controllers")
	}
	raw, err := os.ReadFile(ctlFile)
	if err != nil {
		return nil, fmt.Errorf("%w: read %s: %w", ErrNoCgroup, ctlFile, err)
	}
	avail := strings.Fields(string(raw))
	has := func(ctl string) bool { return slices.Contains(avail, ctl) }
	for _, need := range []struct {
		ctl string
		on  bool
		why string
	}{{"cpu", b.Cores > 0, "a CPU quota"}, {"memory", b.MemBytes > 0, "a memory limit"}} {
		if need.on && !has(need.ctl) {
			return nil, fmt.Errorf("%w: %s needs the %s controller, not available in %s (it has: %s)",
				ErrNoCgroup, need.why, need.ctl, ctlFile, strings.TrimSpace(string(raw)))
		}
	}
	dir := filepath.Join(mount, c.group)
	if _, err := os.Lstat(dir); err == nil {
		return nil, fmt.Errorf("create cgroup %s: %s already exists", c.name(), dir)
	}
	c.madeParents = parentsToRemove(mount, parent)
	res := &cgroup2.Resources{}
	if trackOnly {
		has = func(string) bool { return false }
	}
	if has("cpu") {
		res.CPU = &cgroup2.CPU{}
		if b.Cores > 0 {
			quota, period := b.CFSQuota()
			res.CPU.Max = cgroup2.NewCPUMax(&quota, &period)
		}
		if len(b.CPUs) > 0 && has("cpuset") {
			res.CPU.Cpus = FormatCPUList(b.CPUs)
		}
	}
	if has("memory") {
		res.Memory = &cgroup2.Memory{}
		if b.MemBytes > 0 {
			res.Memory.Max = &b.MemBytes
		}
	}
	defer func() {
		if err != nil {
			_ = unix.Rmdir(dir)
			c.owned.forgetGone()
			c.removeParent()
		}
	}()
	if err := c.owned.add(dir); err != nil {
		return nil, fmt.Errorf("create cgroup %s: %w", c.name(), err)
	}
	c.m, err = cgroup2.NewManager(mount, c.group, res)
	if err != nil {
		return nil, fmt.Errorf("create cgroup %s: %w", c.name(), err)
	}
	if b.MemBytes > 0 {
		// No swapping past the limit, as in a Kubernetes pod; without swap
		// accounting the file is absent and there is nothing to set.
		swap := filepath.Join(dir, "memory.swap.max")
		if _, err := os.Stat(swap); err == nil {
			if err := os.WriteFile(swap, []byte("0"), 0); err != nil {
				return nil, fmt.Errorf("write %s: %w", swap, err)
			}
		}
	}
	return c, nil
}

// nearestExisting is the directory of parent, or of its nearest ancestor
// that exists, under mount.
func nearestExisting(mount, parent string) string {
	for p := parent; ; p = path.Dir(p) {
		dir := filepath.Join(mount, p)
		if _, err := os.Stat(dir); err == nil || p == "/" {
			return dir
		}
	}
}

func (c *cgroupV2) mode() Mode   { return ModeV2 }
func (c *cgroupV2) name() string { return "v2:" + c.group }
func (c *cgroupV2) dir() string  { return filepath.Join(c.mount, c.group) }

// join: nothing to do, the child is cloned straight into the cgroup.
func (c *cgroupV2) join() (func() bool, error) { return nil, nil }

// prepare makes cmd clone into the cgroup (clone3 CLONE_INTO_CGROUP);
// done closes the cgroup's file descriptor.
func (c *cgroupV2) prepare(cmd *exec.Cmd) (done func(), err error) {
	if cmd.SysProcAttr != nil && cmd.SysProcAttr.UseCgroupFD {
		return nil, errors.New("SysProcAttr.UseCgroupFD is already set: the budget needs it")
	}
	fd, err := unix.Open(c.dir(), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open cgroup %s: %w", c.dir(), err)
	}
	attr := syscall.SysProcAttr{}
	if cmd.SysProcAttr != nil {
		attr = *cmd.SysProcAttr
	}
	attr.UseCgroupFD, attr.CgroupFD = true, fd
	cmd.SysProcAttr = &attr
	return func() { unix.Close(fd) }, nil
}

func (c *cgroupV2) procs() ([]int, error) {
	ps, err := c.m.Procs(true)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("list processes in %s: %w", c.dir(), err)
	}
	out := make([]int, len(ps))
	for i, p := range ps {
		out[i] = int(p)
	}
	return out, nil
}

// killAll kills the whole subtree at once through cgroup.kill (Linux
// 5.14), forks included; false where the kernel has no cgroup.kill.
func (c *cgroupV2) killAll() bool {
	return os.WriteFile(filepath.Join(c.dir(), "cgroup.kill"), []byte("1"), 0) == nil
}

func (c *cgroupV2) delete() error {
	if err := c.m.Delete(); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	c.owned.forgetGone()
	c.removeParent()
	return nil
}

func (c *cgroupV2) removeParent() { removeDirs(c.madeParents) }

func (c *cgroupV2) usage() (Usage, error) {
	u, err := procfs.CgroupFS{Root: c.mount}.Usage(procfs.Cgroup{Unified: c.group})
	if err != nil {
		return Usage{}, err
	}
	u.Cgroup = c.name()
	return u, nil
}
