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
		{name: "unknown format", args: []string{"-o", "html"}, wantErr: `--output: unknown format "html" (known: markdown, json, benchstat)`},
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
