package budget

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/coldstart-go/coldstart/internal/procfs"
)

// ErrNeedSubtree is the part of an ErrNoCgroup error that says how a
// process that is not root gets a cgroup: its message names no flag, so a
// command that has one (--cgroup-parent) can say so instead
// (errors.Is finds it).
var ErrNeedSubtree = errors.New("cores= and mem= budgets need a writable cgroup v2 subtree: " +
	"run as root, or under systemd user delegation (e.g. systemd-run --user --scope), " +
	"or run inside a parent cgroup chowned to you and place under it; cpus= budgets work without")

var (
	parentMu  sync.Mutex
	parentSet string // UseParent's, "" = none
)

// UseParent makes parent, a cgroup path from the hierarchy's root (or its
// directory under /sys/fs/cgroup), the parent of every later placement
// that names none with WithParent: a subtree delegated to this user, as
// a command's --cgroup-parent gives it. "" goes back to the default
// (DefaultParent for root, else the delegated subtree Place finds).
// A process-wide setting, like the hierarchy itself: every server a run
// starts goes under the same parent.
func UseParent(parent string) error {
	p, err := cleanParent(parent)
	if err != nil {
		return err
	}
	parentMu.Lock()
	defer parentMu.Unlock()
	parentSet = p
	return nil
}

// cleanParent reads a parent cgroup as UseParent takes it.
func cleanParent(parent string) (string, error) {
	if parent == "" {
		return "", nil
	}
	if rest, ok := strings.CutPrefix(parent, "/sys/fs/cgroup"); ok && (rest == "" || rest[0] == '/') {
		parent = rest
		if parent == "" {
			parent = "/"
		}
	}
	if !path.IsAbs(parent) {
		return "", fmt.Errorf("parent cgroup %q: want a path from the hierarchy's root, e.g. %s, or its directory under /sys/fs/cgroup", parent, DefaultParent)
	}
	return path.Clean(parent), nil
}

func usedParent() string {
	parentMu.Lock()
	defer parentMu.Unlock()
	return parentSet
}

// resolveParent is the parent cgroup a placement that names none (with
// WithParent or UseParent) goes under: for root or outside cgroup v2,
// DefaultParent; else the delegated subtree delegatedParent finds.
func resolveParent(mode Mode, mount string, need []string) (string, error) {
	if os.Geteuid() == 0 || mode != ModeV2 {
		return DefaultParent, nil
	}
	return delegatedParent(mount, need)
}

// ownCgroup is this process's cgroup in the unified hierarchy ("/" when
// /proc/self/cgroup has no v2 line).
func ownCgroup() (string, error) {
	raw, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	own := procfs.ParseCgroups(string(raw))[""]
	if own == "" {
		return "/", nil
	}
	return own, nil
}

// delegatedParent finds where a process that is not root may make its
// servers' cgroups on cgroup v2: the nearest strict ancestor of its own
// cgroup that it may write (the directory, cgroup.procs and
// cgroup.subtree_control, as systemd chowns a delegated unit's), whose
// cgroup.controllers has the need controllers, and whose subtree_control
// either enables them already or can (it holds no processes of its own).
// Under systemd user delegation that is the slice or service above this
// process's scope, e.g. .../user@1000.service/app.slice.
//
// Each server's cgroup is then a sibling of this process's own, not a
// child of it: cgroup v2 lets a cgroup hand controllers to children only
// while it holds no processes ("no internal processes"), and this
// process's own cgroup holds it. Moving this process into a child leaf
// first (as systemd-run --user --scope starts a command in a new scope)
// would empty it only if nothing else shared it: a shell's scope holds
// the shell too, and the move would outlive the run. Siblings need
// neither: only write access to the common parent, which the kernel also
// asks of cloning a child into a cgroup (CLONE_INTO_CGROUP).
func delegatedParent(mount string, need []string) (string, error) {
	own, err := ownCgroup()
	if err != nil {
		return "", fmt.Errorf("%w (not root: euid %d): find this process's cgroup: %w; %w", ErrNoCgroup, os.Geteuid(), err, ErrNeedSubtree)
	}
	var why string
	for dir := path.Dir(own); ; dir = path.Dir(dir) {
		fsdir := filepath.Join(mount, dir)
		err := delegated(fsdir, need)
		if err == nil {
			return dir, nil
		}
		if why == "" && !errors.Is(err, os.ErrPermission) {
			why = err.Error() // the nearest one this user may write
		}
		if dir == "/" {
			break
		}
	}
	if why == "" {
		why = fmt.Sprintf("no cgroup above this process's own (%s) is writable by uid %d", own, os.Geteuid())
	}
	return "", fmt.Errorf("%w (not root: euid %d): %s; %w", ErrNoCgroup, os.Geteuid(), why, ErrNeedSubtree)
}

// delegated reports why budgets cannot go under fsdir, a cgroup v2
// directory, for this user (nil: they can); os.ErrPermission when it
// is not this user's to write.
func delegated(fsdir string, need []string) error {
	for _, f := range []string{"", "cgroup.procs", "cgroup.subtree_control"} {
		if err := unix.Faccessat(unix.AT_FDCWD, filepath.Join(fsdir, f), unix.W_OK, unix.AT_EACCESS); err != nil {
			return fmt.Errorf("%s: %w", filepath.Join(fsdir, f), os.ErrPermission)
		}
	}
	avail, err := readFields(filepath.Join(fsdir, "cgroup.controllers"))
	if err != nil {
		return err
	}
	for _, c := range need {
		if !slices.Contains(avail, c) {
			return fmt.Errorf("%s is delegated without the %s controller (it has: %s)", fsdir, c, strings.Join(avail, " "))
		}
	}
	on, err := readFields(filepath.Join(fsdir, "cgroup.subtree_control"))
	if err != nil {
		return err
	}
	for _, c := range need {
		if slices.Contains(on, c) {
			continue
		}
		procs, err := readFields(filepath.Join(fsdir, "cgroup.procs"))
		if err != nil {
			return err
		}
		if len(procs) > 0 {
			return fmt.Errorf("%s holds processes, so it cannot enable the %s controller for its children (cgroup v2's no internal processes rule)", fsdir, c)
		}
	}
	return nil
}

func readFields(file string) ([]string, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(raw)), nil
}

// checkJoinable refuses, for a process that is not root, a parent its
// children could not be cloned into: the kernel asks for write access to
// cgroup.procs of the common ancestor of this process's cgroup and the
// target, so a subtree chowned to the user works only from inside it.
func checkJoinable(mount, parent string) error {
	if os.Geteuid() == 0 {
		return nil
	}
	own, err := ownCgroup()
	if err != nil {
		return nil // the clone says why, if it fails
	}
	common := commonAncestor(own, parent)
	procs := filepath.Join(mount, common, "cgroup.procs")
	if unix.Faccessat(unix.AT_FDCWD, procs, unix.W_OK, unix.AT_EACCESS) == nil {
		return nil
	}
	return fmt.Errorf("%w (not root: euid %d): this process's cgroup %s is outside %s, and moving a process between them needs write access to %s "+
		"(start coldstart inside the subtree, e.g. in a child cgroup of it, as systemd-run --user --scope does); %w",
		ErrNoCgroup, os.Geteuid(), own, parent, procs, ErrNeedSubtree)
}

// commonAncestor is the deepest cgroup both a and b are in.
func commonAncestor(a, b string) string {
	as, bs := strings.Split(strings.Trim(a, "/"), "/"), strings.Split(strings.Trim(b, "/"), "/")
	var out []string
	for i := 0; i < len(as) && i < len(bs) && as[i] == bs[i] && as[i] != ""; i++ {
		out = append(out, as[i])
	}
	return "/" + strings.Join(out, "/")
}

// DelegatedParent is the cgroup, from the hierarchy's root, under which a
// process that is not root places a cgroup for b on cgroup v2: UseParent's,
// else the delegated subtree Place finds by itself. It is for a runtime
// that makes the cgroup itself (rootless runc, given it as cgroupsPath).
// It asks for the controllers of a CPU quota and a memory limit, not
// cpuset: a CPU set needs no cgroup (see Place).
// Where there is none (not cgroup v2, nothing delegated, or a parent this
// process is outside of) the error wraps ErrNoCgroup and ErrNeedSubtree.
func DelegatedParent(b Budget) (string, error) {
	if mode := HostMode(); mode != ModeV2 {
		return "", fmt.Errorf("%w (not root: euid %d): the host's cgroups are %s, and only cgroup v2 delegates a subtree to a user; %w",
			ErrNoCgroup, os.Geteuid(), mode, ErrNeedSubtree)
	}
	const mount = "/sys/fs/cgroup"
	if p := usedParent(); p != "" {
		if err := checkJoinable(mount, p); err != nil {
			return "", err
		}
		return p, nil
	}
	var need []string
	if b.Cores > 0 {
		need = append(need, "cpu")
	}
	if b.MemBytes > 0 {
		need = append(need, "memory")
	}
	return delegatedParent(mount, need)
}
