package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/coldstart-go/coldstart/builds"
	"github.com/coldstart-go/coldstart/campaign"
	"github.com/coldstart-go/coldstart/cmd/internal/cliopts"
	"github.com/coldstart-go/coldstart/explain"
	"github.com/coldstart-go/coldstart/explain/inittrace"
	"github.com/coldstart-go/coldstart/internal/render"
	"github.com/coldstart-go/coldstart/prober"
	"github.com/coldstart-go/coldstart/record"
)

// explainOptions are coldstart explain's flags.
type explainOptions struct {
	serverOptions
	Runs      int
	Transport string
	Timeout   time.Duration
	Top       int
	Wide      bool
}

func newExplainCmd(run func(context.Context, *explainOptions, io.Writer) error) *cobra.Command {
	o := &explainOptions{serverOptions: newServerOptions([]string{"default", "static", "upx"}), Runs: 10, Transport: "tcp", Timeout: 30 * time.Second, Top: 10}
	cmd := &cobra.Command{
		Use:   "explain [flags] [PKG | --bin PATH] [-- SERVER ARGS...]",
		Short: "Say where each arm's start-up time goes: per-package init, runtime, main until listening",
		Long: `explain starts each arm --runs times (arms interleaved after one uncounted warm-up round,
as run does) with GODEBUG=inittrace=1 added to the server's environment, and reads the Go
runtime's init trace from its stderr as it is written. These runs are kept apart from run's
timed ones: tracing costs a little time.

It prints, per arm: the start split into phases, medians from t0 (just before fork):
exec → runtime ready (runtime.main began; estimated from when the init lines arrived) →
inits done → accepting (the listener takes connections) → first ready RPC. The slice
between inits done and accepting is "main until listen": the part of start-up that is
not package init. Then the packages ranked by median init wall time (95% confidence
interval; the runtime prints times truncated, at the resolution shown), with heap bytes
and allocations, each mapped to its module from the binary's build info (for a UPX-packed
binary, its unpacked twin's), the modules' sums, and each arm against the baseline
(--baseline) with the Mann-Whitney U-test; each phase row ends with its first RPC's ratio
to the baseline's, interval and verdict. A binary without build info, a server whose own
environment replaces GODEBUG, or one that exits: the output says what it could not
attribute and why, and keeps the rest. Raw traces go to results/<YYYYMMDD-HHMMSS>_explain.jsonl.`,
		Example: `  coldstart explain --arms default,static -n 10
  coldstart explain --bin ./myserver --arms default,upx -- --listen={addr}
  coldstart explain ./cmd/api -o markdown --top 5`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.SetArgs(cmd, args)
			if err := o.validate(); err != nil {
				return err
			}
			return run(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	o.serverOptions.bind(cmd)
	f.IntVarP(&o.Runs, "runs", "n", o.Runs, "counted traced starts per arm and budget (after one warm-up round)")
	f.StringVar(&o.Transport, "transport", o.Transport, "where servers listen: tcp (a free loopback port) or unix (a socket)")
	timeoutVar(f, &o.Timeout, "start-timeout", "give up on one start after this long")
	f.IntVar(&o.Top, "top", o.Top, "packages (and modules) listed per arm")
	f.BoolVar(&o.Wide, "wide", false, "print every column of every table (intervals per package, bytes, allocations, every comparison), as -o csv has them")
	return cmd
}

func (o *explainOptions) validate() error {
	if err := o.serverOptions.validate(); err != nil {
		return err
	}
	for _, a := range o.Arms.Names {
		if a == builds.ImageArm {
			return errors.New("--arms: image: explain reads the init trace from the server's stderr as it is written, which a container runtime keeps to itself; explain the static arm (the image's binary) instead")
		}
	}
	if o.Runs < 1 {
		return fmt.Errorf("--runs: %d, want at least 1", o.Runs)
	}
	if o.Transport != "tcp" && o.Transport != "unix" {
		return fmt.Errorf("--transport: %q, want tcp or unix", o.Transport)
	}
	if o.Timeout <= 0 {
		return fmt.Errorf("--start-timeout: %v, want a positive duration", o.Timeout)
	}
	if o.Top < 1 {
		return fmt.Errorf("--top: %d, want at least 1", o.Top)
	}
	if _, err := o.fixedAddr(); err != nil {
		return err
	}
	return nil
}

// runExplain builds the arms, traces their starts and prints the analysis.
func runExplain(ctx context.Context, o *explainOptions, w io.Writer) error {
	checker, rf, built, err := o.begin(ctx, "explain", o.Transport)
	defer built.Close()
	if err != nil {
		return err
	}
	mods := map[string]record.Modules{}
	variants := map[string]record.Variant{}
	var names []string
	for _, a := range built.Arms {
		names = append(names, a.Name)
		if a.Variant.IsVariant() {
			variants[a.Name] = a.Variant
		}
		m, err := explain.ReadModules(ctx, a.Path)
		if err != nil && !errors.Is(err, explain.ErrNoBuildInfo) {
			o.Notef("%s arm: %v", a.Name, err)
		}
		mods[a.Name] = m
		if err := rf.Add("explain_modules", struct {
			Arm string `json:"arm"`
			record.Modules
		}{a.Name, m}); err != nil {
			return err
		}
	}
	addr, _ := o.fixedAddr()
	c := campaign.ColdStart{
		Arms: built.Arms, Addr: addr, Budgets: o.Budgets.Budgets, Runs: o.Runs, Transport: campaign.Transport(o.Transport),
		Checker: checker, Wait: prober.WaitOptions{Timeout: o.Timeout}, Progress: o.Progress(), Log: o.Log(),
	}
	traces, _, cerr := inittrace.Campaign(ctx, c, func(t record.Trace) error { return rf.Add("trace", t) })
	if cerr != nil {
		cerr = fmt.Errorf("explain: %w", cerr)
	}
	show := func(w io.Writer) error {
		if ctx.Err() != nil {
			return nil // interrupted: what was traced is in the results file
		}
		r := explain.Analyze(traces, explain.Options{Top: o.Top, Arms: names, Baseline: o.Baseline, Modules: mods, Variants: variants})
		write := writeExplain
		if o.Output == render.Table && !o.Wide {
			write = func(w io.Writer, _ render.Format, r explain.Report) error { return writeExplainText(w, r) }
		}
		if err := write(w, o.Output, r); err != nil {
			return err
		}
		for _, n := range r.Notes {
			o.Notef("explain: %s", firstLine(n))
		}
		return nil
	}
	return rf.End(w, show, cerr, built)
}

// writeExplain prints the report with every field: JSON as one object,
// the other formats (--wide for a table) as titled tables (phases,
// packages, modules, comparisons) and the notes. In a table each phase
// row's first RPC against the baseline's is one "first_rpc vs BASE"
// column.
func writeExplain(w io.Writer, f render.Format, r explain.Report) error {
	if f == render.JSON {
		if r.Notes == nil {
			r.Notes = []string{}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	base := phaseBaseline(r.Phases)
	vs := cliopts.VsColumn{Header: "first_rpc " + cliopts.VsHeader(base), Fields: cliopts.VsFields, Cell: func(i int) string {
		return phaseVs(r.Phases[i], base)
	}}
	sections := []struct {
		title string
		rows  any
		n     int
		cols  []cliopts.VsColumn
	}{
		{"phases (ms; each slice the median of its length per run)", r.Phases, len(r.Phases), []cliopts.VsColumn{vs}},
		{"packages by median init time", r.Packages, len(r.Packages), nil},
		{"modules (sum of their packages' inits)", r.Modules, len(r.Modules), nil},
		{fmt.Sprintf("arms against %s (Mann-Whitney U, alpha %g; p not corrected for the number of rows)", baseArm(r), explain.Alpha), r.Compare, len(r.Compare), nil},
	}
	for i, s := range sections {
		if s.n == 0 {
			continue
		}
		if i > 0 {
			fmt.Fprintln(w)
		}
		switch f {
		case render.Markdown:
			fmt.Fprintf(w, "**%s**\n\n", s.title)
		default:
			fmt.Fprintf(w, "# %s\n", s.title)
		}
		if err := cliopts.WriteVs(w, f, s.rows, s.cols...); err != nil {
			return err
		}
	}
	if len(r.Notes) > 0 {
		fmt.Fprintln(w)
		if f == render.Markdown {
			fmt.Fprint(w, "**notes**\n\n")
		} else {
			fmt.Fprintln(w, "# notes")
		}
		for _, n := range r.Notes {
			if f == render.Markdown {
				fmt.Fprintf(w, "- %s\n", strings.ReplaceAll(n, "\n", " "))
			} else {
				fmt.Fprintf(w, "# - %s\n", strings.ReplaceAll(n, "\n", "\n#   "))
			}
		}
	}
	return nil
}

func baseArm(r explain.Report) string {
	if len(r.Compare) > 0 {
		return r.Compare[0].Base
	}
	return "the first arm"
}

// phaseBaseline is the arm the phase rows were compared against ("" when
// none was), variants' own arms aside.
func phaseBaseline(rows []explain.PhaseRow) string {
	for _, p := range rows {
		if p.Baseline != "" && !p.Variant.IsVariant() {
			return p.Baseline
		}
	}
	return ""
}

// phaseVs is a phase row's first RPC against the baseline's (base, the
// column's; a variant's against its own arm's, named), saying how many
// runs there were where there is no interval.
func phaseVs(p explain.PhaseRow, base string) string {
	return cliopts.VsTextIn(p.VsBaseline, base, fmt.Sprintf("(no CI: %d runs)", p.Runs))
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
