package vmtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// guestBudgetTests must pass inside the guest, not skip: the budget tests
// that show cores=, mem=, cpus=, UseCgroupFD, memory.peak, GOMAXPROCS and
// cleanup on pure cgroup v2.
var guestBudgetTests = []string{
	"TestCPUSet", "TestGOMAXPROCSMatchesServer", "TestQuotaHalfCore", "TestMemoryLimitKills",
	"TestMemoryPeakFromFirstInstruction", "TestChildInCgroupAndThreadsRestored", "TestV2CloneInto",
	"TestCleanup", "TestNotRoot", "TestCheck", "TestAccounting", "TestConcurrentPlacements",
}

// TestCgroupV2Guest boots each cached Debian kernel in pure cgroup v2 mode
// and runs the budget tests there.
func TestCgroupV2Guest(t *testing.T) {
	qemu, kernels, busybox := guestTools(t)
	_ = qemu
	dir := t.TempDir()
	bins := buildGuestBinaries(t, dir)
	for i, k := range kernels {
		t.Run("linux-"+k.Series, func(t *testing.T) {
			if i > 0 && testing.Short() {
				t.Skip("-short: the newest kernel only")
			}
			img := filepath.Join(dir, "initramfs-"+k.Series+".cpio")
			plan := Plan{Steps: []Step{{
				Name: "budget",
				Argv: []string{"/bin/budget.test", "-test.v", "-test.count=1", "-test.timeout=5m"},
				Env:  []string{RequireEnv + "=cgroup-v2"},
				Dir:  "/tmp", Timeout: 6 * time.Minute,
			}}}
			writeInitramfs(t, img, bins, busybox, plan)
			m := Machine{Kernel: k.Path, CPUs: 4, Timeout: 8 * time.Minute, Console: &lineLog{t: t}, Verbose: true}
			start := time.Now()
			o, err := m.Run(context.Background(), img)
			t.Logf("guest %s (%s): %.1fs from start to power-off", k.Series, k.Package, time.Since(start).Seconds())
			if err != nil {
				t.Fatal(err)
			}
			if o.Info["cgroup"] != "v2" {
				t.Errorf("guest cgroup mode %q, want v2 (info %v)", o.Info["cgroup"], o.Info)
			}
			for _, ctl := range []string{"cpu", "cpuset", "memory"} {
				if !strings.Contains(","+o.Info["subtree_control"]+",", ","+ctl+",") {
					t.Errorf("guest root subtree_control %q lacks %s", o.Info["subtree_control"], ctl)
				}
			}
			checkGoTestOutput(t, o.Console, guestBudgetTests)
		})
	}
}

// guestTools finds qemu, the kernels and busybox, or skips (fails where
// RequireEnv lists "vm") saying how to get them.
func guestTools(t *testing.T) (string, []Kernel, string) {
	t.Helper()
	if testing.Short() && !Required("vm") {
		t.Skip("-short: booting a guest under TCG takes minutes")
	}
	qemu, err := LookQEMU()
	if err != nil {
		SkipUnlessRequired(t, "vm", err)
	}
	kernels, err := Kernels(CacheDir())
	if err != nil {
		SkipUnlessRequired(t, "vm", err)
	}
	busybox, err := Busybox(CacheDir())
	if err != nil {
		SkipUnlessRequired(t, "vm", err)
	}
	return qemu, kernels, busybox
}

// guestBinaries are the static programs the guest runs, built on the host.
type guestBinaries struct {
	init, budgetTest string
}

// buildGuestBinaries builds the guest's /init and the budget tests as
// static binaries (CGO_ENABLED=0) into dir.
func buildGuestBinaries(t *testing.T, dir string) guestBinaries {
	t.Helper()
	b := guestBinaries{init: filepath.Join(dir, "init"), budgetTest: filepath.Join(dir, "budget.test")}
	goCmd(t, "build", "-o", b.init, "./internal/vmtest/guestinit")
	goCmd(t, "test", "-c", "-o", b.budgetTest, "./budget")
	return b
}

// goCmd runs the go command in the module's root with cgo off, so that
// what it builds is static.
func goCmd(t *testing.T, args ...string) {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	t.Logf("go %s: %.1fs", strings.Join(args, " "), time.Since(start).Seconds())
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("go env GOMOD: not inside a module")
	}
	return filepath.Dir(mod), nil
}

// busyboxApplets are the commands the budget tests start as children.
var busyboxApplets = []string{"sh", "true", "grep", "sleep", "cat", "ls", "find"}

func writeInitramfs(t *testing.T, file string, b guestBinaries, busybox string, plan Plan) {
	t.Helper()
	r := NewInitramfs()
	add := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	add(r.AddFile("/init", b.init, 0o755))
	add(r.AddFile("/bin/budget.test", b.budgetTest, 0o755))
	add(r.AddFile("/bin/busybox", busybox, 0o755))
	for _, a := range busyboxApplets {
		add(r.AddSymlink("/bin/"+a, "busybox"))
	}
	raw, err := json.Marshal(plan)
	add(err)
	add(r.AddData(PlanPath, raw, 0o644))
	add(r.WriteFile(file))
}

var goTestResult = regexp.MustCompile(`^\s*--- (PASS|FAIL|SKIP): (\S+)`)

// checkGoTestOutput checks that every test in must passed in the guest's
// `go test -v` output, and that nothing was skipped: on the guest every
// budget test has what it needs.
func checkGoTestOutput(t *testing.T, console []byte, must []string) {
	t.Helper()
	status := map[string]string{}
	for _, l := range strings.Split(string(console), "\n") {
		if m := goTestResult.FindStringSubmatch(l); m != nil {
			status[m[2]] = m[1]
			if m[1] == "SKIP" {
				t.Errorf("guest skipped %s: every budget test should run on pure cgroup v2", m[2])
			}
		}
	}
	for _, name := range must {
		if status[name] != "PASS" {
			t.Errorf("guest: %s %q, want PASS", name, status[name])
		}
	}
}

// lineLog streams the guest's console into the test log, line by line.
type lineLog struct{ t *testing.T }

func (l *lineLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
