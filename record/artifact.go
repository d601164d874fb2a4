package record

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
	Ref       string   `json:"ref,omitempty"`     // image: REPO@sha256:... where --push put it

	// Package is the main package's import path ("" for a prebuilt binary).
	Package string `json:"package,omitempty"`
	// Instrumented: the debug hook (see Options.Instrument) was compiled in.
	Instrumented bool `json:"instrumented,omitempty"`
	// UPXVersion is the packer's version line ("upx 4.2.2"), upx arm only.
	UPXVersion string `json:"upx_version,omitempty"`
	// ProfileNote is the note beside a profile the pgo arm collected itself
	// (how, when, from what); "" when the profile was given.
	ProfileNote string `json:"profile_note,omitempty"`
	// ProfileLoad is what the pgo arm's profile was collected under
	// (ProfileNote's load), or "given file PATH".
	ProfileLoad string `json:"profile_load,omitempty"`
	// BuiltAt is when the artifact was built (RFC 3339, UTC); older than
	// this run when Cached.
	BuiltAt string `json:"built_at,omitempty"`
	// Variant, on a variant's artifact (coldstart run --variant), is what
	// it sets: the artifact is its arm's (Variant.Of), started so.
	Variant
}
