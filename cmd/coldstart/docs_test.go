package main

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coldstart-go/coldstart/internal/clidoc"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite docs/cli from the cobra tree")

// TestCLIReference keeps docs/cli, generated from the cobra tree, in step
// with the commands: it fails when a flag or help text changed without
// `go test ./cmd/coldstart -run TestCLIReference -update-docs`.
func TestCLIReference(t *testing.T) {
	clidoc.Check(t, newRootCmd(), filepath.Join("..", "..", "docs", "cli"), *updateDocs)
}

// TestLayoutComplete keeps docs/layout.md naming every package of the
// module, so a new package cannot land without its place in the layout.
func TestLayoutComplete(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}", "github.com/coldstart-go/coldstart/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	layout, err := os.ReadFile(filepath.Join("..", "..", "docs", "layout.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		rel := strings.TrimPrefix(pkg, "github.com/coldstart-go/coldstart/")
		if !strings.Contains(string(layout), "`"+rel+"`") && !strings.Contains(string(layout), "`"+rel+"/`") {
			t.Errorf("docs/layout.md does not name package %s (write it as `%s`)", rel, rel)
		}
	}
}

// TestInternalPointsNowhereUp keeps docs/layout.md's rule that the import
// arrows run down to internal/, never back: no package under the module's
// internal/ depends, directly or not, on one of the module's packages
// outside it.
func TestInternalPointsNowhereUp(t *testing.T) {
	const mod = "github.com/coldstart-go/coldstart/"
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, mod+"internal/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 10 {
		t.Fatalf("go list gave %d internal packages, want the module's", len(lines))
	}
	for _, l := range lines {
		f := strings.Fields(l)
		for _, dep := range f[1:] {
			if strings.HasPrefix(dep, mod) && !strings.HasPrefix(dep, mod+"internal/") {
				t.Errorf("%s depends on %s, above internal/", strings.TrimPrefix(f[0], mod), strings.TrimPrefix(dep, mod))
			}
		}
	}
}
