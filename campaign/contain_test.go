package campaign

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/coldstart-go/coldstart/budget"
	"github.com/coldstart-go/coldstart/internal/testservers"
	"github.com/coldstart-go/coldstart/launch"
	"github.com/coldstart-go/coldstart/prober"
)

// TestColdStartLeavesNoDescendant runs a campaign of a server that leaves a
// detached child behind each start (setsid and a double fork, so neither
// its process group nor its session is the server's) and checks that none
// survives the campaign, without a budget (the server gets a cgroup of its
// own) and under a CPU quota (the budget's cgroup), and that no cgroup is
// left in any hierarchy. Before every server had a cgroup, the
// unconstrained campaign left one sleep per start.
func TestColdStartLeavesNoDescendant(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a cgroup per server needs root (CI runs as root); TestSubreaperKillsAdopted covers the fallback")
	}
	ts := testservers.Build(t)
	for _, tt := range []struct {
		name   string
		budget budget.Budget
	}{
		{"max", budget.Max},
		{"cores=1", budget.Budget{Cores: 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.budget.Check(); err != nil {
				t.Skipf("budget %s unavailable here: %v", tt.budget, err)
			}
			marker := testservers.NewDetachMarker()
			arm := Arm{Name: "detach", Path: ts, Args: func(prober.Target) ([]string, error) {
				return []string{"-mode", "grpc", "-detach-child", marker}, nil
			}}
			t.Cleanup(func() {
				for _, pid := range testservers.Detached(t, marker) {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			})
			var contain []string
			c := ColdStart{Arms: []Arm{arm}, Runs: 3, Budgets: []budget.Budget{tt.budget}}
			if _, err := c.Run(context.Background(), func(s prober.Sample) error {
				if s.Error != "" {
					t.Errorf("run %d: %s", s.Run, s.Error)
				}
				contain = append(contain, s.Containment)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			for i, c := range contain {
				if c != launch.ContainCgroupV1 && c != launch.ContainCgroupV2 {
					t.Errorf("sample %d: containment %q, want a cgroup as root", i, c)
				}
			}
			// The detached children are gone by the time Stop returns;
			// a killed process is listed until its parent (init) reaps it.
			var left []int
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				if left = testservers.Detached(t, marker); len(left) == 0 || time.Now().After(deadline) {
					break
				}
			}
			if len(left) != 0 {
				t.Errorf("after the campaign, %d detached children still run: %v", len(left), left)
			}
			checkNoCgroupLeft(t)
		})
	}
}

// checkNoCgroupLeft fails when a cgroup this test process made is left
// under coldstart's parent in any v1 hierarchy or in v2: their ids,
// budget.NewID's, start with coldstart-<our pid>- (other runs on the
// machine may have their own there).
func checkNoCgroupLeft(t *testing.T) {
	t.Helper()
	mine := fmt.Sprintf("coldstart-%d-*", os.Getpid())
	for _, pattern := range []string{"/sys/fs/cgroup/*" + budget.DefaultParent, "/sys/fs/cgroup" + budget.DefaultParent} {
		left, _ := filepath.Glob(filepath.Join(pattern, mine))
		for _, d := range left {
			t.Errorf("cgroup left behind: %s", d)
		}
	}
}
