package main

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra/doc"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite docs/cli from the cobra tree")

// TestCLIReference keeps docs/cli, generated from the cobra tree, in step
// with the commands: it fails when a flag or help text changed without
// `go test ./cmd/coldstart -run TestCLIReference -update-docs`.
func TestCLIReference(t *testing.T) {
	dir := filepath.Join("..", "..", "docs", "cli")
	tmp := t.TempDir()
	root := newRootCmd()
	root.DisableAutoGenTag = true
	if err := doc.GenMarkdownTree(root, tmp); err != nil {
		t.Fatal(err)
	}
	got, _ := filepath.Glob(filepath.Join(tmp, "coldstart*.md"))
	if *updateDocs {
		old, _ := filepath.Glob(filepath.Join(dir, "coldstart*.md"))
		for _, o := range old {
			os.Remove(o)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, g := range got {
		b, err := os.ReadFile(g)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, filepath.Base(g))
		if *updateDocs {
			if err := os.WriteFile(dst, b, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(dst)
		if err != nil {
			t.Errorf("%s is missing: run go test ./cmd/coldstart -run TestCLIReference -update-docs", dst)
			continue
		}
		if diff := cmp.Diff(string(want), string(b)); diff != "" {
			t.Errorf("%s drifted from the commands (-docs +commands); run with -update-docs:\n%s", dst, diff)
		}
	}
	have, _ := filepath.Glob(filepath.Join(dir, "coldstart*.md"))
	if !*updateDocs && len(have) != len(got) {
		t.Errorf("docs/cli has %d pages, the cobra tree %d; run with -update-docs", len(have), len(got))
	}
}
