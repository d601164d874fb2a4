package provenance

import (
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

func TestShortCommit(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"5ff603e62ff7c9d674174f4f2558bb57793c0e28", "5ff603e62ff7"},
		{"5ff603e62ff7c9d674174f4f2558bb57793c0e28+dirty", "5ff603e62ff7+dirty"},
		{"5ff603e6+dirty", "5ff603e6+dirty"},
		{"unknown", "unknown"},
	} {
		if got := shortCommit(tt.in); got != tt.want {
			t.Errorf("shortCommit(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// A test binary carries no vcs stamp and names no module version: its
// version is "devel" and git's commit inside a checkout, "(devel)"
// elsewhere, and results record the same string. (A binary go build
// stamps is checked in cmd/coldstart's TestVersionBuilt.)
func TestToolVersionUnstamped(t *testing.T) {
	want := "(devel)"
	if out, err := exec.Command("git", "rev-parse", "HEAD").Output(); err == nil {
		head := strings.TrimSpace(string(out))
		if c := Commit(); c != head && c != head+"+dirty" {
			t.Errorf("Commit() = %q, want git's %s (+dirty when modified)", c, head)
		}
		want = "devel " + shortCommit(Commit())
	}
	if got := ToolVersion(); got != want {
		t.Errorf("ToolVersion() = %q, want %q", got, want)
	}
	if p := Collect("coldstart", []string{"coldstart"}); p.ToolVersion != ToolVersion() || p.Commit != Commit() {
		t.Errorf("Collect: tool_version %q, commit %q; want ToolVersion() %q, Commit() %q", p.ToolVersion, p.Commit, ToolVersion(), Commit())
	}
	text := VersionText("steady")
	wantText := "steady version " + ToolVersion() + "\ncommit " + Commit() + "\nbuilt with " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + "\n"
	if text != wantText {
		t.Errorf("VersionText = %q, want %q", text, wantText)
	}
}
