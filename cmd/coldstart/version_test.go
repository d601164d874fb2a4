package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coldstart-go/coldstart/internal/provenance"
)

// TestVersion: the version command and --version print the same text,
// the one provenance.VersionText gives (results record its version as
// tool_version); -v stays verbose's shorthand, not the version's.
func TestVersion(t *testing.T) {
	want := provenance.VersionText("coldstart")
	for _, args := range [][]string{{"version"}, {"--version"}} {
		root := newRootCmd()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&out)
		root.SetArgs(args)
		if err := root.Execute(); err != nil {
			t.Fatalf("coldstart %v: %v", args, err)
		}
		if out.String() != want {
			t.Errorf("coldstart %v printed %q, want %q", args, out.String(), want)
		}
	}
	if !strings.HasPrefix(want, "coldstart version "+provenance.ToolVersion()+"\ncommit "+provenance.Commit()+"\nbuilt with go") {
		t.Errorf("version text %q: want the version, the commit and the Go version", want)
	}
	if f := newRootCmd().Flags().Lookup("version"); f == nil || f.Shorthand != "" {
		t.Errorf("--version flag %+v: want one, without -v", f)
	}
}

// TestVersionBuilt builds coldstart as a user would inside this checkout
// (go build stamps the module version and the commit) and checks that
// its version names git's commit. A test binary carries no stamp, so this
// is the only place the stamped path runs.
func TestVersionBuilt(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the coldstart binary")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			t.Skipf("git %s: %v: not a git checkout, nothing to stamp", strings.Join(args, " "), err)
		}
		return strings.TrimSpace(string(out))
	}
	// go build stamps a linked worktree's builds with nothing (its .git is
	// a file naming the real one): only a clone's own .git is stamped.
	if fi, err := os.Stat(filepath.Join(root, ".git")); err != nil || !fi.IsDir() {
		t.Skipf("%s/.git is not a directory (a linked worktree, or no checkout): go build stamps no VCS information", root)
	}
	head := git("rev-parse", "HEAD")
	if git("status", "--porcelain", "--untracked-files=no") != "" {
		head += "+dirty"
	}
	bin := filepath.Join(t.TempDir(), "coldstart")
	build := exec.Command("go", "build", "-buildvcs=auto", "-o", bin, "./cmd/coldstart")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -buildvcs=auto ./cmd/coldstart: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("coldstart version: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 3 {
		t.Fatalf("coldstart version printed %q, want 3 lines", out)
	}
	// go build (Go ≥1.24) stamps a pseudo-version naming the commit:
	// v0.0.0-20261130032040-5ff603e62ff7, +dirty when modified.
	version, _ := strings.CutPrefix(lines[0], "coldstart version ")
	if !strings.HasPrefix(version, "v") || !strings.Contains(version, head[:12]) || strings.HasSuffix(version, "+dirty") != strings.HasSuffix(head, "+dirty") {
		t.Errorf("version %q: want a module version naming commit %s", version, head)
	}
	if lines[1] != "commit "+head {
		t.Errorf("second line %q, want %q", lines[1], "commit "+head)
	}
}
