package budget

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// ErrMemoryTooSmall marks a Start that failed because the budget's memory
// limit is below what starting a process needs: on cgroup v1 the kernel
// refuses to move the forking thread into the cgroup ("join cgroup
// …/tasks: cannot allocate memory"), on v2 the clone into it fails.
var ErrMemoryTooSmall = errors.New("memory limit below what a process needs to start")

// forkExecFailed is the status Go's os/exec child exits with when it fails
// between fork and exec (syscall.forkAndExecInChild); Start reports the
// error itself unless the child could not write it to its parent.
const forkExecFailed = 253

// The bounds of the search memTooSmall makes: the limit doubles from the
// budget's at most memSearchSteps times, never above memSearchMax.
const (
	memSearchSteps = 24
	memSearchMax   = 1 << 30
)

func isENOMEM(err error) bool {
	return errors.Is(err, unix.ENOMEM) || strings.Contains(err.Error(), unix.ENOMEM.Error())
}

// memTooSmall explains a Start that failed with ENOMEM under a memory
// limit: the limit is below what a process needs to start, and the
// smallest limit that started it, found now by memStartSearch. The error
// matches ErrMemoryTooSmall and startErr.
func (p *Placement) memTooSmall(cmd *exec.Cmd, startErr error) error {
	s := p.memStartSearch(cmd)
	var found string
	switch {
	case s.worked > 0:
		found = fmt.Sprintf("the smallest limit that started it was mem=%s, to within a factor of two "+
			"(found now: the limit doubled from mem=%s, %s started in a fresh cgroup at each and killed at once; mem=%s failed); "+
			"give %s mem=%s or more (enough to start; serving may need more, which an OOM kill then says)",
			FormatSize(s.worked), FormatSize(p.b.MemBytes), cmd.Path, FormatSize(s.failed), Flag, FormatSize(s.worked))
	case s.err != nil:
		found = fmt.Sprintf("the search for the smallest limit that starts it stopped: %v", s.err)
	default:
		found = fmt.Sprintf("no limit up to mem=%s started it either (the limit doubled from mem=%s)", FormatSize(s.failed), FormatSize(p.b.MemBytes))
	}
	return &memTooSmallError{
		msg: fmt.Sprintf("start %s in budget %s: mem=%s is below what a process needs to start (%v); %s",
			cmd.Path, p.b, FormatSize(p.b.MemBytes), startErr, found),
		cause: startErr,
	}
}

type memTooSmallError struct {
	msg   string
	cause error
}

func (e *memTooSmallError) Error() string        { return e.msg }
func (e *memTooSmallError) Unwrap() error        { return e.cause }
func (e *memTooSmallError) Is(target error) bool { return target == ErrMemoryTooSmall }

// memSearch is what memStartSearch found: worked is the smallest limit
// tried that started the process (0 = none did), failed the largest tried
// that did not (the budget's own at least), err why the search stopped
// early (nil = it did not).
type memSearch struct {
	worked, failed int64
	err            error
}

// memStartSearch finds the smallest memory limit, to within a factor of
// two, under which cmd's program starts: it doubles p's limit, at most
// memSearchSteps times and never above memSearchMax, and at each places a
// budget like p's (same CPUs and quota, same cgroup parent) and starts a
// copy of cmd in it (program, arguments, environment, directory and
// credentials; no input or output), which it kills as soon as the start
// has returned. Only the start is tried: a limit that lets the process
// start may still be too small for it to run, which Explain reports.
func (p *Placement) memStartSearch(cmd *exec.Cmd) memSearch {
	s := memSearch{failed: p.b.MemBytes}
	for i, limit := 1, p.b.MemBytes*2; i <= memSearchSteps && limit <= memSearchMax; i, limit = i+1, limit*2 {
		ok, err := p.tryStart(cmd, limit, i)
		if err != nil {
			s.err = err
			return s
		}
		if ok {
			s.worked = limit
			return s
		}
		s.failed = limit
	}
	return s
}

// tryStart starts a copy of cmd under p's budget with the memory limit
// limit, in a cgroup of its own (p's id with "-memN" added), and kills it
// at once. It reports whether the start succeeded; err is a failure to try
// (the cgroup could not be made), not a failed start.
func (p *Placement) tryStart(cmd *exec.Cmd, limit int64, n int) (ok bool, err error) {
	b := p.b
	b.MemBytes = limit
	cfg := p.cfg
	cfg.noMemSearch = true
	q, err := b.Place(fmt.Sprintf("%s-mem%d", p.id, n), func(c *placeConfig) { *c = cfg })
	if err != nil {
		return false, err
	}
	defer q.Close()
	c := exec.Command(cmd.Path)
	c.Args = append([]string(nil), cmd.Args...)
	c.Env = append([]string(nil), cmd.Env...)
	c.Dir = cmd.Dir
	if cmd.SysProcAttr != nil {
		attr := *cmd.SysProcAttr
		attr.UseCgroupFD, attr.CgroupFD = false, 0 // the v2 clone target is q's, set by Start
		attr.Setctty, attr.Foreground, attr.Ctty = false, false, 0
		c.SysProcAttr = &attr
	}
	if err := q.Start(c); err != nil {
		if isENOMEM(err) {
			return false, nil
		}
		return false, fmt.Errorf("try mem=%s: %w", FormatSize(limit), err)
	}
	_ = c.Process.Signal(syscall.SIGKILL)
	_ = c.Wait()
	return true, nil
}
