// Package builds turns one Go main package into several arms (default,
// static, upx, pgo, image) and records how each artifact was made.
package builds

import (
	"context"

	"github.com/coldstart-go/coldstart/record"
)

// Source is what an arm is built from: a Go main package, or a prebuilt
// binary for the arms that can take one (default "as-is", upx, image).
type Source struct {
	// Pkg is a main package: a directory ("./examples/echo") or an import
	// path resolvable from Dir's module.
	Pkg string
	// Dir is the directory go build runs in ("" = current directory).
	Dir string
	// Bin is a prebuilt binary; it replaces Pkg when set.
	Bin string
}

// Artifact records one built arm (record.Artifact, the row results files
// carry).
type Artifact = record.Artifact

// Builder builds one arm.
type Builder interface {
	Arm() string
	Build(ctx context.Context, src Source) (Artifact, error)
}
