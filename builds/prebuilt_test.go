package builds

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPrebuiltRoundTrip: what copyOut leaves in an out dir is what
// LoadPrebuilt reads back, and a changed binary is refused.
func TestPrebuiltRoundTrip(t *testing.T) {
	cache, out := t.TempDir(), t.TempDir()
	bin := filepath.Join(cache, "echo")
	if err := os.WriteFile(bin, []byte("\x7fELF not really"), 0o755); err != nil {
		t.Fatal(err)
	}
	a := Artifact{Arm: "static", Path: bin, Flags: "-trimpath", GoVersion: "go1.26.8",
		Command: []string{"go build -o " + bin}, Package: "example.com/echo", BuiltAt: "2026-12-01T04:00:00Z"}
	if err := fill(&a); err != nil {
		t.Fatal(err)
	}
	copied, err := copyOut(a, out)
	if err != nil {
		t.Fatal(err)
	}
	got, err := LoadPrebuilt(out, "static")
	if err != nil {
		t.Fatal(err)
	}
	want := a
	want.Path, want.Cached = filepath.Join(out, "echo-static"), true
	if copied.Path != want.Path {
		t.Errorf("copyOut put the copy at %s, want %s", copied.Path, want.Path)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("LoadPrebuilt (-want +got):\n%s", d)
	}

	if _, err := LoadPrebuilt(out, "default"); !errors.Is(err, ErrNoPrebuilt) || !strings.Contains(err.Error(), "--out-dir") {
		t.Errorf("LoadPrebuilt of an arm not there = %v, want ErrNoPrebuilt saying how to make one", err)
	}
	if err := os.WriteFile(want.Path, []byte("\x7fELF changed"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadPrebuilt(out, "static"); err == nil || !strings.Contains(err.Error(), "changed since it was built") {
		t.Errorf("LoadPrebuilt of a changed binary = %v, want a refusal", err)
	}
}

// TestBuildAllPrebuilt: with Options.Prebuilt, BuildAll builds nothing
// (no go command is even looked for) and loads each arm.
func TestBuildAllPrebuilt(t *testing.T) {
	out := t.TempDir()
	bin := filepath.Join(t.TempDir(), "srv")
	_ = os.WriteFile(bin, []byte("binary"), 0o755)
	a := Artifact{Arm: "default", Path: bin}
	if err := fill(&a); err != nil {
		t.Fatal(err)
	}
	if _, err := copyOut(a, out); err != nil {
		t.Fatal(err)
	}
	arts, errs := BuildAll(t.Context(), Source{}, []string{"default", "static"}, Options{Prebuilt: out, Go: "/nonexistent/go"})
	if errs[0] != nil || arts[0].Path != filepath.Join(out, "srv-default") {
		t.Errorf("default arm: %+v, %v; want it loaded from %s", arts[0], errs[0], out)
	}
	if !errors.Is(errs[1], ErrNoPrebuilt) {
		t.Errorf("static arm: %v, want ErrNoPrebuilt", errs[1])
	}
}
