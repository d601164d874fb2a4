// Package deptest lists a package's dependencies for tests that keep
// them from growing back, as `go list -deps` gives them.
package deptest

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// List returns the import paths the package in the current directory
// depends on, itself last, failing t when the go command cannot say or
// the list does not end with pkg (the package's import path).
func List(t *testing.T, pkg string) []string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("find the go command (needed to list %s's dependencies): %v", pkg, err)
	}
	out, err := exec.Command(goBin, "list", "-deps", ".").Output()
	if err != nil {
		var stderr string
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list -deps .: %v\n%s", err, stderr)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 || deps[len(deps)-1] != pkg {
		t.Fatalf("go list -deps . gave %d packages ending %q, want %s's dependencies ending with it", len(deps), deps[len(deps)-1:], pkg)
	}
	return deps
}
