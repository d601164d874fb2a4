package builds

import (
	"context"
	"debug/buildinfo"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// goBuild is an arm made by one `go build`: default, static and pgo.
type goBuild struct {
	arm        string
	env        []string // e.g. CGO_ENABLED=0
	flags      []string // e.g. -trimpath -ldflags=-s -w
	pgo        bool     // add -pgo=PROFILE (given, or collected)
	instrument bool     // add the debug hook through -overlay
	o          Options
}

var _ recipe = (*goBuild)(nil)

func newDefault(o Options) *goBuild {
	return &goBuild{arm: "default", instrument: o.Instrument, o: o}
}

func newStatic(o Options) *goBuild {
	return &goBuild{arm: "static", env: []string{"CGO_ENABLED=0"}, flags: []string{"-trimpath", "-ldflags=-s -w"}, instrument: o.Instrument, o: o}
}

func newPGO(o Options) *goBuild {
	return &goBuild{arm: "pgo", pgo: true, instrument: o.Instrument, o: o}
}

func (b *goBuild) Arm() string { return b.arm }

// Build builds into a new directory under the cache directory, unrecorded
// (Cached wraps it to reuse builds).
func (b *goBuild) Build(ctx context.Context, src Source) (Artifact, error) {
	if src.Bin != "" {
		if b.arm == "default" {
			return asIs(src.Bin)
		}
		return Artifact{}, fmt.Errorf("build %s arm of %s: %w (use --arms default,upx)", b.arm, src.Bin, errNeedsPackage)
	}
	return buildUncached(ctx, b, b.o, src)
}

func buildUncached(ctx context.Context, r recipe, o Options, src Source) (Artifact, error) {
	if err := os.MkdirAll(o.CacheDir, 0o755); err != nil {
		return Artifact{}, fmt.Errorf("create build dir %s: %w", o.CacheDir, err)
	}
	dir, err := os.MkdirTemp(o.CacheDir, "nocache-"+r.Arm()+"-")
	if err != nil {
		return Artifact{}, fmt.Errorf("create build dir in %s: %w", o.CacheDir, err)
	}
	a, err := r.buildInto(ctx, src, dir)
	if err != nil {
		os.RemoveAll(dir)
		return Artifact{}, err
	}
	o.progress("%s: built in %s: %s", label(a), fmtMs(a.BuildMs), homeRel(a.Path))
	return a, nil
}

// settings is the arm's distinguishing environment and flags, as printed.
func (b *goBuild) settings(profile string) string {
	var parts []string
	parts = append(parts, b.env...)
	for _, f := range b.flags {
		parts = append(parts, shellQuote(f))
	}
	if b.pgo {
		parts = append(parts, "-pgo="+profile)
	}
	return strings.Join(parts, " ")
}

func (b *goBuild) inputs(ctx context.Context, src Source) (string, error) {
	if src.Bin != "" {
		if b.arm == "default" {
			return "", nil // as-is: nothing is built
		}
		return "", fmt.Errorf("build %s arm of %s: %w (use --arms default,upx)", b.arm, src.Bin, errNeedsPackage)
	}
	p, err := b.o.pkg(ctx, src)
	if err != nil {
		return "", err
	}
	env, err := b.o.goEnv(ctx, src.Dir)
	if err != nil {
		return "", err
	}
	var in strings.Builder
	fmt.Fprintf(&in, "arm %s\npackage %s\nsources %s\nsettings %s\n", b.arm, p.ImportPath, p.Hash, b.settings(""))
	if b.instrument {
		fmt.Fprintf(&in, "debug hook %x\n", sha256Bytes(HookSource))
	}
	if b.pgo {
		prof, err := b.o.profile(ctx, src)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&in, "profile %s\n", prof.SHA256)
	}
	fmt.Fprintf(&in, "go env\n%s", env)
	return in.String(), nil
}

func (b *goBuild) buildInto(ctx context.Context, src Source, dir string) (Artifact, error) {
	if src.Bin != "" {
		return b.Build(ctx, src)
	}
	p, err := b.o.pkg(ctx, src)
	if err != nil {
		return Artifact{}, err
	}
	env, err := b.o.goEnv(ctx, src.Dir)
	if err != nil {
		return Artifact{}, err
	}
	out := filepath.Join(dir, p.Name)
	args := []string{"build"}
	args = append(args, b.flags...)
	a := Artifact{Arm: b.arm, Package: p.ImportPath, GoVersion: goVersion(env), Instrumented: b.instrument}
	var steps []string
	if b.pgo {
		prof, err := b.o.profile(ctx, src)
		if err != nil {
			return Artifact{}, err
		}
		args = append(args, "-pgo="+prof.Path)
		// Keep the profile (and its note) beside the artifact.
		a.Profile = filepath.Join(dir, "default.pgo")
		if err := copyFile(a.Profile, prof.Path, 0o644); err != nil {
			return Artifact{}, fmt.Errorf("keep profile %s: %w", prof.Path, err)
		}
		if prof.Note != "" {
			a.ProfileNote = filepath.Join(dir, "profile.json")
			if err := copyFile(a.ProfileNote, prof.Note, 0o644); err != nil {
				return Artifact{}, fmt.Errorf("keep profile note %s: %w", prof.Note, err)
			}
		}
		a.Flags, a.ProfileLoad = "-pgo="+prof.Path, prof.Load
	} else {
		a.Flags = b.settings("")
	}
	if b.instrument {
		tmp, err := os.MkdirTemp("", "coldstart-overlay-")
		if err != nil {
			return Artifact{}, fmt.Errorf("create overlay dir: %w", err)
		}
		defer os.RemoveAll(tmp)
		overlay, err := writeOverlay(tmp, p.Dir)
		if err != nil {
			return Artifact{}, err
		}
		args = append(args, "-overlay="+overlay)
	}
	args = append(args, "-o", out, src.Pkg)
	s := step{dir: src.Dir, env: b.env, name: b.o.Go, args: args}
	steps = append(steps, s.String())
	start := time.Now()
	if _, err := s.run(ctx, b.o.cmdLog()); err != nil {
		return Artifact{}, fmt.Errorf("build %s (%s arm): %w", src.Pkg, b.arm, err)
	}
	a.BuildMs = msSince(start)
	a.Command = steps
	a.BuiltAt = time.Now().UTC().Format(time.RFC3339)
	a.Path = out
	if err := fill(&a); err != nil {
		return Artifact{}, err
	}
	return a, nil
}

// fill sets the size and sha256 of a.Path.
func fill(a *Artifact) error {
	sum, n, err := sumFile(a.Path)
	if err != nil {
		return fmt.Errorf("read artifact: %w", err)
	}
	a.SHA256, a.SizeBytes = sum, n
	return nil
}

// asIs is a prebuilt binary taken as the default arm.
func asIs(bin string) (Artifact, error) {
	abs, err := filepath.Abs(bin)
	if err != nil {
		return Artifact{}, err
	}
	if _, err := exec.LookPath(abs); err != nil {
		return Artifact{}, fmt.Errorf("use binary %s: %w", bin, err)
	}
	a := Artifact{Arm: "default", Path: abs, Flags: "as-is"}
	if bi, err := buildinfo.ReadFile(abs); err == nil {
		a.GoVersion = bi.GoVersion
		a.Package = bi.Path
	}
	if err := fill(&a); err != nil {
		return Artifact{}, err
	}
	if fi, err := os.Stat(abs); err == nil {
		a.BuiltAt = fi.ModTime().UTC().Format(time.RFC3339)
	}
	return a, nil
}

// ErrUPXMissing is returned by the upx arm when the upx command is not
// found; the error also carries the command that installs it.
var ErrUPXMissing = errors.New("upx not found")

// UPXInstall is how to install upx on Debian.
const UPXInstall = "apt-get install -t bookworm-backports upx-ucl (or: sudo scripts/setup.sh)"

// upxBuild packs the static arm (or a prebuilt binary) with upx. Its
// BuildMs is the static build's plus the packing's: what the arm costs from
// source.
type upxBuild struct {
	static recipe // the static arm, cached
	o      Options
}

var _ recipe = (*upxBuild)(nil)

func newUPX(o Options) *upxBuild {
	return &upxBuild{static: asRecipe(Cached(newStatic(o), o)), o: o}
}

func (b *upxBuild) Arm() string { return "upx" }

func (b *upxBuild) Build(ctx context.Context, src Source) (Artifact, error) {
	return buildUncached(ctx, b, b.o, src)
}

// upxVersion is upx's first --version line ("upx 4.2.2"), memoized.
func (o Options) upxVersion(ctx context.Context) (string, error) {
	o.sh.mu.Lock()
	v, ok := o.sh.upx[o.UPX]
	o.sh.mu.Unlock()
	if ok {
		return v, nil
	}
	if _, err := exec.LookPath(o.UPX); err != nil {
		return "", fmt.Errorf("build upx arm: %w (%s); install it: %s", ErrUPXMissing, o.UPX, UPXInstall)
	}
	out, err := step{name: o.UPX, args: []string{"--version"}}.run(ctx, o.cmdLog())
	if err != nil {
		return "", fmt.Errorf("build upx arm: run %s --version: %w", o.UPX, err)
	}
	v, _, _ = strings.Cut(strings.TrimSpace(string(out)), "\n")
	o.sh.mu.Lock()
	o.sh.upx[o.UPX] = v
	o.sh.mu.Unlock()
	return v, nil
}

func (b *upxBuild) inputs(ctx context.Context, src Source) (string, error) {
	v, err := b.o.upxVersion(ctx)
	if err != nil {
		return "", err
	}
	var in strings.Builder
	fmt.Fprintf(&in, "arm upx\nupx %s\nlevel %s\n", v, b.o.UPXLevel)
	if src.Bin != "" {
		sum, _, err := sumFile(src.Bin)
		if err != nil {
			return "", fmt.Errorf("read binary %s: %w", src.Bin, err)
		}
		fmt.Fprintf(&in, "binary %s\n", sum)
		return in.String(), nil
	}
	sin, err := b.static.inputs(ctx, src)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(&in, "packs:\n%s", sin)
	return in.String(), nil
}

func (b *upxBuild) buildInto(ctx context.Context, src Source, dir string) (Artifact, error) {
	v, err := b.o.upxVersion(ctx)
	if err != nil {
		return Artifact{}, err
	}
	var a Artifact
	var in Artifact
	if src.Bin != "" {
		if in, err = asIs(src.Bin); err != nil {
			return Artifact{}, err
		}
	} else if in, err = b.static.Build(ctx, src); err != nil {
		return Artifact{}, err
	}
	out := filepath.Join(dir, filepath.Base(in.Path))
	args := append([]string{"-q"}, b.o.UPXLevel.flags()...)
	args = append(args, "-o", out, in.Path)
	s := step{name: b.o.UPX, args: args}
	start := time.Now()
	if _, err := s.run(ctx, b.o.cmdLog()); err != nil {
		return Artifact{}, fmt.Errorf("pack %s with upx: %w", in.Path, err)
	}
	packMs := msSince(start)
	a = Artifact{
		Arm:          "upx",
		Path:         out,
		BuildMs:      in.BuildMs + packMs,
		Command:      append(append([]string(nil), in.Command...), s.String()),
		Flags:        strings.TrimSpace(in.Flags + " upx " + strings.Join(b.o.UPXLevel.flags(), " ")),
		GoVersion:    in.GoVersion,
		Package:      in.Package,
		Instrumented: in.Instrumented,
		UPXVersion:   v,
		BuiltAt:      time.Now().UTC().Format(time.RFC3339),
	}
	if src.Bin != "" {
		a.Flags = strings.TrimSpace("upx " + strings.Join(b.o.UPXLevel.flags(), " "))
	}
	if err := fill(&a); err != nil {
		return Artifact{}, err
	}
	return a, nil
}

// asRecipe unwraps a cache to its recipe-capable form: the cache itself
// when it wraps one.
func asRecipe(b Builder) recipe {
	if c, ok := b.(*cache); ok {
		return cacheRecipe{c}
	}
	return b.(recipe)
}

// cacheRecipe lets a cached builder stand where a recipe is needed: its
// inputs are the inner builder's, its Build goes through the cache.
type cacheRecipe struct{ *cache }

func (c cacheRecipe) inputs(ctx context.Context, src Source) (string, error) {
	return c.inner.inputs(ctx, src)
}

func (c cacheRecipe) buildInto(ctx context.Context, src Source, dir string) (Artifact, error) {
	return c.inner.buildInto(ctx, src, dir)
}

func msSince(t time.Time) float64 { return float64(time.Since(t)) / float64(time.Millisecond) }
