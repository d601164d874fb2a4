package launch_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coldstart-go/coldstart/budget"
	"github.com/coldstart-go/coldstart/internal/testservers"
	"github.com/coldstart-go/coldstart/launch"
	"github.com/coldstart-go/coldstart/prober"
)

// newGroup makes a group for b, skipping without cgroups; the test closes
// it (after its members) and checks nothing of it is left in any hierarchy.
func newGroup(t *testing.T, b budget.Budget) *budget.Group {
	t.Helper()
	g, err := b.Group(budget.NewID())
	if errors.Is(err, budget.ErrNoCgroup) {
		t.Skipf("group: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// closeGroup closes g and fails t for any directory of it left behind.
func closeGroup(t *testing.T, g *budget.Group) {
	t.Helper()
	if err := g.Close(); err != nil {
		t.Errorf("group Close: %v", err)
	}
	left, _ := filepath.Glob("/sys/fs/cgroup/*" + g.Path())
	for _, d := range left {
		t.Errorf("group cgroup %s left behind", d)
	}
}

// memberOf checks that pid's cgroup in the memory (v1) or unified (v2)
// hierarchy is a child of g's.
func memberOf(t *testing.T, pid int, g *budget.Group) {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.SplitN(l, ":", 3)
		if len(f) == 3 && (f[1] == "memory" || (f[0] == "0" && !strings.Contains(string(b), ":memory:"))) {
			if !strings.HasPrefix(f[2], g.Path()+"/") {
				t.Errorf("pid %d in %s, want a child of group %s", pid, l, g.Path())
			}
			return
		}
	}
	t.Errorf("pid %d: no memory cgroup in %s", pid, b)
}

func TestProcessInGroup(t *testing.T) {
	srv := testservers.Build(t)
	g := newGroup(t, budget.Budget{Cores: 1, MemBytes: 256 << 20})
	ctx := context.Background()
	var insts []launch.Instance
	for range 2 {
		target := freeTCP(t)
		inst, err := launch.Process{}.Launch(ctx, launch.Spec{Arm: "default", Path: srv, Args: []string{"-mode", "grpc"},
			Target: target, Budget: g.Member(), Group: g})
		if err != nil {
			t.Fatal(err)
		}
		insts = append(insts, inst)
		if _, err := prober.WaitReady(ctx, inst, target, prober.Health{}, prober.WaitOptions{Timeout: 20 * time.Second}); err != nil {
			t.Fatal(err)
		}
		memberOf(t, inst.PID(), g)
	}
	u, err := g.Usage()
	if err != nil || u.CPUSeconds <= 0 || u.MemPeakBytes <= 0 {
		t.Errorf("group usage %+v, %v: want both members' CPU and memory", u, err)
	}
	for _, in := range insts {
		in.Stop(ctx)
	}
	closeGroup(t, g)
}

func TestRuncInGroup(t *testing.T) {
	needRunc(t)
	img := echoImage(t)
	r, work := newRunc(t)
	g := newGroup(t, budget.Budget{Cores: 1, MemBytes: 256 << 20})
	ctx := context.Background()
	var ids []string
	for range 2 {
		target, err := prober.FreeTCP()
		if err != nil {
			t.Fatal(err)
		}
		id := budget.NewID()
		ids = append(ids, id)
		inst, err := r.Launch(ctx, launch.Spec{Arm: "image", Path: img.Layout, Target: target, ID: id, Budget: g.Member(), Group: g})
		if err != nil {
			t.Fatal(err)
		}
		defer inst.Stop(ctx)
		if _, err := prober.WaitReady(ctx, inst, target, prober.Health{}, prober.WaitOptions{Timeout: 20 * time.Second}); err != nil {
			t.Fatal(err)
		}
		memberOf(t, inst.PID(), g)
		inst.Stop(ctx)
	}
	for _, id := range ids {
		checkGone(t, id, work)
	}
	closeGroup(t, g)
}
