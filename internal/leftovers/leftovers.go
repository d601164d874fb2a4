// Package leftovers keeps what a run creates (server processes, runc
// containers, docker/podman containers, cgroups, bundles, unpacked root filesystems, mounts, temp
// directories) in a state file before creating it, so that what a run
// killed with SIGKILL left behind is found from the file and removed: by the
// next run (Open sweeps the files of dead owners) or on demand (`coldstart
// clean`). Nothing is ever found by its name: only what a state file lists,
// for an owner that is gone, is removed.
//
// A state file is named by the run's id and holds its owner's PID and start
// time, so a reused PID is not taken for the owner. Entries are removed as
// their things are cleaned up; the file goes when it is empty.
package leftovers

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/coldstart-go/coldstart/internal/atomicfile"
	"github.com/coldstart-go/coldstart/internal/procfs"
)

// Kind is what an entry is.
type Kind string

// The kinds, in the order Sweep removes them.
const (
	Process         Kind = "process"          // PID (with its start time): killed with its process group
	Container       Kind = "container"        // runc container ID under Root: killed and deleted
	EngineContainer Kind = "engine_container" // docker/podman container by the exact name coldstart gave it (ID): `Engine rm --force ID`
	Cgroup          Kind = "cgroup"           // a cgroup directory: its processes killed, then removed
	Mount           Kind = "mount"            // a mount point: unmounted (lazily)
	Dir             Kind = "dir"              // a directory (bundle, rootfs, socket dir): removed with its contents
)

var order = map[Kind]int{Process: 0, Container: 1, EngineContainer: 1, Cgroup: 2, Mount: 3, Dir: 4}

// Entry is one thing a run created.
type Entry struct {
	Kind Kind `json:"kind"`
	// Path is the directory (cgroup, dir) or mount point.
	Path string `json:"path,omitempty"`
	// PID and Start (clock ticks after boot) name a process.
	PID   int    `json:"pid,omitempty"`
	Start uint64 `json:"start,omitempty"`
	// ID is a container's id (an engine container's name); Root is runc's
	// --root ("" = its default) and Runc the runc binary; Engine is the
	// docker or podman binary, by absolute path.
	ID     string `json:"id,omitempty"`
	Root   string `json:"root,omitempty"`
	Runc   string `json:"runc,omitempty"`
	Engine string `json:"engine,omitempty"`
}

func (e Entry) String() string {
	switch e.Kind {
	case Process:
		return fmt.Sprintf("process %d", e.PID)
	case Container:
		s := "runc container " + e.ID
		if e.Root != "" {
			s += " (--root " + e.Root + ")"
		}
		return s
	case EngineContainer:
		return filepath.Base(e.Engine) + " container " + e.ID
	}
	return string(e.Kind) + " " + e.Path
}

// file is a state file's content.
type file struct {
	RunID      string        `json:"run_id"`
	OwnerPID   int           `json:"owner_pid"`
	OwnerStart uint64        `json:"owner_start"`
	Entries    map[int]Entry `json:"entries"`
}

// Ledger is one run's state file.
type Ledger struct {
	mu   sync.Mutex
	path string
	f    file
	next int
}

// StateDir is where state files live: $COLDSTART_STATE_DIR, else /run/coldstart
// for root, else coldstart-state-<uid> in the temp directory.
func StateDir() string {
	if d := os.Getenv("COLDSTART_STATE_DIR"); d != "" {
		return d
	}
	if os.Geteuid() == 0 {
		return "/run/coldstart"
	}
	return filepath.Join(os.TempDir(), "coldstart-state-"+strconv.Itoa(os.Geteuid()))
}

var (
	defaultOnce sync.Once
	defaultL    *Ledger
	defaultErr  error
	// SweepLog gets a line per thing the first Add's sweep removes (nil =
	// nowhere). Commands set it to their error writer.
	SweepLog io.Writer
)

// Default is this process's ledger, opened on first use in StateDir(): opening
// first sweeps what dead owners left (see Sweep).
func Default() (*Ledger, error) {
	defaultOnce.Do(func() {
		dir := StateDir()
		if _, err := Sweep(dir, SweepLog); err != nil && SweepLog != nil {
			fmt.Fprintf(SweepLog, "coldstart: sweep %s: %v\n", dir, err)
		}
		defaultL, defaultErr = Open(dir)
	})
	return defaultL, defaultErr
}

// Open starts a ledger for this process in dir (made 0700 if missing).
// Its file appears with the first entry.
func Open(dir string) (*Ledger, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("state directory %s: %w", dir, err)
	}
	start, err := procfs.Host.StartTime(os.Getpid())
	if err != nil {
		return nil, fmt.Errorf("state file: %w", err)
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	id := fmt.Sprintf("run-%d-%s", os.Getpid(), hex.EncodeToString(b[:]))
	return &Ledger{
		path: filepath.Join(dir, id+".json"),
		f:    file{RunID: id, OwnerPID: os.Getpid(), OwnerStart: start, Entries: map[int]Entry{}},
	}, nil
}

// Path is the state file's path.
func (l *Ledger) Path() string { return l.path }

// Add records e, durably, before the caller creates it; the returned key
// removes it again (Done) once it is cleaned up.
func (l *Ledger) Add(e Entry) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.next++
	l.f.Entries[l.next] = e
	if err := l.writeLocked(); err != nil {
		delete(l.f.Entries, l.next)
		return 0, err
	}
	return l.next, nil
}

// Set replaces entry k (a process's PID, known once it started).
func (l *Ledger) Set(k int, e Entry) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.f.Entries[k]; !ok {
		return nil
	}
	l.f.Entries[k] = e
	return l.writeLocked()
}

// Done forgets entry k: its thing was cleaned up.
func (l *Ledger) Done(k int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.f.Entries[k]; !ok {
		return
	}
	delete(l.f.Entries, k)
	_ = l.writeLocked()
}

func (l *Ledger) writeLocked() error {
	if len(l.f.Entries) == 0 {
		if err := os.Remove(l.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove state file %s: %w", l.path, err)
		}
		return nil
	}
	b, err := json.MarshalIndent(l.f, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(l.path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("state file: %w", err)
	}
	return nil
}

// Add records e in the Default ledger; done forgets it. When no ledger can
// be kept (no writable state directory), Add returns the error: creating
// something that a SIGKILL would leak without a trace is refused.
func Add(e Entry) (done func(), err error) {
	l, err := Default()
	if err != nil {
		return func() {}, err
	}
	k, err := l.Add(e)
	if err != nil {
		return func() {}, err
	}
	return func() { l.Done(k) }, nil
}

// Removed is one thing a sweep removed (or tried to: Err).
type Removed struct {
	File  string // the state file it was listed in
	Owner int    // the dead owner's PID
	Entry Entry
	Err   error
}

// Left is a state file whose owner still runs: Sweep leaves it alone.
type Left struct {
	File    string
	Owner   int
	Entries int
}

// Sweep removes what the state files in dir list for owners that are gone
// (their PID no longer runs, or runs a process started at another time),
// processes and containers first, then cgroups, mounts and directories,
// and removes each such file once everything in it is gone. Each removal
// is written to log (nil = nowhere). Files of running owners are left.
func Sweep(dir string, log io.Writer) ([]Removed, error) {
	rs, _, err := sweep(dir, log)
	return rs, err
}

// Clean is Sweep that also reports the files left for owners still
// running.
func Clean(dir string, log io.Writer) ([]Removed, []Left, error) {
	return sweep(dir, log)
}

func sweep(dir string, log io.Writer) ([]Removed, []Left, error) {
	names, err := filepath.Glob(filepath.Join(dir, "run-*.json"))
	if err != nil {
		return nil, nil, err
	}
	var out []Removed
	var left []Left
	var errs []error
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
			continue
		}
		var f file
		if err := json.Unmarshal(b, &f); err != nil {
			errs = append(errs, fmt.Errorf("state file %s: %w (left as it is)", name, err))
			continue
		}
		if alive(f.OwnerPID, f.OwnerStart) {
			left = append(left, Left{File: name, Owner: f.OwnerPID, Entries: len(f.Entries)})
			continue
		}
		keys := make([]int, 0, len(f.Entries))
		for k := range f.Entries {
			keys = append(keys, k)
		}
		// By kind, then newest first within a kind (a rootfs before the
		// directory that holds it).
		sort.Slice(keys, func(i, j int) bool {
			a, b := f.Entries[keys[i]], f.Entries[keys[j]]
			if order[a.Kind] != order[b.Kind] {
				return order[a.Kind] < order[b.Kind]
			}
			return keys[i] > keys[j]
		})
		failed := false
		for _, k := range keys {
			e := f.Entries[k]
			err := remove(e)
			out = append(out, Removed{File: name, Owner: f.OwnerPID, Entry: e, Err: err})
			if log != nil {
				if err != nil {
					fmt.Fprintf(log, "coldstart: left by run %s (pid %d, gone): %s: %v\n", f.RunID, f.OwnerPID, e, err)
				} else {
					fmt.Fprintf(log, "coldstart: removed %s, left by run %s (pid %d, gone)\n", e, f.RunID, f.OwnerPID)
				}
			}
			if err != nil {
				failed = true
			}
		}
		if !failed {
			if err := os.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return out, left, errors.Join(errs...)
}

// alive reports whether pid runs and started at start.
func alive(pid int, start uint64) bool {
	if !procfs.Host.Alive(pid) {
		return false
	}
	st, err := procfs.Host.StartTime(pid)
	return err == nil && st == start
}

func remove(e Entry) error {
	switch e.Kind {
	case Process:
		if e.PID <= 0 || !alive(e.PID, e.Start) {
			return nil
		}
		// The server runs in its own process group (launch.Process).
		if err := syscall.Kill(-e.PID, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("kill: %w", err)
		}
		return nil
	case Container:
		runc := e.Runc
		if runc == "" {
			runc = "runc"
		}
		args := []string{}
		if e.Root != "" {
			args = append(args, "--root", e.Root)
		}
		out, err := exec.Command(runc, append(args, "delete", "--force", e.ID)...).CombinedOutput()
		if err != nil && !strings.Contains(string(out), "does not exist") && !strings.Contains(string(out), "not exist") {
			return fmt.Errorf("runc delete --force %s: %v: %s", e.ID, err, strings.TrimSpace(string(out)))
		}
		return nil
	case EngineContainer:
		if e.Engine == "" || e.ID == "" {
			return fmt.Errorf("engine container without engine or name: %+v", e)
		}
		out, err := exec.Command(e.Engine, "rm", "--force", e.ID).CombinedOutput()
		if err != nil && !strings.Contains(strings.ToLower(string(out)), "no such container") {
			return fmt.Errorf("%s rm --force %s: %v: %s", e.Engine, e.ID, err, strings.TrimSpace(string(out)))
		}
		return nil
	case Cgroup:
		return removeCgroup(e.Path)
	case Mount:
		if err := unix.Unmount(e.Path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("unmount: %w", err)
		}
		return nil
	case Dir:
		return os.RemoveAll(e.Path)
	}
	return fmt.Errorf("unknown kind %q", e.Kind)
}

// removeCgroup kills what still runs in dir and removes it (rmdir; a
// cgroup's files go with it), retrying while the killed processes exit.
// A v2 cgroup is killed whole through cgroup.kill; a v1 freezer cgroup is
// frozen while its tasks are killed, so none forks past the kill (a
// frozen task dies once thawed); in any other, each task listed is killed,
// again on every retry.
func removeCgroup(dir string) error {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		_ = os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
		state := filepath.Join(dir, "freezer.state")
		frozen := os.WriteFile(state, []byte("FROZEN"), 0) == nil
		for i := 0; frozen && i < 100; i++ {
			if b, err := os.ReadFile(state); err != nil || strings.TrimSpace(string(b)) == "FROZEN" {
				break
			}
			time.Sleep(time.Millisecond)
		}
		for _, f := range []string{"cgroup.procs", "tasks"} {
			b, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				continue
			}
			for _, s := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(s); err == nil {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
		if frozen {
			_ = os.WriteFile(state, []byte("THAWED"), 0)
		}
		err := unix.Rmdir(dir)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("rmdir: %w", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// MkdirTemp makes a new directory in parent ("" = the system temp dir)
// named prefix followed by random characters, as os.MkdirTemp does, but
// records it in the run's state file before making it, so that a SIGKILL
// between the two cannot leak it. forget drops the record; call it once the
// directory is removed.
func MkdirTemp(parent, prefix string) (dir string, forget func(), err error) {
	if parent == "" {
		parent = os.TempDir()
	}
	for range 10 {
		var b [6]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", func() {}, err
		}
		dir = filepath.Join(parent, prefix+hex.EncodeToString(b[:]))
		forget, err = Add(Entry{Kind: Dir, Path: dir})
		if err != nil {
			return "", func() {}, fmt.Errorf("record %s: %w", dir, err)
		}
		err = os.Mkdir(dir, 0o700)
		if err == nil {
			return dir, forget, nil
		}
		forget()
		if !errors.Is(err, os.ErrExist) {
			return "", func() {}, err
		}
	}
	return "", func() {}, fmt.Errorf("make a directory %s* in %s: names taken", prefix, parent)
}
