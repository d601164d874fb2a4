package campaign

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/coldstart-go/coldstart/builds"
	"github.com/coldstart-go/coldstart/internal/runas"
	"github.com/coldstart-go/coldstart/launch"
	"github.com/coldstart-go/coldstart/prober"
)

// ArmsConfig says what to build and how to start what was built.
type ArmsConfig struct {
	// Source is the server (zero = the bundled sample server).
	Source builds.Source
	Arms   []string
	// Binaries are prebuilt binaries measured as they are, each as its
	// own arm (--bin ARM=PATH), beside Arms.
	Binaries []Binary
	Build    builds.Options
	// Args is the server's argument template (what follows "--"): nil
	// means SampleArgs when building the sample, and no arguments
	// otherwise (the server reads $PORT).
	Args []string
	// SampleArgs are the sample server's arguments (nil = --addr {addr},
	// or --unix {socket} with the unix transport).
	SampleArgs []string
	// Env is extra environment, K=V, with the same placeholders as Args.
	Env []string
	Dir string
	// Transport decides the sample server's default template.
	Transport Transport
	// Runc starts the image arm under runc (nil = a default runc
	// launcher).
	Runc *launch.Runc
	// Runtimes start the image arm, one arm each: runc, crun (runc's
	// command line; Debian's crun), docker or podman (nil = runc). The
	// first is arm "image", each other "image-RUNTIME", so that one
	// campaign sets runtimes side by side, interleaved.
	Runtimes []string
	// Images are prebuilt images measured as arms under runc, beside the
	// built ones (--image).
	Images []ImageArm
	// RunAs starts the process arms as its user (nil = as coldstart);
	// Built.Close closes it.
	RunAs *runas.Stage
	// Start are start arms (prebound, snapshot) made from the built arm
	// StartConfig.Base once the others are built (nil = none).
	Start       []string
	StartConfig StartConfig
	// Variants are arms made from the others, once those are made (the
	// start arms too): each one's binary started with more settings
	// (AddVariants).
	Variants []Variant
}

// Binary is a prebuilt binary measured as it is, as arm Name.
type Binary struct {
	Name string
	Path string
}

// CheckArmName checks a name the user gives an arm (--bin ARM=PATH,
// --image NAME=...): it labels rows, files and Services.
func CheckArmName(n string) error {
	if !armName.MatchString(n) {
		return fmt.Errorf("arm name %q: use lower-case letters, digits, '-', '_' and '.'", n)
	}
	return nil
}

// Built is what BuildArms made.
type Built struct {
	Arms      []Arm
	Artifacts []builds.Artifact
	// Failed names each arm that did not build, with why; the others are
	// in Arms.
	Failed []error

	closers []func() error
}

// Close releases what the arms hold between instances (the image arm's
// unpacked root filesystem).
func (b Built) Close() error {
	var errs []error
	for _, c := range b.closers {
		errs = append(errs, c())
	}
	return errors.Join(errs...)
}

// OnClose adds f to what Close runs, after what is there: a campaign's
// cleanup hook, which runs once the arms are done with.
func (b *Built) OnClose(f func() error) { b.closers = append(b.closers, f) }

// Err joins the failed arms' errors (nil when every arm built).
func (b Built) Err() error { return errors.Join(b.Failed...) }

// BuildArms builds every arm, keeping going past arms that fail (an arm
// whose tool is missing does not stop the rest), turns each artifact into
// an Arm that starts it, takes each of c.Binaries as it is, and adds the
// start arms. It fails when no arm could be made.
func BuildArms(ctx context.Context, c ArmsConfig) (Built, error) {
	var out Built
	if c.RunAs != nil {
		out.closers = append(out.closers, c.RunAs.Close)
	}
	src := c.Source
	sample := false
	switch {
	case src.Pkg == "" && src.Bin == "" && c.Build.Prebuilt != "":
		// Arms built elsewhere (no checkout needed): taken as the sample
		// server's unless Args say how to start them.
		sample = true
	case src.Pkg == "" && src.Bin == "" && len(c.Arms) > 0:
		s, err := builds.SampleSource()
		if err != nil {
			return out, err
		}
		src, sample = s, true
	}
	tmplArgs := c.Args
	if tmplArgs == nil && sample {
		tmplArgs = c.SampleArgs
		switch {
		case tmplArgs != nil:
		case c.Transport == Unix:
			tmplArgs = []string{"--unix", "{socket}"}
		default:
			tmplArgs = []string{"--addr", "{addr}"}
		}
	}
	tmpl, err := prober.ParseTemplate(tmplArgs)
	if err != nil {
		return out, err
	}
	envTmpl, err := prober.ParseTemplate(c.Env)
	if err != nil {
		return out, fmt.Errorf("server environment: %w", err)
	}
	if c.Transport == TCP && tmpl.UsesSocket() {
		return out, errors.New("server arguments use {socket}: add --transport unix")
	}
	if c.Transport == Unix && (tmpl.Uses("addr") || tmpl.Uses("port")) {
		return out, errors.New("server arguments use {addr}/{port} but --transport is unix: use {socket}")
	}
	arts, errs := builds.BuildAll(ctx, src, c.Arms, c.Build)
	names := append([]string(nil), c.Arms...)
	for _, b := range c.Binaries {
		// A binary as it is: the default arm of it, named as the user says.
		a, err := builds.BuildAs(ctx, b.Name, b.Path, c.Build)
		names, arts, errs = append(names, b.Name), append(arts, a), append(errs, err)
	}
	for i, name := range names {
		if errs[i] != nil {
			out.Failed = append(out.Failed, fmt.Errorf("%s arm: %w", name, errs[i]))
			continue
		}
		a := arts[i]
		out.Artifacts = append(out.Artifacts, a)
		arm := Arm{Name: name, Path: a.Path, Dir: c.Dir, SizeBytes: a.SizeBytes, ArgTemplate: tmplArgs}
		if c.RunAs != nil {
			arm.Launcher = launch.AsUser{Stage: c.RunAs}
		}
		arm.Args = func(t prober.Target) ([]string, error) {
			v, err := tmpl.VarsFor(t)
			if err != nil {
				return nil, err
			}
			return tmpl.Expand(v)
		}
		if len(c.Env) > 0 {
			arm.EnvFor = func(t prober.Target) []string {
				env, _ := envTmpl.Expand(prober.VarsFor(t))
				return env
			}
		}
		if i < len(c.Arms) && name == builds.ImageArm { // not a binary the user named "image"
			c.runtimeArms(ctx, &out, arm, a)
			continue
		}
		out.Arms = append(out.Arms, arm)
	}
	c.imageArms(ctx, &out, tmpl, envTmpl)
	if len(out.Arms) == 0 {
		return out, fmt.Errorf("no arm built: %w", out.Err())
	}
	if len(c.Start) > 0 {
		sc := c.StartConfig
		if sc.Transport == "" {
			sc.Transport = c.Transport
		}
		if err := AddStartArms(ctx, &out, c.Start, sc); err != nil {
			return out, err
		}
	}
	return out, AddVariants(&out, c.Variants)
}

// RuntimeArm names the image arm started by runtime rt, the k-th of
// ArmsConfig.Runtimes.
func RuntimeArm(k int, rt string) string {
	if k == 0 {
		return builds.ImageArm
	}
	return builds.ImageArm + "-" + rt
}

// runtimeArms adds the image arm arm (artifact a) once per runtime; a
// runtime that is missing fails its arm alone.
func (c ArmsConfig) runtimeArms(ctx context.Context, out *Built, arm Arm, a builds.Artifact) {
	rts := c.Runtimes
	if len(rts) == 0 {
		rts = []string{"runc"}
	}
	for k, rt := range rts {
		ra := arm
		ra.Name = RuntimeArm(k, rt)
		l, path, err := c.imageLauncher(ctx, out, a, rt)
		if err != nil {
			out.Failed = append(out.Failed, fmt.Errorf("%s arm: %w", ra.Name, err))
			continue
		}
		ra.Launcher, ra.Path = l, path
		out.Arms = append(out.Arms, ra)
	}
}

// imageLauncher picks what starts the image arm under runtime rt: runc or
// crun on the OCI layout, or a docker/podman engine on the image tarball,
// checked before use.
func (c ArmsConfig) imageLauncher(ctx context.Context, out *Built, a builds.Artifact, rt string) (launch.Launcher, string, error) {
	switch rt {
	case "", "runc", "crun":
	default:
		e, err := launch.NewEngine(rt)
		if err != nil {
			return nil, "", err
		}
		if err := e.Check(ctx); err != nil {
			return nil, "", err
		}
		return e, a.Path, nil
	}
	r := c.runcFor(out, rt)
	if err := r.Check(); err != nil {
		return nil, "", err
	}
	return r, a.Image, nil
}

// runcFor is the launcher of runtime rt, runc or crun: c.Runc for runc
// when set, else a new one closed with out (a crun one takes c.Runc's
// work directory and pivot setting).
func (c ArmsConfig) runcFor(out *Built, rt string) *launch.Runc {
	if rt != "crun" && c.Runc != nil {
		return c.Runc
	}
	r := &launch.Runc{}
	if rt == "crun" {
		r.Binary = "crun"
		if c.Runc != nil {
			r.WorkDir, r.NoPivot = c.Runc.WorkDir, c.Runc.NoPivot
		}
	}
	out.closers = append(out.closers, r.Close)
	return r
}

// ArmNames lists arms for messages: "default, upx".
func ArmNames(as []Arm) string {
	n := make([]string, len(as))
	for i, a := range as {
		n[i] = a.Name
	}
	return strings.Join(n, ", ")
}
