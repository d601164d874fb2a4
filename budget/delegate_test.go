package budget

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/coldstart-go/coldstart/internal/require"
)

// Environment of delegatedChild: the cgroup2 mount to use (a hybrid
// host's empty one) and the parent to hand UseParent.
const (
	mountEnv  = "COLDSTART_BUDGET_V2MOUNT"
	parentEnv = "COLDSTART_BUDGET_PARENT"
)

// delegatedChild places budget (a max one in a cgroup of its own, as
// launch does) as whoever runs it, starts a child that uses what the
// budget limits (spin for cores=, alloc beyond mem=, else cat its
// cgroup), and prints what it saw: "cgroup NAME", "cpu.max ...",
// "explain: ...", and "closed" once Close left nothing.
func delegatedChild(item string) int {
	b, err := ParseOne(item)
	if err != nil {
		fmt.Println("parse:", err)
		return 1
	}
	mount := "/sys/fs/cgroup"
	var opts []PlaceOption
	if m := os.Getenv(mountEnv); m != "" {
		mount = m
		opts = append(opts, withHierarchy(ModeV2, m))
	}
	if b.IsMax() {
		opts = append(opts, WithOwnCgroup())
	}
	if err := UseParent(os.Getenv(parentEnv)); err != nil {
		fmt.Println("parent:", err)
		return 1
	}
	pl, err := b.Place(NewID(), opts...)
	if err != nil {
		fmt.Println("place:", err)
		return 1
	}
	defer pl.Close()
	fmt.Println("cgroup", pl.Cgroup())
	var cmd *exec.Cmd
	switch {
	case b.MemBytes > 0:
		cmd = childCmd("alloc:128")
	case b.Cores > 0:
		cmd = childCmd("spin:1s")
	default:
		cmd = exec.Command("/bin/cat", "/proc/self/cgroup")
	}
	cmd.Stdout = os.Stdout
	if err := pl.Start(cmd); err != nil {
		fmt.Println("start:", err)
		return 1
	}
	werr := cmd.Wait()
	if b.MemBytes > 0 {
		fmt.Println("explain:", pl.Explain(werr))
	} else if werr != nil {
		fmt.Println("wait:", werr)
		return 1
	}
	if b.Cores > 0 {
		group := strings.SplitN(pl.Cgroup(), ":", 2)[1]
		raw, err := os.ReadFile(filepath.Join(mount, group, "cpu.max"))
		fmt.Printf("cpu.max %s %v\n", strings.TrimSpace(string(raw)), err)
	}
	if err := pl.Close(); err != nil {
		fmt.Println("close:", err)
		return 1
	}
	fmt.Println("closed")
	return 0
}

// TestDelegatedSubtree places budgets as an unprivileged user in a cgroup
// v2 subtree root chowned to it, as systemd delegates user@UID.service:
// the directory and its cgroup.procs, cgroup.subtree_control and
// cgroup.threads, with the user's process in a leaf inside (as systemd's
// init.scope). Place finds the subtree by itself and makes each cgroup a
// sibling of that leaf; Close leaves only the leaf. From outside the
// subtree, a parent named with UseParent is refused with why. On a hybrid
// host only containment is tried (its cgroup2 has no controllers).
func TestDelegatedSubtree(t *testing.T) {
	if os.Geteuid() != 0 {
		require.Skipf(t, require.Root, "needs root to delegate a subtree to an unprivileged user")
	}
	var mount string
	budgets := []string{"max"}
	switch HostMode() {
	case ModeV2:
		mount = "/sys/fs/cgroup"
		budgets = append(budgets, "cores=0.5", "mem=32Mi")
	case ModeHybrid:
		mount = "/sys/fs/cgroup/unified"
	default:
		t.Skipf("no cgroup2 hierarchy (%s)", HostMode())
	}
	const uid = 65534
	bin := unprivilegedCopy(t)
	state := t.TempDir()
	deleg := fmt.Sprintf("/coldstart-deleg-%d", os.Getpid())
	leaf := filepath.Join(mount, deleg, "init")
	chown := func(dir string) {
		for _, f := range []string{"", "cgroup.procs", "cgroup.subtree_control", "cgroup.threads"} {
			if err := os.Chown(filepath.Join(dir, f), uid, uid); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, d := range []string{filepath.Dir(leaf), leaf} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := syscall.Rmdir(d); err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Errorf("remove %s: %v (something left inside)", d, err)
			}
		})
		chown(d)
	}
	if err := os.Chown(state, uid, uid); err != nil {
		t.Fatal(err)
	}
	fd, err := syscall.Open(leaf, syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	run := func(t *testing.T, item string, inside bool, env ...string) string {
		cmd := exec.Command(bin, "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"=delegated:"+item, mountEnv+"="+mount, "COLDSTART_STATE_DIR="+state)
		cmd.Env = append(cmd.Env, env...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
		if inside {
			cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, fd
		}
		out, err := cmd.CombinedOutput()
		t.Logf("as uid %d, budget %s: %v\n%s", uid, item, err, out)
		return string(out)
	}
	for _, item := range budgets {
		t.Run(item, func(t *testing.T) {
			out := run(t, item, true)
			want := []string{"cgroup v2:" + deleg + "/coldstart-", "closed"}
			switch {
			case strings.HasPrefix(item, "cores="):
				want = append(want, "cpu.max 50000 100000 <nil>")
				var wall, cpu float64
				for _, l := range strings.Split(out, "\n") {
					if _, err := fmt.Sscanf(l, "spin %f %f", &wall, &cpu); err == nil {
						break
					}
				}
				// Two spinning goroutines under half a core: well below
				// one core however busy the machine.
				if wall == 0 || cpu/wall > 0.8 {
					t.Errorf("spin under cores=0.5: %.3fs CPU in %.3fs, want at most about half", cpu, wall)
				}
			case strings.HasPrefix(item, "mem="):
				want = append(want, "explain: "+ErrMemoryLimit.Error()+" mem=32Mi")
			default:
				want = append(want, "0::"+deleg+"/coldstart-")
			}
			for _, w := range want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q", w)
				}
			}
			ents, err := os.ReadDir(filepath.Dir(leaf))
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range ents {
				if e.IsDir() && e.Name() != "init" {
					t.Errorf("cgroup %s left behind in %s", e.Name(), deleg)
				}
			}
		})
	}
	t.Run("outside", func(t *testing.T) {
		// Not delegated: this test's own cgroup has no writable ancestor.
		out := run(t, "cores=0.5", false)
		for _, w := range []string{"place:", "not root: euid " + strconv.Itoa(uid), ErrNeedSubtree.Error()} {
			if !strings.Contains(out, w) {
				t.Errorf("output lacks %q", w)
			}
		}
		// Named, but this process is outside it: the kernel would refuse
		// to clone a child into it.
		out = run(t, "cores=0.5", false, parentEnv+"="+deleg)
		for _, w := range []string{"place:", "is outside " + deleg, ErrNeedSubtree.Error()} {
			if !strings.Contains(out, w) {
				t.Errorf("output lacks %q", w)
			}
		}
	})
}
