package require

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestRequired(t *testing.T) {
	tests := []struct {
		env, what string
		want      bool
	}{
		{"", "upx", false},
		{"root,upx,runc,kube", "upx", true},
		{"root, runc", "runc", true},
		{"root,runc", "kube", false},
		{"all", "kube", true},
		{"upxx", "upx", false},
	}
	for _, tt := range tests {
		t.Setenv(Env, tt.env)
		if got := Required(tt.what); got != tt.want {
			t.Errorf("Required(%q) with %s=%q = %v, want %v", tt.what, Env, tt.env, got, tt.want)
		}
	}
}

// TestSkipfFailsWhenRequired runs a test that skips for upx in a child go
// test process, with and without the requirement, and reads its verdict.
func TestSkipfFailsWhenRequired(t *testing.T) {
	if os.Getenv("REQUIRE_CHILD") == "1" {
		Skipf(t, UPX, "upx not installed")
		return
	}
	for _, tt := range []struct {
		env      string
		wantFail bool
	}{{"", false}, {"root,upx", true}} {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestSkipfFailsWhenRequired$", "-test.v")
		cmd.Env = append(os.Environ(), "REQUIRE_CHILD=1", Env+"="+tt.env)
		out, err := cmd.CombinedOutput()
		failed := err != nil
		if failed != tt.wantFail {
			t.Errorf("%s=%q: child failed=%v, want %v:\n%s", Env, tt.env, failed, tt.wantFail, out)
		}
		if !tt.wantFail && !strings.Contains(string(out), "SKIP") {
			t.Errorf("%s=%q: child did not skip:\n%s", Env, tt.env, out)
		}
	}
}
