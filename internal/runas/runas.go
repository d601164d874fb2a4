// Package runas picks the unprivileged user that servers under test run as
// when coldstart is root, and makes what they need reachable by that user:
// a copy of their binary, their socket directory.
//
// coldstart runs as root for runc and cgroups; the servers it measures are
// other people's code and need none of that. The root parent still places
// each server in its budget (CPU set, cgroup) before the fork; the child
// drops to the user between fork and exec (SysProcAttr.Credential), so the
// server's first instruction already runs unprivileged.
package runas

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/coldstart-go/coldstart/internal/leftovers"
)

// DefaultUID and DefaultGID are who servers run as when coldstart is root
// and --run-as is not given: 65532, the image arm's user (distroless's
// "nonroot"), which owns nothing on a usual host.
const (
	DefaultUID = 65532
	DefaultGID = 65532
)

// User is who servers run as.
type User struct {
	UID, GID uint32
	// Self is true when that is coldstart's own user: nothing changes.
	Self bool
}

// String is "UID:GID", or "self (UID:GID)".
func (u User) String() string {
	s := fmt.Sprintf("%d:%d", u.UID, u.GID)
	if u.Self {
		return "self (" + s + ")"
	}
	return s
}

// Self is coldstart's own user.
func Self() User {
	return User{UID: uint32(os.Geteuid()), GID: uint32(os.Getegid()), Self: true}
}

// Parse reads a --run-as value: "" (the default: DefaultUID:DefaultGID when
// coldstart is root, else coldstart's own user), "root", a user name or
// numeric UID, optionally with ":GROUP" or ":GID". A name is looked up in
// this machine's user database; a UID alone takes its passwd entry's group,
// or the GID equal to it. Only root can pick another user.
func Parse(s string) (User, error) {
	me := Self()
	if s == "" {
		if me.UID != 0 {
			return me, nil
		}
		return User{UID: DefaultUID, GID: DefaultGID}, nil
	}
	name, group, hasGroup := strings.Cut(s, ":")
	var u User
	switch {
	case name == "":
		return User{}, fmt.Errorf("%q has no user (want USER, UID, UID:GID or root)", s)
	case name == "root":
		u = User{}
	case isNumber(name):
		n, err := strconv.ParseUint(name, 10, 32)
		if err != nil {
			return User{}, fmt.Errorf("uid %q: %w", name, err)
		}
		u = User{UID: uint32(n), GID: uint32(n)}
		if pw, err := user.LookupId(name); err == nil {
			if g, err := strconv.ParseUint(pw.Gid, 10, 32); err == nil {
				u.GID = uint32(g)
			}
		}
	default:
		pw, err := user.Lookup(name)
		if err != nil {
			return User{}, fmt.Errorf("user %q: %w (want a user of this machine, a numeric UID[:GID], or root)", name, err)
		}
		uid, _ := strconv.ParseUint(pw.Uid, 10, 32)
		gid, _ := strconv.ParseUint(pw.Gid, 10, 32)
		u = User{UID: uint32(uid), GID: uint32(gid)}
	}
	if hasGroup {
		if isNumber(group) {
			g, err := strconv.ParseUint(group, 10, 32)
			if err != nil {
				return User{}, fmt.Errorf("gid %q: %w", group, err)
			}
			u.GID = uint32(g)
		} else {
			gr, err := user.LookupGroup(group)
			if err != nil {
				return User{}, fmt.Errorf("group %q: %w", group, err)
			}
			g, _ := strconv.ParseUint(gr.Gid, 10, 32)
			u.GID = uint32(g)
		}
	}
	if u.UID == me.UID && u.GID == me.GID {
		return me, nil
	}
	if me.UID != 0 {
		return User{}, fmt.Errorf("%s: coldstart runs as uid %d, not root, and cannot start servers as another user", s, me.UID)
	}
	return u, nil
}

func isNumber(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// Credential is what SysProcAttr.Credential takes to start a process as u:
// nil for Self. Supplementary groups are cleared (none of root's).
func (u User) Credential() *syscall.Credential {
	if u.Self {
		return nil
	}
	return &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: []uint32{}}
}

// Stage holds copies of server binaries that a user can execute: the
// originals often live where only root can reach them (root's build cache
// under /root). Each copy is owned by root and the user's group, mode
// 0750, in a directory of its own that others can traverse but not list.
// Close removes them.
type Stage struct {
	u      User
	mu     sync.Mutex
	dir    string
	forget func()            // drops dir from the run's state file
	copies map[string]string // original path -> copy
	closed bool
}

// NewStage returns an empty Stage for u; it makes its directory (under
// TempDir) on first use.
func NewStage(u User) *Stage { return &Stage{u: u} }

// User is who the Stage stages for.
func (s *Stage) User() User { return s.u }

// Binary returns a path at which s's user can execute the binary at path:
// path itself when the user can already read and execute it there (Self,
// or a system binary such as a JDK's java, whose libraries are found
// relative to it and would be lost in a copy), else a copy made once per
// path.
func (s *Stage) Binary(path string) (string, error) {
	if s.u.Self {
		return path, nil
	}
	if real, err := filepath.EvalSymlinks(path); err == nil && CanExecute(real, s.u) {
		return path, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return "", fmt.Errorf("stage %s for uid %d: stage closed", path, s.u.UID)
	}
	if c, ok := s.copies[path]; ok {
		return c, nil
	}
	if s.dir == "" {
		// Recorded before it exists, so that a run killed with SIGKILL
		// leaves it to the next run's sweep (coldstart clean).
		d, forget, err := leftovers.MkdirTemp(TempDir(), "coldstart-bin-")
		if err != nil {
			return "", fmt.Errorf("stage %s for uid %d: %w", path, s.u.UID, err)
		}
		if err := os.Chmod(d, 0o711); err != nil { // the user may enter, not list
			os.RemoveAll(d)
			forget()
			return "", fmt.Errorf("stage %s for uid %d: %w", path, s.u.UID, err)
		}
		s.dir, s.forget, s.copies = d, forget, map[string]string{}
	}
	sub := filepath.Join(s.dir, strconv.Itoa(len(s.copies)))
	if err := os.Mkdir(sub, 0o711); err != nil {
		return "", fmt.Errorf("stage %s for uid %d: %w", path, s.u.UID, err)
	}
	// The same base name: /proc/PID/comm and ps show what they would.
	dst := filepath.Join(sub, filepath.Base(path))
	if err := copyExecutable(path, dst, s.u.GID); err != nil {
		return "", fmt.Errorf("stage %s for uid %d: %w", path, s.u.UID, err)
	}
	s.copies[path] = dst
	return dst, nil
}

// CanExecute reports whether u can reach path (search permission on every
// directory above it) and read and execute it, by the mode bits: owner,
// group (u's primary group only: the server runs with no supplementary
// groups) or other. path must have no symlinks (filepath.EvalSymlinks).
func CanExecute(path string, u User) bool {
	path = filepath.Clean(path)
	if !filepath.IsAbs(path) {
		return false
	}
	for dir := filepath.Dir(path); ; dir = filepath.Dir(dir) {
		if !allowed(dir, u, 0o1) {
			return false
		}
		if dir == "/" {
			break
		}
	}
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && allowed(path, u, 0o5)
}

// allowed reports whether u has the permission bits want (of r=4, w=2,
// x=1) on name.
func allowed(name string, u User, want uint32) bool {
	var st syscall.Stat_t
	if err := syscall.Stat(name, &st); err != nil {
		return false
	}
	perm := st.Mode & 0o777
	switch {
	case st.Uid == u.UID:
		perm >>= 6
	case st.Gid == u.GID:
		perm >>= 3
	}
	return perm&want == want
}

func copyExecutable(src, dst string, gid uint32) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o700)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if err == nil {
		err = out.Chown(-1, int(gid))
	}
	if err == nil {
		err = out.Chmod(0o750)
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// Close removes the copies. Servers still running keep theirs open until
// they exit; stop them first.
func (s *Stage) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.dir == "" {
		return nil
	}
	err := os.RemoveAll(s.dir)
	if err == nil {
		s.forget()
	}
	s.dir, s.copies = "", nil
	if err != nil {
		return fmt.Errorf("remove staged binaries: %w", err)
	}
	return nil
}

// HandOver lets u create files (a Unix socket) in dir: a directory that
// coldstart made (owned by it, not writable by u) is given to u. A
// directory u can already write is left alone; one owned by somebody else
// is an error that says what to do.
func HandOver(dir string, u User, log io.Writer) error {
	if u.Self {
		return nil
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("socket directory: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return errors.New("socket directory: no owner information")
	}
	if !othersCanEnter(filepath.Dir(dir)) {
		return fmt.Errorf("socket directory %s: uid %d, whom the server runs as, cannot reach it (a directory above it is closed to others): put it under %s, use TCP, or --run-as root", dir, u.UID, TempDir())
	}
	if st.Uid == u.UID || fi.Mode().Perm()&0o002 != 0 {
		return nil
	}
	if st.Uid != uint32(os.Geteuid()) {
		return fmt.Errorf("socket directory %s: owned by uid %d and not writable by uid %d, whom the server runs as: make it writable (chmod 1777), use TCP, or --run-as root", dir, st.Uid, u.UID)
	}
	if log != nil {
		fmt.Fprintf(log, "+ chown %d:%d %s\n", u.UID, u.GID, dir)
	}
	if err := os.Chown(dir, int(u.UID), int(u.GID)); err != nil {
		return fmt.Errorf("socket directory %s: hand it to uid %d: %w", dir, u.UID, err)
	}
	return nil
}

// TempDir is where coldstart makes what a server run as another user must
// reach (its binary's copy, its socket's directory): os.TempDir() when
// coldstart is not root or when every directory on the way to it lets
// others pass, else /tmp (a private $TMPDIR, such as a test's, would lock
// the server out).
func TempDir() string {
	d := os.TempDir()
	if os.Geteuid() != 0 || othersCanEnter(d) {
		return d
	}
	return "/tmp"
}

// othersCanEnter reports whether every directory from / to dir has the
// search bit for others.
func othersCanEnter(dir string) bool {
	p, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return false
	}
	for {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm()&0o001 == 0 {
			return false
		}
		parent := filepath.Dir(p)
		if parent == p {
			return true
		}
		p = parent
	}
}
