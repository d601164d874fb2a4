// Package cliopts holds the flags coldstart's measuring commands (run,
// density, explain) and steady run share, each with one meaning and typed,
// parsed once: what to measure (PKG, --bin, --arms, --upx-level, --pgo-*
// with the pgo profile's load, --instrument), how the servers start (server arguments after --, --env,
// --run-as; variants of the arms, --variant and --sweep), what runs around the campaign (--setup, --prepare,
// --cleanup, --hook-timeout), under what (--budget), what is printed (-q,
// -v, -o) and where results go (--results-dir); and the one path both
// commands take to build the arms (BuildArms) and to write results
// (Results).
package cliopts

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/coldstart-go/coldstart/budget"
	"github.com/coldstart-go/coldstart/builds"
	"github.com/coldstart-go/coldstart/campaign"
	"github.com/coldstart-go/coldstart/internal/progress"
	"github.com/coldstart-go/coldstart/internal/provenance"
	"github.com/coldstart-go/coldstart/internal/render"
	"github.com/coldstart-go/coldstart/internal/runas"
	"github.com/coldstart-go/coldstart/prober"
)

// Common are the shared flags, as parsed. Build one with New, bind it to
// a command with Bind, and call SetArgs and Validate first in RunE.
type Common struct {
	// Pkg is the server's main package ("" = the bundled sample server).
	Pkg string
	// ModuleDir is -C: where Pkg is resolved and built ("" = the current
	// directory); Validate makes it absolute.
	ModuleDir string
	// ServerArgs are the server's arguments (after --), placeholders
	// unexpanded.
	ServerArgs  []string
	Bin         Bins
	Arms        Arms
	UPXLevel    builds.UPXLevel
	PGOProfile  string
	PGODuration time.Duration
	// PGOLoad is what loads the server while the pgo profile is
	// collected (--pgo-load, --pgo-call and its flags).
	PGOLoad    PGOLoad
	Instrument bool
	Env        []string
	// RunAs is --run-as as given ("" = 65532:65532 when root, else
	// ourselves); Validate parses it into User.
	RunAs   string
	User    runas.User
	Budgets budget.List
	// CgroupParent is --cgroup-parent: the cgroup the servers' budget
	// cgroups go under ("" = budget's default); Validate hands it to
	// budget.UseParent.
	CgroupParent string
	// Baseline is the arm the others are compared against ("" = default
	// where it is measured, else the first arm).
	Baseline    string
	Output      render.Format
	ResultsDir  string
	Verbose     bool
	Quiet       bool
	HashSecrets bool // read by provenance from the command line
	// HookFlags are --setup, --prepare, --cleanup and --hook-timeout;
	// BuildArms runs them, and fills {tmpdir} in ServerArgs and Env.
	HookFlags
	// Variants are --variant and --sweep; CheckArms resolves them into
	// variants, which BuildArms makes and CreateResults notes.
	Variants Variants
	variants []campaign.Variant

	tool       string    // "coldstart" or "steady": names notes and provenance
	positional []string  // arguments before --
	stderr     io.Writer // the command's error writer
	errw       io.Writer // stderr as Errw gives it (progress.Auto), made once
}

// New returns the shared flags of tool's commands with their defaults:
// arms measured when --arms is not given, and extra, the command's own
// arms beside the build arms (coldstart run's start arms), which --arms
// also accepts.
func New(tool string, arms []string, extra ...string) Common {
	return Common{
		tool:        tool,
		Arms:        Arms{Names: arms, extra: extra},
		UPXLevel:    builds.UPXDefault,
		PGODuration: 10 * time.Second,
		Budgets:     budget.List{Budgets: []budget.Budget{{}}},
		Output:      render.Table,
		ResultsDir:  "results",
		HookFlags:   HookFlags{HookTimeout: defaultHookTimeout},
	}
}

// Bind adds the shared flags to cmd, bound to c, with one help text each
// (armsHelp adds to --arms' own). It also makes pflag's `invalid argument
// "x" for "--flag" flag: why` read `--flag: why` for cmd.
func (c *Common) Bind(cmd *cobra.Command, armsHelp string) {
	f := cmd.Flags()
	arms := "arms to build and measure, comma-separated, or all (known: " + strings.Join(c.Arms.known(), ", ") + "); with --bin PATH the default is " + strings.Join(builds.BinaryArms, ",")
	if armsHelp != "" {
		arms += "; " + armsHelp
	}
	f.Var(&c.Arms, "arms", arms)
	f.StringVarP(&c.ModuleDir, "module-dir", "C", "", ModuleDirHelp)
	f.Var(&c.Bin, "bin", "a prebuilt server binary instead of PKG: PATH (measured as the arms that apply: default, as is, and upx, packed) or ARM=PATH (repeatable: each measured as is, as arm ARM; --arms does not apply)")
	f.Var(&c.UPXLevel, "upx-level", "upx arm compression: default (seconds), best (minutes) or lzma (smallest, slowest to start)")
	f.StringVar(&c.PGOProfile, "pgo-profile", "", "CPU profile (pprof) for the pgo arm (\"\" = collect one under load)")
	f.DurationVar(&c.PGODuration, "pgo-duration", c.PGODuration, "how long to load the default arm while collecting the pgo profile, whole seconds")
	c.PGOLoad.Bind(f)
	f.BoolVar(&c.Instrument, "instrument", false, "compile the debug hook into PKG's arms (runtime metrics and pprof on $COLDSTART_DEBUG_ADDR: allocation per call, GC cycles); changes the binary, and the results say so")
	f.StringArrayVar(&c.Env, "env", nil, "extra environment for the server, K=V (repeatable; values may name the placeholders server arguments take)")
	f.StringVar(&c.RunAs, "run-as", "", "user the servers run as: USER, UID[:GID] or root (\"\" = 65532:65532 when run as root, else yourself)")
	c.HookFlags.bind(f)
	f.Var(&c.Budgets, "budget", "CPU and memory budgets, ';'-separated or repeated: cpus=0, cpus=0-1, cores=0.5, mem=256Mi, cores=1,mem=512Mi, max (no limit)")
	f.StringVar(&c.CgroupParent, "cgroup-parent", "", "cgroup the servers' budget cgroups go under, from the hierarchy's root or as /sys/fs/cgroup/PATH: a cgroup v2 subtree delegated (chowned) to you, for cores= and mem= when not root (\"\" = /coldstart as root, else the subtree systemd delegates to you, when writable)")
	f.StringVar(&c.Baseline, "baseline", "", BaselineHelp)
	c.Variants.Bind(f)
	f.VarP(&c.Output, "output", "o", "output format: table, json, csv or markdown")
	f.StringVar(&c.ResultsDir, "results-dir", c.ResultsDir, "directory for the raw results file")
	f.BoolVarP(&c.Verbose, "verbose", "v", false, "also print every spawned command line to stderr, so a run can be replayed by hand")
	f.BoolVarP(&c.Quiet, "quiet", "q", false, "no progress lines on stderr (results, notes and errors still)")
	f.BoolVar(&c.HashSecrets, strings.TrimPrefix(provenance.HashSecretsFlag, "--"), false, "write a keyed hash beside each redacted secret, so runs with different values can be told apart")
	cmd.MarkFlagsMutuallyExclusive("verbose", "quiet")
	cmd.SetFlagErrorFunc(FlagError)
}

// FlagError turns pflag's `invalid argument "gcc" for "--arms" flag: ...`
// into `--arms: ...`: the value's own error already names the value.
func FlagError(_ *cobra.Command, err error) error {
	var iv *pflag.InvalidValueError
	if errors.As(err, &iv) && iv.GetFlag() != nil {
		return fmt.Errorf("--%s: %w", iv.GetFlag().Name, iv.Unwrap())
	}
	return err
}

// SetArgs takes the command's error writer and splits its positional
// arguments into PKG and the server's arguments after "--".
func (c *Common) SetArgs(cmd *cobra.Command, args []string) {
	c.stderr, c.errw = cmd.ErrOrStderr(), nil
	c.Pkg, c.ServerArgs, c.positional = SplitArgs(cmd, args)
}

// SplitArgs splits a command's positional arguments into PKG (the first
// before "--", "" when none), the server's arguments after "--", and all
// those before it (more than one is a usage error).
func SplitArgs(cmd *cobra.Command, args []string) (pkg string, serverArgs, before []string) {
	if n := cmd.ArgsLenAtDash(); n >= 0 {
		serverArgs = args[n:]
		args = args[:n]
	}
	if len(args) > 0 {
		pkg = args[0]
	}
	return pkg, serverArgs, args
}

// Validate checks the shared flags together and fills what depends on
// several: with --bin PATH and no --arms, the arms that apply to a binary.
func (c *Common) Validate() error {
	if len(c.positional) > 1 {
		return fmt.Errorf("want at most one PKG, got %q (server arguments go after --)", c.positional)
	}
	if err := c.Arms.check(); err != nil {
		return err
	}
	arms, err := c.Bin.ArmsFor(c.Pkg, c.Arms.Names, c.Arms.Given())
	if err != nil {
		return err
	}
	if c.Arms.Names, err = WithPGOArm(arms, c.Arms.Given(), c.Bin.Given(), c.PGOProfile, c.PGOLoad); err != nil {
		return err
	}
	if c.ModuleDir, err = ModuleDir(c.ModuleDir, c.Pkg, c.Bin.Given()); err != nil {
		return err
	}
	if c.PGODuration < time.Second {
		return fmt.Errorf("--pgo-duration: %v, want at least 1s", c.PGODuration)
	}
	if err := c.PGOLoad.Validate(c.PGOProfile); err != nil {
		return err
	}
	for _, e := range c.Env {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
			return fmt.Errorf("--env: %q, want K=V", provenance.RedactEnv(e))
		}
	}
	// BuildArms fills the placeholders; a wrong one is refused before.
	if _, err := prober.ParseTemplate(c.Env); err != nil {
		return fmt.Errorf("--env: %w", err)
	}
	u, err := runas.Parse(c.RunAs)
	if err != nil {
		return fmt.Errorf("--run-as: %w", err)
	}
	c.User = u
	if err := budget.UseParent(c.CgroupParent); err != nil {
		return fmt.Errorf("--cgroup-parent: %w", err)
	}
	return c.HookFlags.validate()
}

// CheckArms checks --variant, --sweep and --baseline against the arms to
// be measured (in order, variants aside): it resolves the variants
// (Variants.Resolve, which BuildArms then makes), and refuses a
// --baseline that names none of the arms (CheckBaseline).
func (c *Common) CheckArms(arms []string) error {
	vs, err := c.Variants.Resolve(arms, c.Baseline)
	if err != nil {
		return err
	}
	c.variants = vs
	return CheckBaseline(c.Baseline, arms)
}

// Resolved are the variants CheckArms resolved, in order.
func (c *Common) Resolved() []campaign.Variant { return c.variants }

// Sample reports whether the bundled sample server is measured: no PKG,
// no --bin.
func (c *Common) Sample() bool { return c.Pkg == "" && !c.Bin.Given() }

// Errw is where notes, progress and command lines go: the command's error
// writer (cmd.ErrOrStderr(), so tests can read it), stderr before SetArgs.
// On a terminal it is a progress.Terminal in front of that writer, the
// same one each call, so whatever is printed while a campaign's live bar
// is drawn (notes, -v command lines, build lines) goes above the bar
// rather than through it.
func (c *Common) Errw() io.Writer {
	if c.errw == nil {
		w := c.stderr
		if w == nil {
			w = os.Stderr
		}
		c.errw = progress.Auto(w)
	}
	return c.errw
}

// Progress is where progress goes: Errw, or nil under -q. Campaigns take
// it through progress.For: a live bar on a terminal, else a line a step.
func (c *Common) Progress() io.Writer {
	if c.Quiet {
		return nil
	}
	return c.Errw()
}

// Log is where spawned command lines go: Errw under -v, else nil.
func (c *Common) Log() io.Writer {
	if c.Verbose {
		return c.Errw()
	}
	return nil
}

// Notef writes one note ("coldstart: results in ...") to Errw, whatever
// -q says: notes are about the results, not progress.
func (c *Common) Notef(format string, args ...any) {
	fmt.Fprintf(c.Errw(), c.tool+": "+format+"\n", args...)
}

// Tool is the command's name: "coldstart" or "steady".
func (c *Common) Tool() string { return c.tool }
