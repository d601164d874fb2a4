package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/coldstart-go/coldstart/internal/atomicfile"
	"github.com/coldstart-go/coldstart/internal/stats"
	"github.com/coldstart-go/coldstart/report"
)

// reportOptions are coldstart report's flags.
type reportOptions struct {
	// Paths are results files or directories of them.
	Paths []string
	// Format is markdown, html, json or benchstat.
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
	// Confidence is the level of intervals and 1 − the level of tests.
	Confidence float64
	// MinEffect is the smallest relative difference recommended on.
	MinEffect float64
	// Pages is a directory for the detail sections, one page each,
	// linked from Out ("" = all in one document).
	Pages string
	// Baseline is the arm every other arm is compared against ("" =
	// report.DefaultBaseline where measured, else each table's first arm).
	Baseline string
	// Compare: the paths are campaigns to compare with each other; files
	// of different schemas are an error rather than skipped.
	Compare bool
	// stderr gets the warnings about input lines not used.
	stderr io.Writer
}

func newReportCmd(run func(context.Context, *reportOptions, io.Writer) error) *cobra.Command {
	o := &reportOptions{Format: "markdown", PlotFormat: "svg", Title: "coldstart report",
		Confidence: stats.DefaultConfidence, MinEffect: stats.DefaultMinEffect}
	cmd := &cobra.Command{
		Use:   "report [flags] [FILE.jsonl... | DIR...]",
		Short: "Turn results files into a dated Markdown or HTML report with plots and recommendations, or benchstat text",
		Long: `report reads the results files of coldstart run, coldstart density and steady run (local or
on Knative; default: results/*.jsonl) and writes Markdown: recommendations derived from the
figures, each citing its rows; per campaign a table with a dated provenance line under it
(doubted rows stay, marked †); SVG plots of the spawn→first-RPC CDF per arm, latency
percentiles, and calls/s and CPU per call across budgets. -o benchstat writes the Go
benchmark format instead, one line per cold start, so that benchstat old.txt new.txt
compares two campaigns. Every comparison (two arms, two budgets, gRPC vs HTTP, two
campaigns) states a/b with its interval, the Mann–Whitney p-value and a verdict (faster,
slower, no difference detected); -o json writes them as rows. Recommendations rest only on
differences that are significant and at least --min-effect. -o html writes the same report
as one self-contained HTML file (plots inline as SVG, nothing fetched when opened), the
Decision first. Lines it cannot use (truncated, hand-edited, another schema) are
named file:line on stderr and in the report, and the rest is reported.`,
		Example: `  coldstart report
  coldstart report --out PERFORMANCE.md --title Performance results/
  coldstart report --headline results/ > headline.md
  coldstart report -o benchstat results/20261130-030000_coldstart.jsonl > new.txt
  coldstart report -o html --out report.html results/
  coldstart report -o json --confidence 0.99 --baseline static results/
  coldstart report --compare results/20261130-035158_coldstart.jsonl results/20261201-050000_coldstart.jsonl`,
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
	f.StringVarP(&o.Format, "output", "o", o.Format, "output format: markdown, html (one self-contained file: give --out or redirect stdout), json (the comparisons) or benchstat")
	f.StringVar(&o.Out, "out", "", "write to this file, atomically (\"\" = stdout)")
	f.StringVar(&o.Plots, "plots", "", "directory for the plots, linked from the Markdown (\"\" = plots/ beside --out, none on stdout; - = no plots)")
	f.StringVar(&o.PlotFormat, "plot-format", o.PlotFormat, "image format of the plots: svg or png")
	f.StringVar(&o.Title, "title", o.Title, "heading of the Markdown or HTML document (and the HTML page's title)")
	f.StringVar(&o.Notes, "notes", "", "a Markdown file of the campaign's own notes (what you doubt, what you saw), placed before the recommendations (\"\" = none)")
	f.BoolVar(&o.Headline, "headline", false, "write only the cold-start tables and the recommendations, for a README to quote (no plots)")
	f.Float64Var(&o.Confidence, "confidence", o.Confidence, "confidence level of every interval, between 0 and 1 (tests are significant at 1 − this)")
	f.Float64Var(&o.MinEffect, "min-effect", o.MinEffect, "smallest relative difference a recommendation acts on (0.05 = 5%)")
	f.StringVar(&o.Pages, "pages", "", "write the detail sections (every table per campaign, the comparisons, the checks) as Markdown pages in this directory, linked from --out, which keeps the decision, verdict plots, headline tables and recommendations (\"\" = one document)")
	f.StringVar(&o.Baseline, "baseline", "", "arm every other arm is compared against; must be one the results measured (\"\" = "+report.DefaultBaseline+" where measured, else each table's first arm)")
	f.BoolVar(&o.Compare, "compare", false, "compare the campaigns given with each other; a file of another schema is an error, not skipped")
	return cmd
}

func (o *reportOptions) validate() error {
	if err := stats.CheckConfidence(o.Confidence); err != nil {
		return fmt.Errorf("--confidence: %w", err)
	}
	if !(o.MinEffect >= 0 && o.MinEffect < 10) {
		return fmt.Errorf("--min-effect: %v: want a relative difference such as 0.05 for 5%%", o.MinEffect)
	}
	if o.Pages != "" && (o.Out == "" || o.Format != "markdown" || o.Headline) {
		return fmt.Errorf("--pages: goes with -o markdown and --out FILE (the pages are linked from FILE)")
	}
	if o.Compare && len(o.Paths) < 2 {
		return fmt.Errorf("--compare: name at least two results files, got %d", len(o.Paths))
	}
	switch o.Format {
	case "markdown", "json":
	case "html":
		// The HTML file carries its plots inside it, drawn as SVG.
		if o.Plots != "" && o.Plots != "-" {
			return fmt.Errorf("--plots: -o html inlines its plots; give --plots - for none, or -o markdown for a plots directory")
		}
		if o.PlotFormat != "svg" {
			return fmt.Errorf("--plot-format: -o html inlines its plots as svg, not %s", o.PlotFormat)
		}
		if o.Headline {
			return fmt.Errorf("--headline: goes with -o markdown, not -o html")
		}
	case "benchstat":
		if o.Plots != "" && o.Plots != "-" {
			return fmt.Errorf("--plots: plots go with -o markdown, not -o benchstat")
		}
		if o.Headline {
			return fmt.Errorf("--headline: goes with -o markdown, not -o benchstat")
		}
	default:
		return fmt.Errorf("--output: unknown format %q (known: markdown, html, json, benchstat)", o.Format)
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

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func runReport(ctx context.Context, o *reportOptions, w io.Writer) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	// A page of HTML and inline SVG is no use on a terminal; to a pipe or
	// a file it is what was asked for.
	if o.Format == "html" && o.Out == "" && isTerminal(w) {
		return fmt.Errorf("-o html: not writing HTML to a terminal: give --out FILE, or redirect stdout (> report.html)")
	}
	r, err := report.Load(o.Paths...)
	if err != nil {
		return err
	}
	r.Confidence, r.MinEffect = o.Confidence, o.MinEffect
	if o.Baseline != "" {
		arms := r.Arms()
		if !slices.Contains(arms, o.Baseline) {
			return fmt.Errorf("--baseline: %q was not measured (measured: %s)", o.Baseline, strings.Join(arms, ", "))
		}
		r.Baseline = o.Baseline
	}
	for _, warn := range r.Warnings {
		if o.Compare && warn.Schema != "" {
			return fmt.Errorf("--compare %s: schema %q, want %q as the other campaigns: campaigns of different schemas cannot be compared", warn.File, warn.Schema, report.Schema)
		}
		fmt.Fprintf(o.stderr, "coldstart report: %s\n", warn)
	}
	if len(r.Campaigns) == 0 {
		return fmt.Errorf("report %v: no results to report", o.Paths)
	}
	write := func(w io.Writer) error {
		switch o.Format {
		case "benchstat":
			return r.Benchstat(w)
		case "json":
			return r.JSON(w)
		}
		if o.Headline {
			return r.Headline(w)
		}
		var notes string
		if o.Notes != "" {
			b, err := os.ReadFile(o.Notes)
			if err != nil {
				return fmt.Errorf("--notes: %w", err)
			}
			notes = string(b)
		}
		if o.Format == "html" {
			return r.HTML(w, report.HTMLOptions{Title: o.Title, Notes: notes, NoPlots: o.Plots == "-"})
		}
		mo := report.MarkdownOptions{Title: o.Title, Notes: notes}
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
		if o.Pages != "" {
			mo.PagesDir = o.Pages
			if mo.PagesRel, err = relDir(filepath.Dir(o.Out), o.Pages); err != nil {
				return err
			}
			back, err := relDir(o.Pages, filepath.Dir(o.Out))
			if err != nil {
				return err
			}
			mo.PagesBack = filepath.Join(back, filepath.Base(o.Out))
			if mo.Plots != nil {
				if mo.PagesPlotsRel, err = relDir(o.Pages, o.plotsDir()); err != nil {
					return err
				}
			}
		}
		return r.Markdown(w, mo)
	}
	if o.Out == "" {
		return write(w)
	}
	if dir := filepath.Dir(o.Out); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("--out: create %s: %w", dir, err)
		}
	}
	return atomicfile.Write(o.Out, 0o644, write)
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
