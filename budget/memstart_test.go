package budget

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/coldstart-go/coldstart/internal/require"
)

// TestMemoryTooSmallToStart: under mem=1Ki not even the start succeeds
// (v1: the forking thread cannot join the cgroup, ENOMEM). Start says the
// limit is below what a process needs to start and names the smallest
// limit that started it, found by a doubling search; the test checks that
// figure against real starts: the limit named starts the process, the one
// below it reported as failing does not. The search's cgroups are gone
// afterwards.
func TestMemoryTooSmallToStart(t *testing.T) {
	if os.Geteuid() != 0 {
		require.Skipf(t, require.Root, "needs root to make cgroups with a memory limit")
	}
	pl := place(t, Budget{MemBytes: 1 << 10})
	cmd := childCmd("sleep")
	err := pl.Start(cmd)
	if err == nil {
		// cgroup v2 charges no memory for joining: the start "succeeds",
		// then the child cannot exec within the limit (exit status 253) or
		// is killed by it; Explain names the limit either way.
		waited := make(chan error, 1)
		go func() { waited <- cmd.Wait() }()
		select {
		case werr := <-waited:
			if xerr := pl.Explain(werr); !errors.Is(xerr, ErrMemoryLimit) && !errors.Is(xerr, ErrMemoryTooSmall) {
				t.Errorf("a process started under mem=1Ki (%s mode) and ended with %v, want the limit named (ErrMemoryLimit or ErrMemoryTooSmall)", pl.Mode(), xerr)
			} else {
				t.Logf("%s mode: started, then %v", pl.Mode(), xerr)
			}
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-waited
			t.Errorf("a process started under mem=1Ki (%s mode) and was still running 20 s later", pl.Mode())
		}
		return
	}
	t.Logf("Start: %v", err)
	if !errors.Is(err, ErrMemoryTooSmall) || !errors.Is(err, unix.ENOMEM) {
		t.Errorf("Start under mem=1Ki = %v, want ErrMemoryTooSmall wrapping ENOMEM", err)
	}
	msg := err.Error()
	for _, want := range []string{"start " + cmd.Path + " in budget mem=1Ki", "mem=1Ki is below what a process needs to start",
		"cannot allocate memory", "doubled from mem=1Ki", "killed at once", "give --budget mem="} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	m := regexp.MustCompile(`the smallest limit that started it was mem=(\S+), .*; mem=(\S+) failed\)`).FindStringSubmatch(msg)
	if m == nil {
		t.Fatalf("error %q names no smallest limit and no failing one", msg)
	}
	worked, err1 := ParseSize(m[1])
	failed, err2 := ParseSize(m[2])
	if err1 != nil || err2 != nil || worked != 2*failed || failed < 1<<10 {
		t.Fatalf("smallest limit %q (%v), failed %q (%v): want the one twice the other, from mem=1Ki up", m[1], err1, m[2], err2)
	}
	// The search's own cgroups are removed.
	left, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", DefaultParent, pl.id+"-mem*"))
	left2, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", DefaultParent, pl.id+"-mem*"))
	if left = append(left, left2...); len(left) > 0 {
		t.Errorf("the search left cgroups behind: %v", left)
	}

	// The figures hold for real starts: the limit named starts the process,
	// the one below it does not (and says so without searching again).
	ok := place(t, Budget{MemBytes: worked})
	start(t, ok, childCmd("sleep"))
	below := place(t, Budget{MemBytes: failed}, func(c *placeConfig) { c.noMemSearch = true })
	bcmd := childCmd("sleep")
	if err := below.Start(bcmd); err == nil {
		_ = bcmd.Process.Kill()
		_ = bcmd.Wait()
		t.Errorf("a process started under mem=%s, which the search reported as failing", FormatSize(failed))
	} else if !isENOMEM(err) || errors.Is(err, ErrMemoryTooSmall) {
		t.Errorf("Start under mem=%s without the search = %v, want the plain ENOMEM", FormatSize(failed), err)
	}
}
