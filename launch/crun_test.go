package launch_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coldstart-go/coldstart/budget"
	"github.com/coldstart-go/coldstart/internal/require"
	"github.com/coldstart-go/coldstart/launch"
	"github.com/coldstart-go/coldstart/prober"
)

func TestRootIsInitramfs(t *testing.T) {
	tests := []struct {
		name, mountinfo string
		want            bool
	}{
		{"initramfs", "1 1 0:2 / / rw - rootfs rootfs rw,size=2010184k,nr_inodes=502546\n" +
			"2 1 0:19 / /proc rw,relatime - proc proc rw\n", true},
		{"disk", "23 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro\n" +
			"24 23 0:22 / /sys rw,nosuid shared:7 - sysfs sysfs rw\n", false},
		// An initramfs that mounted the real root over itself, as
		// switch_root does not: the last mount at / is the one seen.
		{"disk over initramfs", "1 1 0:2 / / rw - rootfs rootfs rw\n" +
			"20 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n", false},
		{"tmpfs root", "30 1 0:40 / / rw - tmpfs tmpfs rw\n", false},
		{"no root line", "2 1 0:19 / /proc rw - proc proc rw\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "mountinfo")
			if err := os.WriteFile(f, []byte(tt.mountinfo), 0o644); err != nil {
				t.Fatal(err)
			}
			if got := launch.RootIsInitramfs(f); got != tt.want {
				t.Errorf("RootIsInitramfs = %v, want %v", got, tt.want)
			}
		})
	}
	if launch.RootIsInitramfs(filepath.Join(t.TempDir(), "missing")) {
		t.Error("RootIsInitramfs(missing file) = true")
	}
}

func TestCrunHierarchy(t *testing.T) {
	dir := t.TempDir()
	hybrid, empty := filepath.Join(dir, "hybrid"), filepath.Join(dir, "empty")
	if err := os.WriteFile(hybrid, []byte("hugetlb\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(empty, []byte("\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := launch.CrunHierarchy(hybrid)
	if !errors.Is(err, launch.ErrNoRuntime) {
		t.Fatalf("CrunHierarchy(hybrid) = %v, want ErrNoRuntime", err)
	}
	for _, w := range []string{"crun", hybrid, "hugetlb", "cgroup v2 host", "mount -t cgroup -o hugetlb cgroup /sys/fs/cgroup/hugetlb"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("CrunHierarchy(hybrid) = %v, want it to mention %q", err, w)
		}
	}
	for _, f := range []string{empty, filepath.Join(dir, "missing")} {
		if err := launch.CrunHierarchy(f); err != nil {
			t.Errorf("CrunHierarchy(%s) = %v, want nil", filepath.Base(f), err)
		}
	}
}

// TestCrun starts the image arm's container under crun, with a quota
// and a memory limit, checks the budget reached its cgroup, and that
// nothing is left in crun's list or the work directory. On a cgroup v1
// hybrid host crun refuses every container: there the test skips with
// why (the cgroup v2 guests of internal/vmtest run crun in a campaign).
func TestCrun(t *testing.T) {
	if _, err := exec.LookPath("crun"); err != nil {
		require.Skipf(t, require.Crun, "crun not installed (sudo scripts/test-setup.sh installs it)")
	}
	if os.Geteuid() != 0 {
		require.Skipf(t, require.Root, "crun containers need root")
	}
	r := &launch.Runc{Binary: "crun", WorkDir: t.TempDir(), Grace: time.Second}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Error(err)
		}
	})
	if err := r.Check(); err != nil {
		t.Skipf("%v", err)
	}
	img := echoImage(t)
	target, err := prober.FreeTCP()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	b := budget.Budget{Cores: 0.5, MemBytes: 64 << 20}
	id := budget.NewID()
	inst, err := r.Launch(ctx, launch.Spec{Arm: "image", Path: img.Layout, Target: target, ID: id, Budget: b})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prober.WaitReady(ctx, inst, target, prober.Health{}, prober.WaitOptions{Timeout: 20 * time.Second}); err != nil {
		inst.Stop(ctx)
		t.Fatal(err)
	}
	// On cgroup v2 (one "0::" line) the container's own cgroup files say
	// what crun wrote.
	cg, err := os.ReadFile("/proc/" + strconv.Itoa(inst.PID()) + "/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := strings.CutPrefix(strings.TrimSpace(string(cg)), "0::"); ok && !strings.Contains(p, "\n") {
		for file, want := range map[string]string{"cpu.max": "50000 100000", "memory.max": strconv.Itoa(64 << 20)} {
			got, err := os.ReadFile(filepath.Join("/sys/fs/cgroup", p, file))
			if err != nil || strings.TrimSpace(string(got)) != want {
				t.Errorf("%s = %q (%v), want %s", filepath.Join(p, file), got, err, want)
			}
		}
	}
	if err := inst.Stop(ctx); err != nil {
		t.Errorf("Stop: %v", err)
	}
	out, err := exec.Command("crun", "list", "-q").Output()
	if err != nil {
		t.Fatalf("crun list: %v", err)
	}
	if strings.Contains(string(out), id) {
		t.Errorf("crun list still shows %s", id)
		exec.Command("crun", "delete", "--force", id).Run()
	}
	if _, err := os.Stat(filepath.Join(r.WorkDir, id)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("bundle %s remains (stat: %v)", id, err)
	}
}
