package launch

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// How a plain process's descendants are kept from outliving its run, as
// Containment reports it.
const (
	// ContainCgroupV1 and ContainCgroupV2: the server runs in a cgroup of
	// its own (its budget's, or one made for it), and Stop kills all that
	// is in it: v1 by freezing it and killing each task until it is
	// empty, v2 through cgroup.kill.
	ContainCgroupV1 = "cgroup-v1"
	ContainCgroupV2 = "cgroup-v2"
	// ContainSubreaper: no cgroup could be made (not root, no delegated
	// subtree). coldstart is the child subreaper of what it starts
	// (PR_SET_CHILD_SUBREAPER), so an orphaned descendant is reparented to
	// coldstart rather than to init, and Stop kills what was adopted.
	ContainSubreaper = "subreaper"
)

// reaper is this process as the child subreaper of the servers it starts
// without a cgroup. A subreaper's adopted orphans become its children; it
// kills and reaps them once no such server runs any more, so it never
// kills the detached helper of a server still being measured.
var reaper struct {
	once sync.Once
	err  error

	mu   sync.Mutex
	live int // servers started under the subreaper, not yet stopped
}

// becomeSubreaper makes this process the child subreaper of everything it
// starts from now on (once per process; the attribute is the whole
// process's and is kept).
func becomeSubreaper() error {
	reaper.once.Do(func() {
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			reaper.err = fmt.Errorf("prctl PR_SET_CHILD_SUBREAPER: %w", err)
		}
	})
	return reaper.err
}

// reaperStarted counts a server about to start under the subreaper.
func reaperStarted() {
	reaper.mu.Lock()
	defer reaper.mu.Unlock()
	reaper.live++
}

// reaperStopped counts a server under the subreaper stopped and reaped;
// when it was the last one running, it kills and reaps what this process
// adopted.
func reaperStopped() {
	reaper.mu.Lock()
	defer reaper.mu.Unlock()
	reaper.live--
	if reaper.live == 0 {
		killAdopted("/proc")
	}
}

// killAdopted SIGKILLs and reaps every child of this process that is in
// another session than this process's: an orphan adopted as subreaper.
// Nothing coldstart starts itself under the subreaper gets a session of
// its own (a server gets a process group of its own, in coldstart's
// session), so such a child is a descendant that detached (setsid) and
// was orphaned. One that only left for another process group of
// coldstart's session is not told apart from coldstart's own children
// and is left (a cgroup has no such gap). Each is reaped by its PID
// alone, so no other Wait loses a child's status.
func killAdopted(proc string) {
	self, sid := os.Getpid(), unix.Getsid
	mySID, err := sid(0)
	if err != nil {
		return
	}
	ents, err := os.ReadDir(proc)
	if err != nil {
		return
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		ppid, session, ok := statParentSession(proc, pid)
		if !ok || ppid != self || session == mySID {
			continue
		}
		if err := unix.Kill(pid, unix.SIGKILL); err != nil && !errors.Is(err, unix.ESRCH) {
			continue
		}
		var ws unix.WaitStatus
		for {
			if _, err := unix.Wait4(pid, &ws, 0, nil); !errors.Is(err, unix.EINTR) {
				break
			}
		}
	}
}

// statParentSession reads the parent PID and session ID from
// <proc>/<pid>/stat: fields 4 and 6, counted after the comm, which lies
// between the first '(' and the last ')'.
func statParentSession(proc string, pid int) (ppid, session int, ok bool) {
	b, err := os.ReadFile(proc + "/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(s[i+1:]) // state, ppid, pgrp, session, ...
	if len(f) < 4 {
		return 0, 0, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	session, err2 := strconv.Atoi(f[3])
	return ppid, session, err1 == nil && err2 == nil
}
