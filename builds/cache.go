package builds

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// recipe is a Builder whose output the cache can key: every arm of this
// package implements it.
type recipe interface {
	Builder
	// inputs is the text that determines the output ("" = nothing to cache,
	// e.g. a prebuilt binary taken as-is).
	inputs(ctx context.Context, src Source) (string, error)
	// buildInto builds into dir, which exists and is empty.
	buildInto(ctx context.Context, src Source, dir string) (Artifact, error)
}

// cache reuses artifacts built from the same inputs: each lives in
// <dir>/<key>/ beside artifact.json (the record) and inputs.txt (what the key
// was computed from).
type cache struct {
	inner recipe
	dir   string
	o     Options
}

var _ Builder = (*cache)(nil)

// Cached wraps b so that a build whose inputs (the main module's sources the
// package depends on, go.mod/go.sum, the arm's flags, the Go toolchain, the
// PGO profile, the upx version) are unchanged reuses the artifact from
// o.CacheDir instead of rebuilding. Builders from outside this package, and
// any builder when o.NoCache, are returned as they are.
func Cached(b Builder, o Options) Builder {
	r, ok := b.(recipe)
	if !ok || o.NoCache {
		return b
	}
	o = o.withDefaults()
	return &cache{inner: r, dir: o.CacheDir, o: o}
}

func (c *cache) Arm() string { return c.inner.Arm() }

const artifactFile = "artifact.json"

func (c *cache) Build(ctx context.Context, src Source) (Artifact, error) {
	in, err := c.inner.inputs(ctx, src)
	if err != nil {
		return Artifact{}, err
	}
	if in == "" {
		return c.inner.Build(ctx, src)
	}
	sum := sha256.Sum256([]byte(in))
	key := hex.EncodeToString(sum[:16])
	final := filepath.Join(c.dir, key)
	if a, err := loadArtifact(final); err == nil {
		a.Cached = true
		c.o.progress("%s: cached (built in %s): %s", label(a), fmtMs(a.BuildMs), homeRel(a.Path))
		return a, nil
	}
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return Artifact{}, fmt.Errorf("create build cache %s: %w", c.dir, err)
	}
	tmp, err := os.MkdirTemp(c.dir, "tmp-"+c.inner.Arm()+"-")
	if err != nil {
		return Artifact{}, fmt.Errorf("create build dir in %s: %w", c.dir, err)
	}
	defer os.RemoveAll(tmp) // gone after the rename; cleans up a failure
	a, err := c.inner.buildInto(ctx, src, tmp)
	if err != nil {
		return Artifact{}, err
	}
	a.Path = rebase(a.Path, tmp, final)
	a.Profile = rebase(a.Profile, tmp, final)
	a.ProfileNote = rebase(a.ProfileNote, tmp, final)
	for i, c := range a.Command { // the output path as it ends up
		a.Command[i] = strings.ReplaceAll(c, tmp+string(filepath.Separator), final+string(filepath.Separator))
	}
	b, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return Artifact{}, err
	}
	if err := os.WriteFile(filepath.Join(tmp, "inputs.txt"), []byte(in), 0o644); err != nil {
		return Artifact{}, fmt.Errorf("write build record: %w", err)
	}
	if err := os.WriteFile(filepath.Join(tmp, artifactFile), append(b, '\n'), 0o644); err != nil {
		return Artifact{}, fmt.Errorf("write build record: %w", err)
	}
	// A directory there without a valid record (an interrupted or
	// hand-edited cache) is replaced.
	if _, err := loadArtifact(final); err != nil {
		_ = os.RemoveAll(final)
	}
	if err := os.Rename(tmp, final); err != nil {
		// Someone else finished the same build first: use theirs.
		if a2, err2 := loadArtifact(final); err2 == nil {
			return a2, nil
		}
		return Artifact{}, fmt.Errorf("store build in %s: %w", final, err)
	}
	c.o.progress("%s: built in %s: %s", label(a), fmtMs(a.BuildMs), homeRel(a.Path))
	return a, nil
}

// loadArtifact reads dir's record and checks the binary is still there
// and unchanged.
func loadArtifact(dir string) (Artifact, error) {
	b, err := os.ReadFile(filepath.Join(dir, artifactFile))
	if err != nil {
		return Artifact{}, err
	}
	var a Artifact
	if err := json.Unmarshal(b, &a); err != nil {
		return Artifact{}, fmt.Errorf("read %s: %w", filepath.Join(dir, artifactFile), err)
	}
	sum, n, err := sumFile(a.Path)
	if err != nil {
		return Artifact{}, err
	}
	if sum != a.SHA256 || n != a.SizeBytes {
		return Artifact{}, fmt.Errorf("cached %s changed since it was built", a.Path)
	}
	return a, nil
}

// label names an artifact in progress lines.
func label(a Artifact) string {
	if a.Instrumented {
		return a.Arm + " (instrumented)"
	}
	return a.Arm
}

func rebase(p, from, to string) string {
	if p == from || strings.HasPrefix(p, from+string(filepath.Separator)) {
		return to + p[len(from):]
	}
	return p
}

// homeRel writes a path under the home directory as ~/…, so that a
// progress line with a build-cache path fits a terminal line.
func homeRel(p string) string {
	home, err := os.UserHomeDir()
	if err != nil || home == "" || home == "/" {
		return p
	}
	if rest, ok := strings.CutPrefix(p, home+string(os.PathSeparator)); ok {
		return "~/" + rest
	}
	return p
}

func fmtMs(ms float64) string {
	return (time.Duration(ms * float64(time.Millisecond))).Round(100 * time.Millisecond).String()
}

// copyFile copies src to dst with mode.
func copyFile(dst, src string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy %s to %s: %w", src, dst, err)
	}
	return out.Close()
}

var errNeedsPackage = errors.New("needs a Go package, not a prebuilt binary")
