package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/coldstart-go/coldstart/internal/require"
)

// TestNotRootNamesFlag runs coldstart as an unprivileged user with a
// budget only a cgroup enforces, where it can make none (this test's
// cgroup has no subtree delegated to that user): the error says what the
// budget needs and names --cgroup-parent among the ways to give it.
func TestNotRootNamesFlag(t *testing.T) {
	if os.Geteuid() != 0 {
		require.Skipf(t, require.Root, "needs root to switch to an unprivileged user")
	}
	const uid = 65534
	dir := t.TempDir()
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(dir, uid, uid); err != nil {
		t.Fatal(err)
	}
	// Named coldstart, the test binary is coldstart (testscript.Main).
	bin := filepath.Join(dir, "coldstart")
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, budget := range []string{"cores=0.5", "mem=64Mi"} {
		t.Run(budget, func(t *testing.T) {
			cmd := exec.Command(bin, "run", "-n", "1", "--bin", bin, "--arms", "default", "--budget", budget,
				"--results-dir", filepath.Join(dir, "results"))
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "HOME="+dir, "COLDSTART_STATE_DIR="+filepath.Join(dir, "state"))
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("coldstart run --budget %s as uid %d succeeded:\n%s", budget, uid, out)
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			last := lines[len(lines)-1]
			t.Logf("as uid %d: %s", uid, last)
			for _, w := range []string{"coldstart: ", "not root: euid 65534", "run as root", "systemd-run --user --scope", "--cgroup-parent"} {
				if !strings.Contains(last, w) {
					t.Errorf("error %q lacks %q", last, w)
				}
			}
		})
	}
}
