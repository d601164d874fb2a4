package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/coldstart-go/coldstart/builds"
	"github.com/coldstart-go/coldstart/campaign"
	"github.com/coldstart-go/coldstart/cmd/internal/cliopts"
	"github.com/coldstart-go/coldstart/internal/progress"
	"github.com/coldstart-go/coldstart/internal/render"
	"github.com/coldstart-go/coldstart/internal/stats"
	"github.com/coldstart-go/coldstart/prober"
	"github.com/coldstart-go/coldstart/pull"
	"github.com/coldstart-go/coldstart/record"
	"github.com/coldstart-go/coldstart/report"
)

// pullOptions are coldstart pull's flags.
type pullOptions struct {
	stderr       io.Writer // the command's error writer: progress and logs
	Pkg          string
	ModuleDir    string // -C: where Pkg is built ("" = here)
	Bin          cliopts.Bins
	armsGiven    bool
	Arms         builds.ArmList
	UPXLevel     builds.UPXLevel
	Compression  string
	Bandwidth    string
	Layers       string
	Runs         int
	RegistryPort int
	Probe        string
	// TLS for the probes: --tls, or a grpcs://, https:// or h3:// probe,
	// with these files and names, as coldstart run takes them.
	TLS        cliopts.TLS
	Timeout    time.Duration
	ServerArgs []string
	Output     render.Format
	ResultsDir string
	Verbose    bool
	Quiet      bool
	// Baseline is the arm the others are compared against ("" = default
	// where it is measured, else the first arm).
	Baseline string

	extraPositional []string
}

func newPullCmd(run func(context.Context, *pullOptions, io.Writer) error) *cobra.Command {
	o := &pullOptions{
		Arms: builds.ArmList{"static", "upx"}, UPXLevel: builds.UPXDefault, Compression: "gzip,zstd", Bandwidth: "10Mbit,100Mbit,1Gbit,max",
		Layers: "single,split", Runs: 5, Probe: "health", Timeout: 30 * time.Second,
		Output: render.Table, ResultsDir: "results",
	}
	cmd := &cobra.Command{
		Use:   "pull [flags] [PKG] [-- SERVER ARGS...]",
		Short: "Time what an image costs a node before the server starts: pull at a capped bandwidth, unpack, first RPC",
		Long: `pull builds each arm of PKG (default: the bundled sample server), wraps each binary in
images (one per compression and layering), serves them from a registry it starts on
127.0.0.1 with the node's link capped by a token bucket on every response body, and at
each --bandwidth pulls each image into an empty node as a node does (manifest, config,
layers, digests verified), unpacks it, and starts the server from the unpacked tree: right
after the unpack, with its files evicted from the page cache, and warm. A second deploy (a
rebuilt binary) is pulled into the same node to show what split layers save. It prints
medians per image and bandwidth, each image against the --baseline arm's of the same
compression and layering (node to first RPC, or the image alone on deploy 2: the ratio,
its interval, the p-value and the verdict), then the break-even starts per pull for each
pair of images, and writes every pull to results/<YYYYMMDD-HHMMSS>_pull.jsonl as it goes.`,
		Example: `  coldstart pull
  coldstart pull --arms static,upx --bandwidth 10Mbit,100Mbit --compression zstd -n 5
  coldstart pull --bin ./myserver --arms static,upx --layers split -- --listen={addr}`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.stderr = progress.Auto(cmd.ErrOrStderr()) // a live bar on a terminal
			o.Pkg, o.ServerArgs, o.extraPositional = cliopts.SplitArgs(cmd, args)
			o.armsGiven = cmd.Flags().Changed("arms")
			if err := o.validate(); err != nil {
				return err
			}
			return run(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.ModuleDir, "module-dir", "C", "", cliopts.ModuleDirHelp)
	f.Var(&o.Arms, "arms", "binary arms to put in images, comma-separated (known: default, static, upx, pgo)")
	f.Var(&o.Bin, "bin", "a prebuilt server binary instead of PKG: PATH (as the arms that apply to a binary, default and upx, or those --arms names) or ARM=PATH (repeatable; each put in images as it is, as arm ARM)")
	f.Var(&o.UPXLevel, "upx-level", "upx arm compression: default (seconds), best (minutes) or lzma (smallest, slowest to start)")
	f.StringVar(&o.Compression, "compression", o.Compression, "layer compressions, comma-separated: gzip, zstd")
	f.StringVar(&o.Bandwidth, "bandwidth", o.Bandwidth, "node link speeds, comma-separated: a number and kbit, Mbit or Gbit (bits per second), or max (no cap)")
	f.StringVar(&o.Layers, "layers", o.Layers, "image layerings, comma-separated: single (base files and binary in one layer) or split (base layer + binary layer)")
	f.IntVarP(&o.Runs, "runs", "n", o.Runs, "pulls per image and bandwidth (at least 4 for a break-even to be significant)")
	f.IntVar(&o.RegistryPort, "registry-port", 0, "port of the local registry on 127.0.0.1 (0 = any free port)")
	f.StringVar(&o.Probe, "probe", o.Probe, "readiness probe: health, /pkg.Svc/Method, grpcs://127.0.0.1[/pkg.Svc/Method], http://127.0.0.1/path, https://127.0.0.1/path, h2c://127.0.0.1/path, h3://127.0.0.1/path (HTTP/3 over QUIC, UDP) or tcp")
	o.TLS.Bind(cmd, "probe over TLS: a new TLS client per probe, never resuming a session (grpcs://, https:// and h3:// probes imply it); the server's certificate and key are its own flags, after --",
		"the probe URL's host, else the address dialled")
	timeoutVar(f, &o.Timeout, "start-timeout", "give up on one start after this long")
	f.VarP(&o.Output, "output", "o", "output format: table, json, csv or markdown")
	f.StringVar(&o.ResultsDir, "results-dir", o.ResultsDir, "directory for the raw results file")
	f.BoolVarP(&o.Verbose, "verbose", "v", false, "print every spawned command line to stderr")
	f.BoolVarP(&o.Quiet, "quiet", "q", false, "no progress lines on stderr")
	f.StringVar(&o.Baseline, "baseline", "", cliopts.BaselineHelp)
	cmd.SetFlagErrorFunc(cliopts.FlagError)
	return cmd
}

func (o *pullOptions) validate() error {
	if len(o.extraPositional) > 1 {
		return fmt.Errorf("want at most one PKG, got %q (server arguments go after --)", o.extraPositional)
	}
	arms, err := o.Bin.ArmsFor(o.Pkg, o.Arms, o.armsGiven)
	if err != nil {
		return err
	}
	o.Arms = arms
	if o.ModuleDir, err = cliopts.ModuleDir(o.ModuleDir, o.Pkg, o.Bin.Given()); err != nil {
		return err
	}
	for _, a := range o.Arms {
		if a == builds.ImageArm {
			return fmt.Errorf("--arms: %q: pull makes the images itself; name the binary arms to put in them (default, static, upx, pgo)", a)
		}
	}
	measured := append([]string(nil), o.Arms...)
	for _, b := range o.Bin.Named {
		measured = append(measured, b.Name)
	}
	if err := cliopts.CheckBaseline(o.Baseline, measured); err != nil {
		return err
	}
	if _, err := pull.ParseCompressions(o.Compression); err != nil {
		return fmt.Errorf("--compression: %w", err)
	}
	if _, err := pull.ParseBandwidths(o.Bandwidth); err != nil {
		return fmt.Errorf("--bandwidth: %w", err)
	}
	if _, err := pull.ParseLayerings(o.Layers); err != nil {
		return fmt.Errorf("--layers: %w", err)
	}
	if o.Runs < 1 {
		return fmt.Errorf("--runs: %d, want at least 1", o.Runs)
	}
	if o.RegistryPort < 0 || o.RegistryPort > 65535 {
		return fmt.Errorf("--registry-port: %d, want 1..65535, or 0 for any free port", o.RegistryPort)
	}
	if o.Timeout <= 0 {
		return fmt.Errorf("--start-timeout: %v, want a positive duration", o.Timeout)
	}
	if _, err := prober.ParseTemplate(o.ServerArgs); err != nil {
		return err
	}
	if _, err := o.checker(); err != nil {
		return err
	}
	return nil
}

// checker turns --probe into the readiness checker, over TLS when --tls
// is given or the probe asks for it, as coldstart run's.
func (o *pullOptions) checker() (prober.Checker, error) {
	c, err := prober.ParseProbe(o.Probe, "")
	if err != nil {
		return nil, err
	}
	return withTLS(c, &o.TLS)
}

// runPull builds the arms, runs the pull campaign, records every pull, and
// prints the medians, then the break-evens.
func runPull(ctx context.Context, o *pullOptions, w io.Writer) error {
	arms := []string(o.Arms)
	comps, _ := pull.ParseCompressions(o.Compression)
	bws, _ := pull.ParseBandwidths(o.Bandwidth)
	lays, _ := pull.ParseLayerings(o.Layers)
	checker, err := o.checker()
	if err != nil {
		return err
	}
	var progress io.Writer
	if !o.Quiet {
		progress = o.stderr
	}
	var logw io.Writer
	if o.Verbose {
		logw = o.stderr
	}

	// The registry first: a port in use fails before minutes of building.
	reg, err := pull.StartRegistry(o.RegistryPort)
	if err != nil {
		if errors.Is(err, pull.ErrPortInUse) {
			return fmt.Errorf("--registry-port: %w (pick another, or 0 for any free port)", err)
		}
		return fmt.Errorf("--registry-port: %w", err)
	}
	defer reg.Close()
	rf, err := cliopts.CreateResults("coldstart", o.stderr, o.ResultsDir, "pull", nil)
	if err != nil {
		return err
	}
	if err := addTLS(rf, checker); err != nil {
		return err
	}
	src := builds.Source{Pkg: o.Pkg, Dir: o.ModuleDir, Bin: o.Bin.Path}
	args := o.ServerArgs
	if src.Pkg == "" && src.Bin == "" && len(o.Bin.Named) == 0 {
		if src, err = builds.SampleSource(); err != nil {
			return err
		}
		if args == nil {
			args = []string{"--addr", "{addr}"}
		}
	}
	bo := builds.Options{UPXLevel: o.UPXLevel, Progress: progress, Verbose: o.Verbose}
	arts, errs := builds.BuildAll(ctx, src, arms, bo)
	for _, b := range o.Bin.Named {
		a, err := builds.BuildAs(ctx, b.Name, b.Path, bo)
		arms, arts, errs = append(arms, b.Name), append(arts, a), append(errs, err)
	}
	var bins []pull.Binary
	var built campaign.Built // what End names as measured and not
	for i, a := range arts {
		if errs[i] != nil {
			built.Failed = append(built.Failed, fmt.Errorf("%s arm: %w", arms[i], errs[i]))
			continue
		}
		built.Artifacts = append(built.Artifacts, a)
		built.Arms = append(built.Arms, campaign.Arm{Name: arms[i]})
		bins = append(bins, pull.Binary{Arm: arms[i], Path: a.Path})
	}
	if err := rf.AddBuilt(built.Artifacts, built.Failed); err != nil {
		return err
	}
	if len(bins) == 0 {
		return fmt.Errorf("no arm built: %w", built.Err())
	}
	rows, err := pull.Run(ctx, pull.Config{
		Binaries: bins, Compressions: comps, Layerings: lays, Bandwidths: bws,
		Iterations: o.Runs, Registry: reg,
		Starter:  pull.ProcessStarter{Args: args, Checker: checker, Timeout: o.Timeout, Log: logw},
		Record:   func(r record.PullRow) error { return rf.Add(report.PullKind, r) },
		Progress: progress,
	})
	show := func(w io.Writer) error { return writePulls(w, o.Output, rows, o.Baseline) }
	return rf.End(w, show, err, built)
}

// pullJSON is pull's -o json output: one document, so that JSON tools
// read it whole, with the medians and the break-evens under their names.
type pullJSON struct {
	Medians    []record.PullSummary   `json:"medians"`
	BreakEvens []record.PullBreakEven `json:"break_evens"`
}

// writePulls prints the medians per image and bandwidth, each set against
// the baseline arm's image (record.ComparePulls; baseline "" = the default
// choice), then the break-evens: in -o json as one object (pullJSON), else
// as two tables (a blank line between them, but in CSV), the comparison
// one "vs BASE" column at a terminal. Nothing when no pull was made.
func writePulls(w io.Writer, f render.Format, rows []record.PullRow, baseline string) error {
	if len(rows) == 0 {
		return nil
	}
	sums, evens := record.SummarizePulls(rows), record.PullBreakEvens(rows)
	base := record.ComparePulls(sums, rows, baseline, stats.DefaultConfidence, stats.DefaultMinEffect)
	if f == render.JSON {
		doc := pullJSON{Medians: sums, BreakEvens: evens}
		if doc.Medians == nil {
			doc.Medians = []record.PullSummary{}
		}
		if doc.BreakEvens == nil {
			doc.BreakEvens = []record.PullBreakEven{}
		}
		return render.Write(w, f, doc)
	}
	vs := cliopts.VsColumn{Header: cliopts.VsHeader(base), Fields: cliopts.VsFields, Cell: func(i int) string {
		return cliopts.VsText(sums[i].VsBaseline, fmt.Sprintf("(no CI: %d pulls)", sums[i].N))
	}}
	if err := cliopts.WriteVs(w, f, sums, vs); err != nil {
		return err
	}
	if f == render.Table || f == render.Markdown {
		fmt.Fprintln(w)
	}
	return render.Write(w, f, evens)
}
