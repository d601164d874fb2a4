// Package builds turns one Go main package into several arms (default,
// static, upx, pgo, image) and records how each artifact was made.
package builds

import "context"

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

// Artifact records one built arm. Units are in the JSON names.
type Artifact struct {
	Arm       string   `json:"arm"`
	Path      string   `json:"path"`
	SizeBytes int64    `json:"size_bytes"`
	BuildMs   float64  `json:"build_ms"`   // wall time of this build; of the original build when Cached
	Command   []string `json:"command"`    // exact command lines run, one per step
	Flags     string   `json:"flags"`      // the arm's distinguishing flags, e.g. "-pgo=auto.pprof"
	GoVersion string   `json:"go_version"` // from `go version` (or the binary's build info)
	SHA256    string   `json:"sha256"`
	Cached    bool     `json:"cached"`            // reused from the cache, not rebuilt now
	Profile   string   `json:"profile,omitempty"` // pgo: the profile used
	Image     string   `json:"image,omitempty"`   // image: OCI layout directory
	Digest    string   `json:"digest,omitempty"`  // image: manifest digest (sha256:...)
}

// Builder builds one arm.
type Builder interface {
	Arm() string
	Build(ctx context.Context, src Source) (Artifact, error)
}
