package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/coldstart-go/coldstart/builds"
	"github.com/coldstart-go/coldstart/cmd/internal/cliopts"
	"github.com/coldstart-go/coldstart/internal/provenance"
	"github.com/coldstart-go/coldstart/internal/render"
	"github.com/coldstart-go/coldstart/internal/runas"
	"github.com/coldstart-go/coldstart/launch"
)

// buildOptions are `coldstart build`'s flags.
type buildOptions struct {
	stderr      io.Writer // the command's error writer: progress and logs
	Pkg         string    // "" = the bundled sample server
	ModuleDir   string    // -C: where Pkg is built ("" = here)
	Bin         cliopts.Bins
	armsGiven   bool
	Arms        builds.ArmList
	UPXLevel    builds.UPXLevel
	PGOProfile  string
	PGODuration time.Duration
	// PGOLoad, ServerArgs (after --) and Env are how the pgo profile's
	// server is started and loaded.
	PGOLoad    cliopts.PGOLoad
	ServerArgs []string
	Env        []string
	Instrument bool
	Push       string
	ImageBase  string
	CacheDir   string
	OutDir     string
	NoCache    bool
	Output     render.Format
	Verbose    bool
	Quiet      bool
}

func newBuildCmd(run func(context.Context, *buildOptions, io.Writer) error) *cobra.Command {
	o := &buildOptions{
		Arms:        builds.ArmList(builds.DefaultArms),
		UPXLevel:    builds.UPXDefault,
		PGODuration: 10 * time.Second,
		Output:      render.Table,
	}
	cmd := &cobra.Command{
		Use:   "build [flags] [PKG] [-- SERVER-ARGS...]",
		Short: "Build a Go main package as each arm (default, static, upx; pgo, image) and print size and build time",
		Long: `build turns one Go main package (default: the bundled sample server ./examples/echo)
into each arm and prints one row per arm. Builds are cached under
${XDG_CACHE_HOME:-~/.cache}/coldstart/builds by what determines them (the main
module's sources the package depends on, go.mod/go.sum, the arm's flags, the Go
toolchain, the PGO profile, the upx version): a second build with nothing
changed reuses the artifact and says so in the cached column.

Without --pgo-profile, the pgo arm collects a CPU profile: it runs the default
arm (built with the debug hook) under gRPC load from coldstart's own client for
--pgo-duration and keeps the profile and a note of how it was collected beside
the artifact. The server is started with SERVER-ARGS (the placeholders {addr},
{host}, {port}, {socket} filled) and --env, and loaded with Echo calls (health
checks when it has no Echo), your method (--pgo-call) or your command
(--pgo-load).`,
		Example: `  coldstart build
  coldstart build --arms default,upx --upx-level lzma ./cmd/myserver
  coldstart build --arms pgo --pgo-profile cpu.pprof -o json ./cmd/myserver
  coldstart build --arms pgo --pgo-call /shop.v1.Cart/Add --pgo-data '{"sku": "a"}' ./cmd/myserver -- --listen {addr}
  coldstart build --arms pgo --pgo-load 'ghz --insecure --call shop.v1.Cart.Add -z 1h {addr}' ./cmd/myserver -- --listen {addr}
  coldstart build --bin ./myserver --arms default,upx
  coldstart build --bin old=./server-v1 --bin new=./server-v2 --out-dir arms/`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.stderr = cmd.ErrOrStderr()
			var before []string
			o.Pkg, o.ServerArgs, before = cliopts.SplitArgs(cmd, args)
			if len(before) > 1 {
				return fmt.Errorf("want at most one PKG, got %q (server arguments go after --)", before)
			}
			o.armsGiven = cmd.Flags().Changed("arms")
			if err := o.validate(); err != nil {
				return err
			}
			return run(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.ModuleDir, "module-dir", "C", "", cliopts.ModuleDirHelp)
	f.Var(&o.Arms, "arms", "arms to build, comma-separated, or all (known: "+strings.Join(builds.Known(), ", ")+")")
	f.Var(&o.UPXLevel, "upx-level", "upx arm compression: default (seconds), best (minutes) or lzma (smallest, slowest to start)")
	f.StringVar(&o.PGOProfile, "pgo-profile", "", `CPU profile (pprof) for the pgo arm ("" = collect one under load)`)
	f.DurationVar(&o.PGODuration, "pgo-duration", o.PGODuration, "how long to profile the loaded default arm when collecting, whole seconds")
	o.PGOLoad.Bind(f)
	f.StringArrayVar(&o.Env, "env", nil, "extra environment for the server the pgo profile is collected from, K=V (repeatable; values may name the placeholders server arguments take)")
	f.BoolVar(&o.Instrument, "instrument", false, "compile in the debug hook: with $COLDSTART_DEBUG_ADDR set the server serves /debug/pprof/profile and /debug/runtime there")
	f.StringVar(&o.Push, "push", "", "image arm: push to this REGISTRY/REPO and print the REPO@sha256:... reference coldstart deploy takes (\"\" = no push)")
	f.StringVar(&o.ImageBase, "image-base", "", "image arm: base image, an OCI layout directory or an image tarball (\"\" = empty base)")
	f.Var(&o.Bin, "bin", "a prebuilt server binary instead of PKG: PATH (built as the arms that apply to a binary, default (as-is) and upx, or those --arms names) or ARM=PATH (repeatable; each taken as it is, as arm ARM)")
	f.StringVar(&o.CacheDir, "cache-dir", "", `build cache directory ("" = ${XDG_CACHE_HOME:-~/.cache}/coldstart/builds)`)
	f.StringVar(&o.OutDir, "out-dir", "", `copy each artifact here as <name>-<arm>, with its build record <name>-<arm>.json for run --prebuilt ("" = leave them in the cache)`)
	f.BoolVar(&o.NoCache, "no-cache", false, "build every arm afresh and do not record it")
	f.VarP(&o.Output, "output", "o", "output format: table, json, csv or markdown")
	f.BoolVarP(&o.Verbose, "verbose", "v", false, "print every command line run to stderr")
	f.BoolVarP(&o.Quiet, "quiet", "q", false, "no progress lines on stderr")
	cmd.MarkFlagsMutuallyExclusive("verbose", "quiet")
	cmd.SetFlagErrorFunc(cliopts.FlagError)
	return cmd
}

func (o *buildOptions) validate() error {
	arms, err := o.Bin.ArmsFor(o.Pkg, o.Arms, o.armsGiven)
	if err != nil {
		return err
	}
	if o.Arms, err = cliopts.WithPGOArm(arms, o.armsGiven, o.Bin.Given(), o.PGOProfile, o.PGOLoad); err != nil {
		return err
	}
	if o.ModuleDir, err = cliopts.ModuleDir(o.ModuleDir, o.Pkg, o.Bin.Given()); err != nil {
		return err
	}
	if o.PGODuration < time.Second {
		return fmt.Errorf("--pgo-duration: %v, want at least 1s", o.PGODuration)
	}
	if err := o.PGOLoad.Validate(o.PGOProfile); err != nil {
		return err
	}
	for _, e := range o.Env {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
			return fmt.Errorf("--env: %q, want K=V", provenance.RedactEnv(e))
		}
	}
	if err := o.PGOLoad.Config(nil, o.ServerArgs, o.Env).Check(); err != nil {
		return cliopts.PGOFlagError(err)
	}
	if len(o.Arms) == 0 && len(o.Bin.Named) == 0 {
		return fmt.Errorf("--arms: no arms named (known: %s)", strings.Join(builds.Known(), ", "))
	}
	return nil
}

// buildRow is one arm in `coldstart build`'s table; JSON output is the full
// builds.Artifact (path, sha256, commands, ...).
type buildRow struct {
	Arm          string  `json:"arm"`
	SizeBytes    int64   `json:"size_bytes"`
	BuildMs      float64 `json:"build_ms" render:"%.0f"`
	Flags        string  `json:"flags"`
	Cached       bool    `json:"cached"`
	Instrumented bool    `json:"instrumented"`
}

func runBuild(ctx context.Context, o *buildOptions, w io.Writer) error {
	var src builds.Source
	switch {
	case o.Bin.Path != "":
		src = builds.Source{Bin: o.Bin.Path}
	case len(o.Bin.Named) > 0:
		// No source to build: each binary is taken as it is, below.
	case o.Pkg != "":
		src = builds.Source{Pkg: o.Pkg, Dir: o.ModuleDir}
	default:
		s, err := builds.SampleSource()
		if err != nil {
			return err
		}
		src = s
	}
	// A pgo profile is collected by running the server: as the unprivileged
	// user coldstart run would use (65532 when root).
	user, uerr := runas.Parse("")
	if uerr != nil {
		return uerr
	}
	stage := runas.NewStage(user)
	defer stage.Close()
	pc := o.PGOLoad.Config(launch.AsUser{Stage: stage}, o.ServerArgs, o.Env)
	bo := builds.Options{
		CacheDir:       o.CacheDir,
		NoCache:        o.NoCache,
		OutDir:         o.OutDir,
		UPXLevel:       o.UPXLevel,
		PGOProfile:     o.PGOProfile,
		PGODuration:    o.PGODuration,
		CollectProfile: pc.Collector(),
		ProfileLoad:    pc.Load(),
		Instrument:     o.Instrument,
		Verbose:        o.Verbose,
	}
	if !o.Quiet {
		bo.Progress = o.stderr
	}
	var iopts []builds.ImageOption
	if o.Push != "" {
		iopts = append(iopts, builds.WithPush(o.Push))
	}
	if o.ImageBase != "" {
		iopts = append(iopts, builds.WithBase(o.ImageBase))
	}
	builds.SetImageOptions(iopts...)
	arts, errs := builds.BuildAll(ctx, src, o.Arms, bo)
	for _, b := range o.Bin.Named {
		a, err := builds.BuildAs(ctx, b.Name, b.Path, bo)
		arts, errs = append(arts, a), append(errs, err)
	}
	for i, err := range errs {
		errs[i] = cliopts.PGOFlagError(err)
	}
	built, rows := buildRows(arts, errs)
	var err error
	if o.Output == render.JSON {
		if built == nil {
			built = []builds.Artifact{}
		}
		err = render.Write(w, o.Output, built)
	} else if len(rows) > 0 {
		err = render.Write(w, o.Output, rows)
	}
	return errors.Join(append([]error{err}, dedupe(errs)...)...)
}

// buildRows keeps the artifacts that built and makes their table rows: a
// PGO profile is shown by its file name (the path is in -o json), marked
// when coldstart collected it.
func buildRows(arts []builds.Artifact, errs []error) ([]builds.Artifact, []buildRow) {
	var built []builds.Artifact
	var rows []buildRow
	for i, a := range arts {
		if errs[i] != nil {
			continue
		}
		built = append(built, a)
		flags := a.Flags
		if p, ok := strings.CutPrefix(flags, "-pgo="); ok {
			flags = "-pgo=" + filepath.Base(p)
			if a.ProfileNote != "" {
				flags += " (collected)"
			}
		}
		rows = append(rows, buildRow{Arm: a.Arm, SizeBytes: a.SizeBytes, BuildMs: a.BuildMs, Flags: flags, Cached: a.Cached, Instrumented: a.Instrumented})
	}
	return built, rows
}

// dedupe drops repeats of the same error (a package that does not list
// fails every arm alike).
func dedupe(errs []error) []error {
	seen := map[string]bool{}
	var out []error
	for _, e := range errs {
		if e == nil || seen[e.Error()] {
			continue
		}
		seen[e.Error()] = true
		out = append(out, e)
	}
	return out
}
