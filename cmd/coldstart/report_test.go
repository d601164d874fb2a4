package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/creack/pty"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// withStats fills the statistical defaults every parse sets.
func withStats(o reportOptions) reportOptions {
	o.Confidence, o.MinEffect = 0.95, 0.05
	return o
}

func TestReportFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    reportOptions
		wantErr string
	}{
		{name: "defaults", args: nil,
			want: withStats(reportOptions{Paths: []string{"results"}, Format: "markdown", PlotFormat: "svg", Title: "coldstart report"})},
		{name: "files and out", args: []string{"--out", "PERFORMANCE.md", "--title", "Performance", "a.jsonl", "results/"},
			want: withStats(reportOptions{Paths: []string{"a.jsonl", "results/"}, Format: "markdown", PlotFormat: "svg", Out: "PERFORMANCE.md", Title: "Performance"})},
		{name: "benchstat", args: []string{"-o", "benchstat", "x.jsonl"},
			want: withStats(reportOptions{Paths: []string{"x.jsonl"}, Format: "benchstat", PlotFormat: "svg", Title: "coldstart report"})},
		{name: "plots dir", args: []string{"--plots", "docs/img"},
			want: withStats(reportOptions{Paths: []string{"results"}, Format: "markdown", PlotFormat: "svg", Plots: "docs/img", Title: "coldstart report"})},
		{name: "png plots", args: []string{"--plot-format", "png"},
			want: withStats(reportOptions{Paths: []string{"results"}, Format: "markdown", PlotFormat: "png", Title: "coldstart report"})},
		{name: "unknown plot format", args: []string{"--plot-format", "gif"}, wantErr: `--plot-format: unknown format "gif" (known: svg, png)`},
		{name: "headline", args: []string{"--headline"},
			want: withStats(reportOptions{Paths: []string{"results"}, Format: "markdown", PlotFormat: "svg", Title: "coldstart report", Headline: true})},
		{name: "headline with benchstat", args: []string{"--headline", "-o", "benchstat"}, wantErr: "--headline: goes with -o markdown"},
		{name: "unknown format", args: []string{"-o", "pdf"}, wantErr: `--output: unknown format "pdf" (known: markdown, html, json, benchstat)`},
		{name: "html", args: []string{"-o", "html", "--out", "report.html", "--baseline", "static"},
			want: withStats(reportOptions{Paths: []string{"results"}, Format: "html", PlotFormat: "svg", Out: "report.html", Title: "coldstart report", Baseline: "static"})},
		{name: "html without plots", args: []string{"-o", "html", "--plots", "-"},
			want: withStats(reportOptions{Paths: []string{"results"}, Format: "html", PlotFormat: "svg", Plots: "-", Title: "coldstart report"})},
		{name: "html with plots dir", args: []string{"-o", "html", "--plots", "docs/img"}, wantErr: "--plots: -o html inlines its plots; give --plots - for none, or -o markdown for a plots directory"},
		{name: "html with png", args: []string{"-o", "html", "--plot-format", "png"}, wantErr: "--plot-format: -o html inlines its plots as svg, not png"},
		{name: "html headline", args: []string{"-o", "html", "--headline"}, wantErr: "--headline: goes with -o markdown, not -o html"},
		{name: "json at 99%", args: []string{"-o", "json", "--confidence", "0.99", "--min-effect", "0.1"},
			want: reportOptions{Paths: []string{"results"}, Format: "json", PlotFormat: "svg", Title: "coldstart report", Confidence: 0.99, MinEffect: 0.1}},
		{name: "confidence as percent", args: []string{"--confidence", "95"}, wantErr: "--confidence: 95: confidence level must be between 0 and 1"},
		{name: "confidence 0", args: []string{"--confidence", "0"}, wantErr: "--confidence: 0: confidence level must be between 0 and 1"},
		{name: "confidence 1", args: []string{"--confidence", "1"}, wantErr: "--confidence: 1: confidence level must be between 0 and 1"},
		{name: "negative min effect", args: []string{"--min-effect", "-0.1"}, wantErr: "--min-effect: -0.1: want a relative difference"},
		{name: "compare one file", args: []string{"--compare", "a.jsonl"}, wantErr: "--compare: name at least two results files, got 1"},
		{name: "plots with benchstat", args: []string{"-o", "benchstat", "--plots", "p"}, wantErr: "--plots: plots go with -o markdown"},
		{name: "out is a dir", args: []string{"--out", os.TempDir()}, wantErr: "--out: " + os.TempDir() + " is a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := parseFlags(t, "report", newReportCmd, tt.args, tt.wantErr)
			if got == nil {
				return
			}
			if diff := cmp.Diff(tt.want, *got, cmpopts.IgnoreUnexported(reportOptions{})); diff != "" {
				t.Errorf("report %q options (-want +got):\n%s", tt.args, diff)
			}
		})
	}
}

// TestRunReport writes a report of the report package's fixtures to a
// file and checks that every plot it links is there.
func TestRunReport(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "not", "yet", "PERFORMANCE.md") // --out creates its directory
	var stderr bytes.Buffer
	o := &reportOptions{Paths: []string{"../../report/testdata", "../../report/testdata/bad"}, Format: "markdown", PlotFormat: "svg", Out: out, Title: "Performance", stderr: &stderr}
	if err := runReport(context.Background(), o, io.Discard); err != nil {
		t.Fatalf("runReport() = %v", err)
	}
	md, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	links := regexp.MustCompile(`!\[[^\]]*\]\(([^)]+)\)`).FindAllStringSubmatch(string(md), -1)
	if len(links) == 0 {
		t.Fatalf("no plots linked from %s:\n%s", out, md)
	}
	for _, l := range links {
		if !strings.HasPrefix(l[1], "plots/") {
			t.Errorf("plot link %q, want it under plots/ beside the Markdown", l[1])
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(out), l[1])); err != nil {
			t.Errorf("linked plot: %v", err)
		}
	}
	if !strings.Contains(stderr.String(), "20261130-040500_coldstart.jsonl:1: schema") {
		t.Errorf("stderr lacks the other-schema warning:\n%s", stderr.String())
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".tmp-*")); len(left) > 0 {
		t.Errorf("temp files left: %v", left)
	}

	var b bytes.Buffer
	o = &reportOptions{Paths: []string{"../../report/testdata/20261130-030000_coldstart.jsonl"}, Format: "benchstat", stderr: io.Discard}
	if err := runReport(context.Background(), o, &b); err != nil {
		t.Fatalf("runReport(benchstat) = %v", err)
	}
	if !strings.Contains(b.String(), "\nBenchmarkColdStart/budget=cpus=0/arm=upx 1 ") {
		t.Errorf("benchstat output lacks upx cold starts:\n%s", b.String())
	}

	o = &reportOptions{Paths: []string{filepath.Join(dir, "none")}, Format: "markdown", stderr: io.Discard}
	if err := runReport(context.Background(), o, io.Discard); err == nil {
		t.Errorf("runReport(missing dir) = nil, want an error")
	}
}

// TestReportJSON: -o json writes the comparisons as rows with the keys the
// README names, and --compare refuses a file of another schema by name.
func TestReportJSON(t *testing.T) {
	var out, stderr bytes.Buffer
	o := &reportOptions{Paths: []string{"../../report/testdata"}, Format: "json", Confidence: 0.95, MinEffect: 0.05, stderr: &stderr}
	if err := runReport(context.Background(), o, &out); err != nil {
		t.Fatalf("runReport(-o json) = %v", err)
	}
	var rows []map[string]any
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
		t.Fatalf("-o json output is not a JSON array: %v\n%s", err, out.String())
	}
	if len(rows) == 0 {
		t.Fatal("-o json: no comparisons")
	}
	for _, k := range []string{"metric", "a", "b", "ratio", "ratio_ci_low", "ratio_ci_high", "p_value", "verdict", "n_a", "n_b"} {
		if _, ok := rows[0][k]; !ok {
			t.Errorf("-o json row lacks %q: %v", k, rows[0])
		}
	}

	other := "../../report/testdata/bad/20261130-040500_coldstart.jsonl"
	o = &reportOptions{Paths: []string{"../../report/testdata/20261130-030000_coldstart.jsonl", other}, Format: "json", Compare: true, Confidence: 0.95, MinEffect: 0.05, stderr: &stderr}
	err := runReport(context.Background(), o, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--compare "+other+`: schema "coldstart/v2"`) {
		t.Errorf("runReport(--compare, other schema) = %v, want an error naming %s and its schema", err, other)
	}
}

// TestReportHTML: -o html writes one page with its plots inline to --out
// or to a stdout that is not a terminal, and refuses a terminal.
func TestReportHTML(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "report.html")
	o := &reportOptions{Paths: []string{"../../report/testdata"}, Format: "html", PlotFormat: "svg", Out: out, Title: "Page", Confidence: 0.95, MinEffect: 0.05, stderr: io.Discard}
	if err := runReport(context.Background(), o, io.Discard); err != nil {
		t.Fatalf("runReport(-o html --out) = %v", err)
	}
	page, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<!DOCTYPE html>", "<title>Page</title>", `<figure class="plot"`, "<svg", "</html>"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("%s lacks %s", out, want)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 1 {
		t.Errorf("-o html --out left %v, want the one file", left)
	}

	// A pipe is not a terminal: the page goes to it.
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	read := make(chan []byte)
	go func() { b, _ := io.ReadAll(pr); read <- b }()
	o = &reportOptions{Paths: []string{"../../report/testdata/20261130-030000_coldstart.jsonl"}, Format: "html", PlotFormat: "svg", Plots: "-", Confidence: 0.95, MinEffect: 0.05, stderr: io.Discard}
	err = runReport(context.Background(), o, pw)
	pw.Close()
	if b := <-read; err != nil || !strings.HasPrefix(string(b), "<!DOCTYPE html>") {
		t.Errorf("runReport(-o html) to a pipe = %v, wrote %.40q; want the page", err, b)
	}

	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatalf("open a pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	defer tty.Close()
	err = runReport(context.Background(), o, tty)
	if want := "-o html: not writing HTML to a terminal: give --out FILE, or redirect stdout"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("runReport(-o html) to a terminal = %v, want an error holding %q", err, want)
	}
}

// TestReportBaseline: --baseline turns the comparisons round, and an arm
// no campaign measured is refused, naming those measured, in every format.
func TestReportBaseline(t *testing.T) {
	file := "../../report/testdata/20261130-030000_coldstart.jsonl"
	var b bytes.Buffer
	o := &reportOptions{Paths: []string{file}, Format: "json", Baseline: "static", Confidence: 0.95, MinEffect: 0.05, stderr: io.Discard}
	if err := runReport(context.Background(), o, &b); err != nil {
		t.Fatalf("runReport(--baseline static) = %v", err)
	}
	var rows []struct{ Kind, Metric, A, B string }
	if err := json.Unmarshal(b.Bytes(), &rows); err != nil || len(rows) == 0 {
		t.Fatalf("-o json --baseline static: %v, %d rows\n%s", err, len(rows), b.String())
	}
	arms := 0
	for _, r := range rows {
		if r.Kind != "arms" {
			continue // budgets, protocols: not arm against arm
		}
		arms++
		if r.B != "static" {
			t.Errorf("--baseline static: row %s %s vs %s, want every arm against static", r.Metric, r.A, r.B)
		}
	}
	if arms == 0 {
		t.Errorf("-o json --baseline static: no rows of kind arms\n%s", b.String())
	}
	for _, format := range []string{"markdown", "html", "json", "benchstat"} {
		o := &reportOptions{Paths: []string{file}, Format: format, PlotFormat: "svg", Plots: "-", Baseline: "gcc", Confidence: 0.95, MinEffect: 0.05, stderr: io.Discard}
		err := runReport(context.Background(), o, io.Discard)
		if want := `--baseline: "gcc" was not measured (measured: default, static, upx)`; err == nil || err.Error() != want {
			t.Errorf("runReport(-o %s --baseline gcc) = %v, want %q", format, err, want)
		}
	}
}
