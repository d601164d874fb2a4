package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/coldstart-go/coldstart/report"
)

// reportOptions are coldstart report's flags.
type reportOptions struct {
	// Paths are results files or directories of them.
	Paths []string
	// Format is markdown or benchstat.
	Format string
	// Out is the file to write ("" = stdout).
	Out string
	// Plots is the directory for SVG plots ("" = plots/ beside Out, none
	// on stdout; "-" = no plots).
	Plots string
	// PlotFormat is svg or png.
	PlotFormat string
	// Title heads the Markdown document.
	Title string
	// Notes is a Markdown file placed before the recommendations.
	Notes string
	// Headline writes only the cold-start tables and the recommendations.
	Headline bool
	// stderr gets the warnings about input lines not used.
	stderr io.Writer
}

func newReportCmd(run func(context.Context, *reportOptions, io.Writer) error) *cobra.Command {
	o := &reportOptions{Format: "markdown", PlotFormat: "svg", Title: "coldstart report"}
	cmd := &cobra.Command{
		Use:   "report [flags] [FILE.jsonl... | DIR...]",
		Short: "Turn results files into a dated Markdown report with plots and recommendations, or benchstat text",
		Long: `report reads the results files of coldstart run, coldstart density and steady run (local or
on Knative; default: results/*.jsonl) and writes Markdown: recommendations derived from the
figures, each citing its rows; per campaign a table with a dated provenance line under it
(doubted rows stay, marked †); SVG plots of the spawn→first-RPC CDF per arm, latency
percentiles, and calls/s and CPU per call across budgets. -o benchstat writes the Go
benchmark format instead, one line per cold start, so that benchstat old.txt new.txt
compares two campaigns. Lines it cannot use (truncated, hand-edited, another schema) are
named file:line on stderr and in the report, and the rest is reported.`,
		Example: `  coldstart report
  coldstart report --out PERFORMANCE.md --title Performance results/
  coldstart report --headline results/ > headline.md
  coldstart report -o benchstat results/20261130-030000_coldstart.jsonl > new.txt`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Paths = args
			if len(o.Paths) == 0 {
				o.Paths = []string{"results"}
			}
			o.stderr = cmd.ErrOrStderr()
			if err := o.validate(); err != nil {
				return err
			}
			return run(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.Format, "output", "o", o.Format, "output format: markdown or benchstat")
	f.StringVar(&o.Out, "out", "", "write to this file, atomically (\"\" = stdout)")
	f.StringVar(&o.Plots, "plots", "", "directory for the plots, linked from the Markdown (\"\" = plots/ beside --out, none on stdout; - = no plots)")
	f.StringVar(&o.PlotFormat, "plot-format", o.PlotFormat, "image format of the plots: svg or png")
	f.StringVar(&o.Title, "title", o.Title, "heading of the Markdown document")
	f.StringVar(&o.Notes, "notes", "", "a Markdown file of the campaign's own notes (what you doubt, what you saw), placed before the recommendations (\"\" = none)")
	f.BoolVar(&o.Headline, "headline", false, "write only the cold-start tables and the recommendations, for a README to quote (no plots)")
	return cmd
}

func (o *reportOptions) validate() error {
	switch o.Format {
	case "markdown":
	case "benchstat":
		if o.Plots != "" && o.Plots != "-" {
			return fmt.Errorf("--plots: plots go with -o markdown, not -o benchstat")
		}
		if o.Headline {
			return fmt.Errorf("--headline: goes with -o markdown, not -o benchstat")
		}
	default:
		return fmt.Errorf("--output: unknown format %q (known: markdown, benchstat)", o.Format)
	}
	if o.PlotFormat != "svg" && o.PlotFormat != "png" {
		return fmt.Errorf("--plot-format: unknown format %q (known: svg, png)", o.PlotFormat)
	}
	if o.Out != "" {
		if fi, err := os.Stat(o.Out); err == nil && fi.IsDir() {
			return fmt.Errorf("--out: %s is a directory, want a file", o.Out)
		}
	}
	return nil
}

// plotsDir is where plots go ("" = none).
func (o *reportOptions) plotsDir() string {
	switch {
	case o.Format != "markdown" || o.Plots == "-" || o.Headline:
		return ""
	case o.Plots != "":
		return o.Plots
	case o.Out != "":
		return filepath.Join(filepath.Dir(o.Out), "plots")
	}
	return ""
}

func runReport(ctx context.Context, o *reportOptions, w io.Writer) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r, err := report.Load(o.Paths...)
	if err != nil {
		return err
	}
	for _, warn := range r.Warnings {
		fmt.Fprintf(o.stderr, "coldstart report: %s\n", warn)
	}
	if len(r.Campaigns) == 0 {
		return fmt.Errorf("report %v: no results to report", o.Paths)
	}
	write := func(w io.Writer) error {
		if o.Format == "benchstat" {
			return r.Benchstat(w)
		}
		if o.Headline {
			return r.Headline(w)
		}
		mo := report.MarkdownOptions{Title: o.Title}
		if o.Notes != "" {
			b, err := os.ReadFile(o.Notes)
			if err != nil {
				return fmt.Errorf("--notes: %w", err)
			}
			mo.Notes = string(b)
		}
		if dir := o.plotsDir(); dir != "" {
			if mo.Plots, err = r.PlotsAs(dir, o.PlotFormat); err != nil {
				return err
			}
			// Links are relative to the Markdown file (the working
			// directory when it goes to stdout).
			base := "."
			if o.Out != "" {
				base = filepath.Dir(o.Out)
			}
			if mo.PlotsRel, err = relDir(base, dir); err != nil {
				return err
			}
		}
		return r.Markdown(w, mo)
	}
	if o.Out == "" {
		return write(w)
	}
	return writeAtomic(o.Out, write)
}

func relDir(base, dir string) (string, error) {
	ab, err := filepath.Abs(base)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", base, err)
	}
	ad, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", dir, err)
	}
	return filepath.Rel(ab, ad)
}

// writeAtomic writes path through a temp file in its directory and a
// rename, so a reader never sees half a report.
func writeAtomic(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	werr := write(tmp)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
