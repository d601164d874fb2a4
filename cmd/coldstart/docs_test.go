package main

import (
	"flag"
	"path/filepath"
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
