package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/coldstart-go/coldstart/cmd/internal/cliopts"
	"github.com/coldstart-go/coldstart/gate"
	"github.com/coldstart-go/coldstart/internal/stats"
)

// coldstart gate's exit codes beside 0 (pass) and 1 (an error: bad flags,
// unreadable files, a build or campaign that failed).
const (
	gateExitIncomparable = 2 // the sides cannot be compared
	gateExitRegression   = 3 // a watched figure regressed
	gateExitInconclusive = 4 // a side ran on a busy host
)

// gateOptions are coldstart gate's flags.
type gateOptions struct {
	// serverOptions, Runs, Transport and Timeout are --base's campaign,
	// as coldstart run's.
	serverOptions
	Runs int
	// AutoRuns (--runs auto): rounds until every median is known within
	// Precision, at most MaxRuns, as coldstart run's; Runs is then 0.
	AutoRuns  bool
	Precision float64
	MaxRuns   int
	Transport string
	Timeout   time.Duration
	// Base is --base REV ("" = compare results files).
	Base string
	// Paths are the results files or directories compared (no --base).
	Paths         []string
	MaxRegression float64
	Confidence    float64
	AllowBusy     bool
	// Format is markdown or benchstat.
	Format string
	// campaignFlags are the flags that only --base uses, as given.
	campaignFlags []string
	stderr        io.Writer
}

// gateSkipFlags are the measuring flags gate --base does not take: it
// builds PKG itself at REV and in the working tree (so no --bin,
// --prebuilt, --image, start arms or engines), compares base with new
// (no --baseline), and has its own -o.
var gateSkipFlags = []string{"output", "baseline", "variant", "sweep", "bin", "prebuilt", "image", "start-from", "snapshot-warmup", "runtime", "pgo-duration"}

// gateArms are the arms gate --base builds each tree as: those that make
// a binary to start. pgo takes --pgo-profile, one profile for both trees.
var gateArms = []string{"default", "static", "upx", "pgo"}

func newGateCmd(run func(context.Context, *gateOptions, io.Writer) error) *cobra.Command {
	o := &gateOptions{serverOptions: newServerOptions([]string{"default"}), AutoRuns: true, Precision: stats.DefaultPrecision, MaxRuns: 60,
		Transport: "tcp", Timeout: 30 * time.Second,
		MaxRegression: gate.DefaultMaxRegression, Confidence: stats.DefaultConfidence, Format: "markdown"}
	cmd := &cobra.Command{
		Use:   "gate [flags] BASE NEW | PAIRED | --base REV [PKG] [-- SERVER ARGS...]",
		Short: "Fail a CI job when a change made starts worse: exit 3 on a significant regression beyond --max-regression",
		Long: `gate sets a new build's results against a base's and exits 3 when a watched figure got
worse by more than --max-regression with significance. Per arm and budget it watches
what the results carry: spawn → first RPC (median and p90), the server's startup CPU and
PSS at first RPC, binary size, each recorded phase (accepting, first_answer, a launcher's
own), idle PSS from coldstart density, and the phases coldstart explain adds
(runtime_ready, inits_done). Figures the files do not carry are named as not compared.

  gate BASE NEW       two results files or directories measured apart (say, main's saved
                      results and this change's): unpaired, Mann–Whitney with the
                      Hodges–Lehmann ratio and its interval.
  gate PAIRED         one campaign whose arms base[.ARM] and new[.ARM] ran interleaved
                      (gate --base writes one; so does run --bin base=OLD --bin new=NEW):
                      paired by round, Wilcoxon signed-rank on the per-round ratios.
  gate --base REV     builds PKG (default: the sample server) at git REV, in a temporary
                      worktree removed afterwards, and in the working tree, with the same
                      flags, then runs both in one campaign, interleaved and taking turns
                      going first, and gates it paired; the campaign takes run's flags
                      and writes its results file.

The p90 is compared by bootstrap, size exactly; the p-values of all tested rows are
adjusted together (Holm), so a build set against itself fails at most 1 − --confidence of
the time however many figures are watched. Every counted start must be a real cold
start: no phase before t0, no answer before its process started, no PID another start of
the file had; the others are refused and counted in the output.

Output (stdout) is Markdown for a CI job summary: one table (arm, budget, figure, base,
new, ratio [interval], p, verdict), then a one-line verdict; -o benchstat writes the
compared starts in the Go benchmark format instead (benchstat -col side FILE), the rows
as comments.

Exit status:
  0  pass: no watched figure worse by more than --max-regression with significance
  1  error: bad flags, unreadable files, a build or campaign that failed
  2  the sides cannot be compared: another schema, machine class (CPU model, cores,
     memory, kernel, cgroup mode), coldstart version, probe, transport, page cache,
     prober CPUs, arms, budgets or record kinds, or too few counted starts; stderr
     names what differs
  3  regression: a watched figure got worse by more than --max-regression, significantly
  4  inconclusive: a file's noise records say most of its rounds ran on a busy host;
     rerun on a quiet host, or pass --allow-busy`,
		Example: `  coldstart gate base-results/ new-results/ >> "$GITHUB_STEP_SUMMARY"
  coldstart gate --max-regression 0.1 -o benchstat main.jsonl change.jsonl > gate.txt
  coldstart gate --base origin/main --arms default,static ./cmd/server
  coldstart run --bin base=./old --bin new=./new && coldstart gate results/*_coldstart.jsonl`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.stderr = cmd.ErrOrStderr()
			cmd.Flags().Visit(func(f *pflag.Flag) {
				if isCampaignFlag(cmd, f.Name) {
					o.campaignFlags = append(o.campaignFlags, f.Name)
				}
			})
			if o.Base != "" {
				o.SetArgs(cmd, args)
			} else {
				if cmd.ArgsLenAtDash() >= 0 {
					return fmt.Errorf("server arguments after --: only with --base REV, which starts the servers")
				}
				o.Paths = args
			}
			if err := o.validate(); err != nil {
				return err
			}
			return run(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.Float64Var(&o.MaxRegression, "max-regression", o.MaxRegression, "how much worse a figure may get, significantly, and pass: a fraction of base (0.05 = 5%); at least 0")
	f.BoolVar(&o.AllowBusy, "allow-busy", false, "judge results whose noise records say the host was busy for most of their rounds, instead of exiting 4 (inconclusive)")
	f.Float64Var(&o.Confidence, "confidence", o.Confidence, "confidence level of the intervals; tests are significant at 1 − this after Holm's adjustment")
	f.StringVarP(&o.Format, "output", "o", o.Format, "output format: markdown (a table and a verdict, for a CI job summary) or benchstat")
	f.StringVar(&o.Base, "base", "", "git revision to build PKG at as the base (a commit, branch or tag, e.g. origin/main), measured with the working tree in one campaign")
	// The campaign's flags, as coldstart run's, bound on a scratch command
	// first: gate has its own -o and takes no --bin.
	scratch := &cobra.Command{}
	o.serverOptions.bind(scratch)
	sf := scratch.Flags()
	sf.VarP(&cliopts.AutoCount{N: &o.Runs, Auto: &o.AutoRuns, Unit: "runs"}, "runs", "n",
		"--base: counted cold starts per side, arm and budget (after one warm-up round), or auto: rounds until every median's interval is within --precision, at most --max-runs")
	sf.Float64Var(&o.Precision, "precision", o.Precision, "--runs auto: stop once every median's interval reaches no farther than this fraction of the median on either side (0.03 = ±3%)")
	sf.IntVar(&o.MaxRuns, "max-runs", o.MaxRuns, "--runs auto: stop after this many counted rounds, however wide the intervals")
	sf.StringVar(&o.Transport, "transport", o.Transport, "--base: where servers listen: tcp (a free loopback port) or unix (a socket)")
	timeoutVar(sf, &o.Timeout, "start-timeout", "--base: give up on one cold start after this long")
	sf.VisitAll(func(fl *pflag.Flag) {
		if !slices.Contains(gateSkipFlags, fl.Name) {
			if !strings.HasPrefix(fl.Usage, "--base: ") {
				fl.Usage = "--base: " + fl.Usage
			}
			if fl.Annotations == nil {
				fl.Annotations = map[string][]string{}
			}
			fl.Annotations[campaignFlagAnnotation] = []string{"true"}
			f.AddFlag(fl)
		}
	})
	if fl := f.Lookup("arms"); fl != nil {
		fl.Usage = "--base: arms to build each tree as and measure, comma-separated: " + strings.Join(gateArms, ", ") + " (pgo with --pgo-profile)"
	}
	if fl := f.Lookup("pgo-profile"); fl != nil {
		fl.Usage = "--base: CPU profile (pprof) both trees' pgo arm is built with (needed for --arms pgo: a profile collected from each tree would differ too)"
	}
	if fl := f.Lookup("setup"); fl != nil {
		fl.Usage = strings.Replace(fl.Usage, "before the campaign (before the arms are built: a pgo profile or a snapshot already needs what it starts)", "before the campaign (after both trees are built)", 1)
	}
	cmd.SetFlagErrorFunc(cliopts.FlagError)
	return cmd
}

// campaignFlagAnnotation marks the flags only --base uses.
const campaignFlagAnnotation = "coldstart_gate_campaign"

func isCampaignFlag(cmd *cobra.Command, name string) bool {
	f := cmd.Flags().Lookup(name)
	return f != nil && f.Annotations[campaignFlagAnnotation] != nil
}

func (o *gateOptions) validate() error {
	if !(o.MaxRegression >= 0) || math.IsInf(o.MaxRegression, 0) {
		return fmt.Errorf("--max-regression: %v, want a fraction of base of 0 or more (0.05 = 5%%)", o.MaxRegression)
	}
	if err := stats.CheckConfidence(o.Confidence); err != nil {
		return fmt.Errorf("--confidence: %w", err)
	}
	if o.Format != "markdown" && o.Format != "benchstat" {
		return fmt.Errorf("--output: unknown format %q (known: markdown, benchstat)", o.Format)
	}
	if o.Base == "" {
		if len(o.campaignFlags) > 0 {
			return fmt.Errorf("--%s: only with --base REV, which measures; BASE NEW compares results already measured", o.campaignFlags[0])
		}
		if len(o.Paths) < 1 || len(o.Paths) > 2 {
			return fmt.Errorf("want BASE NEW (two results files or directories), one PAIRED campaign, or --base REV; got %d arguments", len(o.Paths))
		}
		return nil
	}
	if err := o.serverOptions.validate(); err != nil {
		return err
	}
	for _, a := range o.Arms.Names {
		if !slices.Contains(gateArms, a) {
			return fmt.Errorf("--arms: %s: gate --base builds each tree as %s; image and start arms are not gated", a, strings.Join(gateArms, ", "))
		}
		if a == "pgo" && o.PGOProfile == "" {
			return fmt.Errorf("--arms: pgo: give --pgo-profile, one profile both trees are built with")
		}
	}
	need := stats.MinRunsForInterval(o.Confidence)
	switch {
	case !o.AutoRuns && o.Runs < need:
		return fmt.Errorf("--runs: %d, want at least %d: fewer pairs cannot reach %v%% confidence", o.Runs, need, 100*o.Confidence)
	case stats.CheckPrecision(o.Precision) != nil:
		return fmt.Errorf("--precision: %w", stats.CheckPrecision(o.Precision))
	case o.AutoRuns && o.MaxRuns < gate.MinAutoRounds(o.Confidence):
		return fmt.Errorf("--max-runs: %d, want at least %d: fewer pairs cannot reach %v%% confidence over the gate's %d figures",
			o.MaxRuns, gate.MinAutoRounds(o.Confidence), 100*o.Confidence, gate.BaseFigures)
	}
	if o.Transport != "tcp" && o.Transport != "unix" {
		return fmt.Errorf("--transport: %q, want tcp or unix", o.Transport)
	}
	if o.Timeout <= 0 {
		return fmt.Errorf("--start-timeout: %v, want a positive duration", o.Timeout)
	}
	if _, err := o.fixedAddr(); err != nil {
		return err
	}
	return nil
}

// gateError ends coldstart with code: main prints err and exits with it.
type gateError struct {
	code int
	err  error
}

func (e *gateError) Error() string { return e.err.Error() }
func (e *gateError) Unwrap() error { return e.err }

// ExitCode is the status coldstart exits with.
func (e *gateError) ExitCode() int { return e.code }

func (o *gateOptions) gateOptions() gate.Options {
	return gate.Options{MaxRegression: o.MaxRegression, Confidence: o.Confidence, AllowBusy: o.AllowBusy}
}

func runGate(ctx context.Context, o *gateOptions, w io.Writer) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var res *gate.Result
	var err error
	switch {
	case o.Base != "":
		res, err = runGateBase(ctx, o)
	case len(o.Paths) == 2:
		res, err = o.compareFiles()
	default:
		var in *gate.Input
		if in, err = o.load(o.Paths[0]); err == nil {
			res, err = gate.ComparePaired(in, o.gateOptions())
		}
	}
	var inc *gate.IncomparableError
	if errors.As(err, &inc) {
		return &gateError{gateExitIncomparable, fmt.Errorf("gate: %w", err)}
	}
	if err != nil {
		return err
	}
	if o.Format == "benchstat" {
		err = res.Benchstat(w)
	} else {
		err = res.Markdown(w)
	}
	if err != nil {
		return err
	}
	switch res.Outcome() {
	case gate.Fail:
		return &gateError{gateExitRegression, fmt.Errorf("gate: %s", res.Summary())}
	case gate.Inconclusive:
		return &gateError{gateExitInconclusive, fmt.Errorf("gate: %s", res.Summary())}
	}
	return nil
}

// compareFiles is gate BASE NEW.
func (o *gateOptions) compareFiles() (*gate.Result, error) {
	base, err := o.load(o.Paths[0])
	if err != nil {
		return nil, err
	}
	nw, err := o.load(o.Paths[1])
	if err != nil {
		return nil, err
	}
	return gate.Compare(base, nw, o.gateOptions())
}

// load reads one side, saying on stderr which lines it could not use
// (files of another schema are for Compare to name).
func (o *gateOptions) load(path string) (*gate.Input, error) {
	in, err := gate.Load(path)
	if err != nil {
		return nil, err
	}
	for _, w := range in.Warnings {
		if w.Schema == "" {
			fmt.Fprintf(o.stderr, "coldstart gate: %s\n", w)
		}
	}
	return in, nil
}
