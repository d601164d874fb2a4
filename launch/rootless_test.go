package launch_test

import (
	"context"
	"errors"
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
	"github.com/coldstart-go/coldstart/internal/procfs"
	"github.com/coldstart-go/coldstart/internal/require"
	"github.com/coldstart-go/coldstart/launch"
	"github.com/coldstart-go/coldstart/prober"
)

// rootlessChildEnv, when set (to an image path), makes the test binary a
// run that launches that image through runc as whoever runs it
// (rootlessChild).
const rootlessChildEnv = "COLDSTART_ROOTLESS_IMAGE"

// rootlessChild launches $COLDSTART_ROOTLESS_IMAGE with runc under the
// budget in $COLDSTART_ROOTLESS_BUDGET, waits until it serves, prints what
// the server sees of itself ("uid_map ...", "Cpus_allowed_list: ...",
// "cgroup ..."; with $COLDSTART_ROOTLESS_WANT_CGROUP, its cgroup's
// cpu.max and memory.max, failing unless they are the budget's: the
// guest's delegated subtree, internal/vmtest; $COLDSTART_ROOTLESS_NO_PIVOT
// sets Runc.NoPivot, for the guest's initramfs root), stops it and prints "stopped <err>", and "closed <err>" after Close.
func rootlessChild(image string) int {
	ctx := context.Background()
	b, err := budget.ParseOne(os.Getenv("COLDSTART_ROOTLESS_BUDGET"))
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	r := &launch.Runc{WorkDir: os.Getenv("COLDSTART_ROOTLESS_WORK"), Grace: time.Second, NoPivot: os.Getenv("COLDSTART_ROOTLESS_NO_PIVOT") != ""}
	defer func() { fmt.Println("closed", r.Close()) }()
	target, err := prober.FreeTCP()
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	inst, err := r.Launch(ctx, launch.Spec{Arm: "image", Path: image, Target: target, Budget: b})
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	if _, err := prober.WaitReady(ctx, inst, target, prober.Health{}, prober.WaitOptions{Timeout: 20 * time.Second}); err != nil {
		fmt.Println("error", err)
		inst.Stop(ctx)
		return 1
	}
	pid := strconv.Itoa(inst.PID())
	m, _ := os.ReadFile("/proc/" + pid + "/uid_map")
	fmt.Println("uid_map", strings.Join(strings.Fields(string(m)), " "))
	st, _ := os.ReadFile("/proc/" + pid + "/status")
	for _, l := range strings.Split(string(st), "\n") {
		if strings.HasPrefix(l, "Cpus_allowed_list:") || strings.HasPrefix(l, "Uid:") {
			fmt.Println(strings.Join(strings.Fields(l), " "))
		}
	}
	raw, _ := os.ReadFile("/proc/" + pid + "/cgroup")
	own := procfs.ParseCgroups(string(raw))[""]
	fmt.Println("cgroup", own)
	fail := false
	if os.Getenv("COLDSTART_ROOTLESS_WANT_CGROUP") != "" {
		// A delegated v2 subtree: runc made the container's cgroup
		// there, with the budget's quota and memory limit.
		for _, f := range []struct{ file, want string }{{"cpu.max", "50000 100000"}, {"memory.max", strconv.FormatInt(b.MemBytes, 10)}} {
			got, err := os.ReadFile(filepath.Join("/sys/fs/cgroup", own, f.file))
			fmt.Printf("%s %s %v\n", f.file, strings.TrimSpace(string(got)), err)
			if strings.TrimSpace(string(got)) != f.want {
				fmt.Println("error", f.file, "want", f.want)
				fail = true
			}
		}
	}
	fmt.Println("stopped", inst.Stop(ctx))
	if fail {
		return 1
	}
	return 0
}

// TestRuncRootless runs the image arm through runc as an unprivileged
// user (nobody), which runc allows only in a user namespace: the server
// serves, as that user mapped to the container's root, pinned to a
// cpus= budget by runc create's affinity; a quota without a delegated
// cgroup v2 subtree is refused with why. Nothing is left: no container
// in the user's runc state, no bundle, no rootfs, no process.
func TestRuncRootless(t *testing.T) {
	if _, err := exec.LookPath("runc"); err != nil {
		require.Skipf(t, require.Runc, "runc not installed (sudo scripts/setup.sh installs it)")
	}
	if os.Geteuid() != 0 {
		require.Skipf(t, require.Root, "needs root to switch to an unprivileged user")
	}
	const uid = 65534
	img := echoImage(t)
	dir := t.TempDir()
	for _, d := range []string{dir, filepath.Dir(dir), filepath.Dir(img.Tarball), filepath.Dir(filepath.Dir(img.Tarball))} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(img.Tarball, 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "launch.test")
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(dir, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(home, uid, uid); err != nil {
		t.Fatal(err)
	}
	runcRoot := filepath.Join(home, "xdg", "runc")
	cpu := strconv.Itoa(allowedCPU(t))
	run := func(t *testing.T, b string) string {
		t.Helper()
		cmd := exec.Command(bin, "-test.run=^$")
		cmd.Env = append(os.Environ(), rootlessChildEnv+"="+img.Tarball, "COLDSTART_ROOTLESS_BUDGET="+b,
			"COLDSTART_ROOTLESS_WORK="+home, "HOME="+home, "XDG_RUNTIME_DIR="+filepath.Join(home, "xdg"),
			"COLDSTART_STATE_DIR="+filepath.Join(home, "state"))
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
		out, err := cmd.CombinedOutput()
		t.Logf("as uid %d, budget %s: %v\n%s", uid, b, err, out)
		return string(out)
	}
	check := func(t *testing.T, out string, want ...string) {
		t.Helper()
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("output lacks %q", w)
			}
		}
	}
	t.Run("cpus="+cpu, func(t *testing.T) {
		out := run(t, "cpus="+cpu)
		check(t, out, "uid_map 0 "+strconv.Itoa(uid)+" 1", "Uid: "+strings.Repeat(strconv.Itoa(uid)+" ", 3)+strconv.Itoa(uid), "Cpus_allowed_list: "+cpu, "stopped <nil>", "closed <nil>")
	})
	t.Run("cores=0.5", func(t *testing.T) {
		out := run(t, "cores=0.5")
		if budget.HostMode() == budget.ModeV2 {
			t.Skip("cgroup v2: a delegated subtree may exist here")
		}
		check(t, out, "error start image", "rootless runc", budget.ErrNeedSubtree.Error(), "closed <nil>")
	})
	// Nothing left: the user's runc state lists no container, the work
	// directory holds only the records' state directory.
	if out, err := exec.Command("runc", "--root", runcRoot, "list", "-q").CombinedOutput(); err != nil && !errors.Is(err, os.ErrNotExist) && len(out) > 0 {
		t.Logf("runc --root %s list: %v %s", runcRoot, err, out)
	} else if ids := strings.Fields(string(out)); len(ids) > 0 {
		t.Errorf("runc --root %s list shows %v", runcRoot, ids)
	}
	ents, _ := os.ReadDir(home)
	for _, e := range ents {
		if e.Name() != "state" && e.Name() != "xdg" {
			t.Errorf("%s left in the work directory", e.Name())
		}
	}
}

// allowedCPU is one CPU this process may run on.
func allowedCPU(t *testing.T) int {
	t.Helper()
	cpus, err := budget.AllowedCPUs()
	if err != nil || len(cpus) == 0 {
		t.Fatalf("AllowedCPUs: %v %v", cpus, err)
	}
	return cpus[len(cpus)-1]
}
