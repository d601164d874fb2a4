package budget

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Group is one budget shared by several processes, as a node's allocatable
// is shared by the pods on it: a cgroup carrying the budget's CPU quota,
// CPU set and memory limit, under which each member is placed in a child
// cgroup of its own (InGroup), so that it is started, contained, killed and
// accounted alone while the group's limits bound all of them together.
// Usage reads the whole group: the CPU and the memory high-water mark of
// every member, from the group's creation on.
//
// On cgroup v1 the group also exists, without limits, in every other
// mounted hierarchy (blkio, devices, pids, the named and unified ones of a
// hybrid host), so that a container runtime that places a member under it
// in all of them (runc with an absolute cgroups path) finds its parent
// there and Close can remove it, rather than leaving an empty directory in
// each for every group.
type Group struct {
	pl   *Placement
	path string // from each hierarchy's root: /coldstart/<id>
	// extra are the group's directories outside the placement's
	// hierarchies (v1), each in the run's state file; extraParents the
	// DefaultParent directories that hold them, removed when empty.
	extra        owned
	extraParents []string
}

// Group makes the cgroup of a group sharing b; id keys it as Place's id
// does. Unlike Place it always makes a cgroup, for the group's figures even
// where b needs none; where none can be made the error wraps ErrNoCgroup.
// Close the group after its members.
func (b Budget) Group(id string) (*Group, error) {
	pl, err := b.Place(id, WithAccounting())
	if err != nil {
		return nil, err
	}
	if pl.cg == nil {
		return nil, fmt.Errorf("group budget %s: %w (a group's members share one cgroup: run as root, "+
			"or in a delegated cgroup subtree)", b, ErrNoCgroup)
	}
	g := &Group{pl: pl, path: path.Join(DefaultParent, id)}
	if pl.Mode() == ModeV1 {
		if err := g.everyHierarchy("/sys/fs/cgroup"); err != nil {
			g.Close()
			return nil, fmt.Errorf("group budget %s: %w", b, err)
		}
	}
	return g, nil
}

// everyHierarchy makes the group's directory in each cgroup hierarchy
// mounted under root that the placement did not make it in.
func (g *Group) everyHierarchy(root string) error {
	mounts, err := filepath.Glob(filepath.Join(root, "*"))
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, m := range mounts {
		var st unix.Statfs_t
		if unix.Statfs(m, &st) != nil || (st.Type != unix.CGROUP_SUPER_MAGIC && st.Type != unix.CGROUP2_SUPER_MAGIC) {
			continue
		}
		real, err := filepath.EvalSymlinks(m)
		if err != nil || seen[real] {
			continue
		}
		seen[real] = true
		dir := filepath.Join(real, g.path)
		if _, err := os.Lstat(dir); err == nil {
			continue // the placement's own
		}
		// DefaultParent is shared with concurrent runs, which remove it
		// when empty: made here when missing, and again should another
		// run remove it between the two mkdirs; Close removes it when
		// empty, whoever made it.
		parent := filepath.Join(real, DefaultParent)
		g.extraParents = append(g.extraParents, parent)
		if err := g.extra.add(dir); err != nil {
			return fmt.Errorf("create cgroup %s: %w", dir, err)
		}
		for attempt := 0; ; attempt++ {
			if err := os.Mkdir(parent, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
				return fmt.Errorf("create %s: %w", parent, err)
			}
			err := os.Mkdir(dir, 0o755)
			if err == nil {
				break
			}
			if !errors.Is(err, os.ErrNotExist) || attempt == 2 {
				return fmt.Errorf("create cgroup %s: %w", dir, err)
			}
		}
	}
	return nil
}

// InGroup places a member of g: its cgroup is made under the group's, in
// each hierarchy the group's limits are kept in, and it is charged for CPU
// and memory there (WithAccounting), so that the group's limits hold it.
// Place the member with g.Member()'s budget, which carries the group's CPU
// set and no limit of its own.
func InGroup(g *Group) PlaceOption {
	return func(c *placeConfig) {
		c.parent = g.path
		c.accounting = true
	}
}

// Member is the budget each member is placed with (InGroup): the group's
// CPU set, which a process takes from the thread that forks it, and no
// quota or limit of its own: those are the group's.
func (g *Group) Member() Budget { return Budget{CPUs: g.pl.b.CPUs} }

// Budget is the budget the group shares.
func (g *Group) Budget() Budget { return g.pl.b }

// Path is the group's cgroup path from each hierarchy's root
// ("/coldstart/ID"), as WithParent and a container runtime's absolute
// cgroups path take it.
func (g *Group) Path() string { return g.path }

// Cgroup names the group's cgroup ("v1:/coldstart/ID").
func (g *Group) Cgroup() string { return g.pl.Cgroup() }

// Usage reads the group's figures: every member's CPU and the group's
// memory high-water mark since the group was made. After Close it returns
// those read just before the cgroup was removed.
func (g *Group) Usage() (Usage, error) { return g.pl.Usage() }

// LimitHit reports whether the group's memory use met its limit: how a
// member killed with SIGKILL is told from one the limit killed. The
// kernel counts the kill in the member's own cgroup, not the group's, and
// a v1 group's failcnt stays 0 when reclaim and the OOM killer made room;
// its high-water mark at the limit says the limit bound it.
func (g *Group) LimitHit() bool {
	if g.pl.b.MemBytes == 0 {
		return false
	}
	u, err := g.Usage()
	return err == nil && (u.LimitHits > 0 || u.MemPeakBytes >= g.pl.b.MemBytes)
}

// Close kills whatever still runs in the group (its members should be
// stopped first: Close does not reap them), removes its cgroup and the
// directories it made in the other hierarchies. A member's cgroup still
// inside keeps the group's: Close then fails, naming it. It is safe to call
// more than once.
func (g *Group) Close() error {
	err := g.pl.Close()
	for _, d := range g.extra.dirs {
		if rerr := unix.Rmdir(d); rerr != nil && !errors.Is(rerr, unix.ENOENT) && err == nil {
			err = fmt.Errorf("close group %s: remove %s: %w", g.path, d, rerr)
		}
	}
	g.extra.forgetGone()
	removeDirs(g.extraParents) // coldstart's own, shared: kept while another run's cgroup is inside
	return err
}
