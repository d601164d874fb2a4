package budget

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// holdEnv makes the test binary, started as a member, touch that many MiB
// and hold them a minute (placement_test.go's children exit at once).
const holdEnv = "COLDSTART_GROUP_HOLD_MIB"

func init() {
	mib, err := strconv.Atoi(os.Getenv(holdEnv))
	if err != nil {
		return
	}
	keep := make([]byte, mib<<20)
	for i := 0; i < len(keep); i += 4096 {
		keep[i] = 1
	}
	time.Sleep(time.Minute)
	os.Exit(int(keep[0]) - 1)
}

// group makes a group for b, skipping where no cgroup can be made; its
// Close (after the members', registered later) must leave nothing behind.
func group(t *testing.T, b Budget) *Group {
	t.Helper()
	g, err := b.Group(NewID())
	if errors.Is(err, ErrNoCgroup) {
		t.Skipf("group %s: %v", b, err)
	}
	if err != nil {
		t.Fatalf("%s.Group: %v", b, err)
	}
	id := g.Path()[len(DefaultParent)+1:]
	t.Cleanup(func() {
		if err := g.Close(); err != nil {
			t.Errorf("group Close: %v", err)
		}
		for _, d := range ours(t) {
			if strings.Contains(d, id) {
				t.Errorf("group cgroup %s left behind", d)
			}
		}
	})
	return g
}

func TestGroupMembersShareTheLimit(t *testing.T) {
	g := group(t, Budget{Cores: 1, MemBytes: 64 << 20})
	if g.Member().NeedsCgroup() {
		t.Fatalf("Member() = %s, want no limit of its own", g.Member())
	}
	// Each member alone fits the limit; together they do not.
	var cmds []*exec.Cmd
	for range 2 {
		pl := place(t, g.Member(), InGroup(g))
		if !strings.HasPrefix(strings.SplitN(pl.Cgroup(), ":", 2)[1], g.Path()+"/") {
			t.Fatalf("member cgroup %s, want under %s", pl.Cgroup(), g.Path())
		}
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), holdEnv+"=40")
		start(t, pl, cmd)
		cmds = append(cmds, cmd)
	}
	// Members hold their memory a minute: the first to end sooner is the
	// one the group's limit killed, however long a slow host takes to get
	// there. The others are killed here once it has.
	type exit struct {
		i   int
		err error
	}
	exits := make(chan exit, len(cmds))
	for i, cmd := range cmds {
		go func() { exits <- exit{i, cmd.Wait()} }()
	}
	first := <-exits
	for i, cmd := range cmds {
		if i != first.i {
			_ = cmd.Process.Kill()
		}
	}
	for range len(cmds) - 1 {
		<-exits
	}
	killed := 0
	var ee *exec.ExitError
	switch {
	case errors.As(first.err, &ee) && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL:
		killed++
	case first.err != nil:
		t.Errorf("member: %v", first.err)
	}
	u, err := g.Usage()
	if err != nil {
		t.Fatal(err)
	}
	if killed == 0 || !g.LimitHit() {
		t.Errorf("%d members killed, group's limit hit: %v; want some and true (2 × 40 MiB in a 64 MiB group)", killed, g.LimitHit())
	}
	if u.MemPeakBytes < 40<<20 || u.CPUSeconds <= 0 {
		t.Errorf("group usage %+v: want every member's CPU and a peak of at least 40 MiB", u)
	}
}

func TestGroupEveryHierarchy(t *testing.T) {
	g := group(t, Budget{Cores: 0.5})
	if g.pl.Mode() != ModeV1 {
		t.Skipf("cgroup %s: only v1 has more than one hierarchy", g.pl.Mode())
	}
	for _, h := range []string{"cpu", "memory", "pids", "devices", "unified"} {
		if _, err := os.Stat("/sys/fs/cgroup/" + h); err != nil {
			continue // not mounted here
		}
		if _, err := os.Stat(fmt.Sprintf("/sys/fs/cgroup/%s%s", h, g.Path())); err != nil {
			t.Errorf("group not in the %s hierarchy: %v", h, err)
		}
	}
}

// TestGroupsOverlap: two groups alive at once, closed in the order they
// were made, leave no DefaultParent behind in the hierarchies only groups
// make it in (whichever group made it, the last to leave removes it).
func TestGroupsOverlap(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	const extra = "/sys/fs/cgroup/pids" + DefaultParent
	if _, err := os.Stat(extra); err == nil {
		t.Skipf("%s exists already (another run's)", extra)
	}
	a, b := group(t, Budget{Cores: 1}), group(t, Budget{Cores: 1})
	if a.pl.Mode() != ModeV1 {
		t.Skip("v1 only")
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(extra); err == nil {
		t.Errorf("%s left behind", extra)
	}
}
