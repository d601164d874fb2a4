package launch_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coldstart-go/coldstart/budget"
	"github.com/coldstart-go/coldstart/internal/testservers"
	"github.com/coldstart-go/coldstart/launch"
	"github.com/coldstart-go/coldstart/prober"
)

func ppid(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	n, _ := strconv.Atoi(f[1])
	return n
}

// startDetaching launches the test server with -detach-child and waits
// until it is ready (it detaches its sleep before it listens): the sleep
// then runs, outside the server's process group and session.
func startDetaching(t *testing.T, l launch.Process, b budget.Budget, marker string) launch.Instance {
	t.Helper()
	ts := testservers.Build(t)
	tg := freeTCP(t)
	inst, err := l.Launch(context.Background(), launch.Spec{
		Arm: "detach", Path: ts, Args: []string{"-mode", "grpc", "-detach-child", marker},
		Target: tg, Budget: b, ID: budget.NewID(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		inst.Stop(context.Background())
		for _, pid := range testservers.Detached(t, marker) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	waitReady(t, inst, tg, prober.Health{})
	if got := testservers.Detached(t, marker); len(got) != 1 {
		t.Fatalf("the ready server's detached sleeps: %v, want one: the test shows nothing", got)
	}
	return inst
}

// waitGone waits for the marked sleeps to go: a killed process is listed
// until its parent reaps it.
func waitGone(t *testing.T, marker string) {
	t.Helper()
	var left []int
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if left = testservers.Detached(t, marker); len(left) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(left) != 0 {
		t.Errorf("after Stop, the detached sleep still runs: %v", left)
	}
}

func containment(inst launch.Instance) string {
	c, _ := inst.(interface{ Containment() string })
	if c == nil {
		return ""
	}
	return c.Containment()
}

// TestStopKillsDetachedChild: a server that detached a child (setsid and
// a double fork) leaves nothing once stopped: it ran in a cgroup of its
// own, its budget's or one made for it, and Stop killed all in it and
// removed the cgroup.
func TestStopKillsDetachedChild(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a cgroup per server needs root (CI runs as root); TestSubreaperKillsAdopted covers the fallback")
	}
	for _, b := range []budget.Budget{budget.Max, {CPUs: []int{0}}, {Cores: 1}} {
		t.Run(b.String(), func(t *testing.T) {
			if err := b.Check(); err != nil {
				t.Skipf("budget %s unavailable here: %v", b, err)
			}
			marker := testservers.NewDetachMarker()
			inst := startDetaching(t, launch.Process{}, b, marker)
			want := launch.ContainCgroupV1
			if budget.HostMode() == budget.ModeV2 {
				want = launch.ContainCgroupV2
			}
			if got := containment(inst); got != want {
				t.Errorf("containment %q, want %q", got, want)
			}
			if err := inst.Stop(context.Background()); err != nil {
				t.Fatal(err)
			}
			waitGone(t, marker)
			mine := fmt.Sprintf("coldstart-%d-*", os.Getpid())
			for _, p := range []string{"/sys/fs/cgroup/*/coldstart", "/sys/fs/cgroup/coldstart"} {
				if left, _ := filepath.Glob(filepath.Join(p, mine)); len(left) > 0 {
					t.Errorf("cgroups left behind: %v", left)
				}
			}
		})
	}
}

const subreaperChildEnv = "LAUNCH_SUBREAPER_CHILD"

// TestSubreaperKillsAdopted: where no cgroup is made, this process is the
// child subreaper of the server, so the detached sleep is reparented here
// (not to init), and Stop kills and reaps it. It runs in a child test
// process: the subreaper attribute is the whole process's and would adopt
// other tests' orphans (runc's) for the rest of the run.
func TestSubreaperKillsAdopted(t *testing.T) {
	if os.Getenv(subreaperChildEnv) == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestSubreaperKillsAdopted$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), subreaperChildEnv+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestSubreaperKillsAdopted") {
			t.Fatalf("child test: %v\n%s", err, out)
		}
		t.Logf("child test:\n%s", out)
		return
	}
	marker := testservers.NewDetachMarker()
	inst := startDetaching(t, launch.WithoutCgroup(launch.Process{}), budget.Max, marker)
	if got := containment(inst); got != launch.ContainSubreaper {
		t.Errorf("containment %q, want %q", got, launch.ContainSubreaper)
	}
	sleep := testservers.Detached(t, marker)[0]
	if p := ppid(t, sleep); p != os.Getpid() {
		t.Errorf("the detached sleep's parent is %d, want this process (%d) as its subreaper", p, os.Getpid())
	}
	if err := inst.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitGone(t, marker)
}
