package campaign

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/coldstart-go/coldstart/builds"
	"github.com/coldstart-go/coldstart/internal/leftovers"
	"github.com/coldstart-go/coldstart/internal/ociimage"
	"github.com/coldstart-go/coldstart/prober"
)

// ImageArm is a prebuilt image measured as an arm under runc (--image
// NAME=SOURCE): an OCI image layout directory, an image tarball, or a
// reference pulled from its registry.
type ImageArm struct {
	Name   string
	Source string
}

var armName = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]*$`)

// ParseImageArm reads NAME=LAYOUT|TARBALL|REF. Its errors name the value,
// not where it came from.
func ParseImageArm(s string) (ImageArm, error) {
	n, src, ok := strings.Cut(s, "=")
	if !ok || n == "" || src == "" {
		return ImageArm{}, fmt.Errorf("%q, want NAME=LAYOUT, NAME=TARBALL or NAME=REGISTRY/REPO[:TAG|@DIGEST]", s)
	}
	if err := CheckArmName(n); err != nil {
		return ImageArm{}, err
	}
	return ImageArm{Name: n, Source: src}, nil
}

// local reports whether Source is a path on this machine (it exists, or
// it is written as a path); anything else is a registry reference.
func (a ImageArm) local() bool {
	if _, err := os.Stat(a.Source); err == nil {
		return true
	}
	return strings.HasPrefix(a.Source, "/") || strings.HasPrefix(a.Source, ".")
}

// resolve returns the artifact record for the image and the path the runc
// launcher loads: Source itself when local, else an OCI layout in pullDir
// holding the image pulled from its registry (credentials from the usual
// Docker config keychain; they are never written anywhere).
func (a ImageArm) resolve(ctx context.Context, pullDir string, log io.Writer) (builds.Artifact, string, error) {
	art := builds.Artifact{Arm: a.Name, Path: a.Source, Flags: "--image " + a.Name + "=" + a.Source}
	var img v1.Image
	path := a.Source
	if a.local() {
		var err error
		if img, err = ociimage.Load(a.Source); err != nil {
			return art, "", err
		}
		if fi, err := os.Stat(a.Source); err == nil && fi.IsDir() {
			art.Image = a.Source
		}
	} else {
		ref, err := name.ParseReference(a.Source)
		if err != nil {
			return art, "", fmt.Errorf("image %s: not a file or directory here, and not an image reference: %w", a.Source, err)
		}
		if log != nil {
			fmt.Fprintf(log, "+ pull %s\n", ref)
		}
		img, err = remote.Image(ref, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain),
			remote.WithPlatform(v1.Platform{OS: "linux", Architecture: runtime.GOARCH}))
		if err != nil {
			return art, "", fmt.Errorf("pull %s: %w", ref, err)
		}
		p, err := layout.Write(pullDir, empty.Index)
		if err != nil {
			return art, "", fmt.Errorf("pull %s: %w", ref, err)
		}
		if err := p.AppendImage(img); err != nil {
			return art, "", fmt.Errorf("pull %s: write layout %s: %w", ref, pullDir, err)
		}
		path, art.Image = pullDir, pullDir
		art.Ref = ref.Context().Name()
	}
	d, err := img.Digest()
	if err != nil {
		return art, "", fmt.Errorf("image %s: %w", a.Source, err)
	}
	art.Digest = d.String()
	if art.Ref != "" {
		art.Ref += "@" + art.Digest
	}
	layers, err := img.Layers()
	if err != nil {
		return art, "", fmt.Errorf("image %s: %w", a.Source, err)
	}
	for _, l := range layers {
		n, err := l.Size()
		if err != nil {
			return art, "", fmt.Errorf("image %s: %w", a.Source, err)
		}
		art.SizeBytes += n // compressed: what a node pulls, as for the image arm
	}
	if len(layers) == 0 {
		return art, "", errors.New("image " + a.Source + ": no layers")
	}
	return art, path, nil
}

// imageArms resolves c.Images (pulling references into temp layouts,
// removed by Built.Close) and appends an arm for each, started by runc.
// Their arguments are the template given after "--" (none when c.Args is
// nil: then the image's own Cmd runs and reads $PORT), their environment
// c.Env, both expanded per instance.
func (c ArmsConfig) imageArms(ctx context.Context, out *Built, tmpl, envTmpl prober.Template) {
	var args func(prober.Target) ([]string, error)
	if c.Args != nil {
		args = func(t prober.Target) ([]string, error) { return tmpl.Expand(prober.VarsFor(t)) }
	}
	var envFor func(prober.Target) []string
	if len(c.Env) > 0 {
		envFor = func(t prober.Target) []string {
			env, _ := envTmpl.Expand(prober.VarsFor(t))
			return env
		}
	}
	for _, ia := range c.Images {
		fail := func(err error) {
			out.Failed = append(out.Failed, fmt.Errorf("%s arm (--image): %w", ia.Name, err))
		}
		var pullDir string
		if !ia.local() {
			d, forget, err := leftovers.MkdirTemp("", "coldstart-pull-")
			if err != nil {
				fail(err)
				continue
			}
			pullDir = d
			out.closers = append(out.closers, func() error {
				if err := os.RemoveAll(d); err != nil {
					return err
				}
				forget()
				return nil
			})
		}
		art, path, err := ia.resolve(ctx, pullDir, c.Build.Progress)
		if err != nil {
			fail(err)
			continue
		}
		out.Artifacts = append(out.Artifacts, art)
		for k, rt := range c.layoutRuntimes() {
			name := ia.Name
			if k > 0 {
				name += "-" + rt
			}
			r := c.runcFor(out, rt)
			if err := r.Check(); err != nil {
				out.Failed = append(out.Failed, fmt.Errorf("%s arm (--image): %w", name, err))
				continue
			}
			out.Arms = append(out.Arms, Arm{Name: name, Launcher: r, Path: path, SizeBytes: art.SizeBytes, Args: args, EnvFor: envFor})
		}
	}
}

// layoutRuntimes are the Runtimes that start an image from its layout,
// runc and crun, in their order (runc when none is): the ones --image
// arms are started by. docker and podman start the built image arm only.
func (c ArmsConfig) layoutRuntimes() []string {
	var rts []string
	for _, rt := range c.Runtimes {
		if rt == "runc" || rt == "crun" {
			rts = append(rts, rt)
		}
	}
	if len(rts) == 0 {
		rts = []string{"runc"}
	}
	return rts
}
