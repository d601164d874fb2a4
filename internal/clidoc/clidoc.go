// Package clidoc keeps the generated CLI reference (docs/cli) in step with a
// command's cobra tree, for the commands' tests.
package clidoc

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// Check generates root's Markdown reference and compares it with the pages
// in dir named after root (<name>*.md). With update it rewrites those pages
// instead (and only those: other commands' pages share the directory).
func Check(t testing.TB, root *cobra.Command, dir string, update bool) {
	t.Helper()
	tmp := t.TempDir()
	root.DisableAutoGenTag = true
	if err := doc.GenMarkdownTree(root, tmp); err != nil {
		t.Fatal(err)
	}
	pattern := root.Name() + "*.md"
	got, _ := filepath.Glob(filepath.Join(tmp, pattern))
	if update {
		old, _ := filepath.Glob(filepath.Join(dir, pattern))
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
		if update {
			if err := os.WriteFile(dst, b, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(dst)
		if err != nil {
			t.Errorf("%s is missing: rerun the test with -update-docs", dst)
			continue
		}
		if diff := cmp.Diff(string(want), string(b)); diff != "" {
			t.Errorf("%s drifted from the commands (-docs +commands); rerun the test with -update-docs:\n%s", dst, diff)
		}
	}
	have, _ := filepath.Glob(filepath.Join(dir, pattern))
	if !update && len(have) != len(got) {
		t.Errorf("%s has %d %s pages, the cobra tree %d; rerun the test with -update-docs", dir, len(have), root.Name(), len(got))
	}
}
