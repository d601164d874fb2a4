package main

import (
	"testing"
	"time"
)

func TestGateFlags(t *testing.T) {
	o := parseFlags(t, "gate", newGateCmd, []string{"a.jsonl", "b/"}, "")
	if o.Base != "" || len(o.Paths) != 2 || o.MaxRegression != 0.05 || o.Confidence != 0.95 || o.Format != "markdown" || o.AllowBusy {
		t.Errorf("defaults: %+v", o)
	}
	o = parseFlags(t, "gate", newGateCmd, []string{"--base", "origin/main", "-n", "12", "--arms", "default,static", "--budget", "cpus=0",
		"--start-timeout", "9s", "--max-regression", "0.1", "-o", "benchstat", "./cmd/api", "--", "--port={port}"}, "")
	if o.Base != "origin/main" || o.Runs != 12 || o.AutoRuns || o.Pkg != "./cmd/api" || len(o.ServerArgs) != 1 || o.Timeout != 9*time.Second ||
		o.MaxRegression != 0.1 || o.Format != "benchstat" || len(o.Arms.Names) != 2 || len(o.Budgets.Budgets) != 1 {
		t.Errorf("--base: %+v", o)
	}
	if o = parseFlags(t, "gate", newGateCmd, []string{"--base", "HEAD"}, ""); len(o.Arms.Names) != 1 || o.Arms.Names[0] != "default" || o.Runs != 0 || !o.AutoRuns || o.MaxRuns != 60 {
		t.Errorf("--base defaults: arms %v, runs %d, auto %v, max runs %d; want default, 0, true (auto), 60", o.Arms.Names, o.Runs, o.AutoRuns, o.MaxRuns)
	}
	if o = parseFlags(t, "gate", newGateCmd, []string{"--base", "HEAD", "--runs", "auto", "--precision", "0.02", "--max-runs", "40"}, ""); !o.AutoRuns || o.Runs != 0 ||
		o.Precision != 0.02 || o.MaxRuns != 40 {
		t.Errorf("--runs auto: auto %v, runs %d, precision %v, max runs %d; want true, 0, 0.02, 40", o.AutoRuns, o.Runs, o.Precision, o.MaxRuns)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--max-regression", "-1", "a", "b"}, "--max-regression: -1"},
		{[]string{"--confidence", "1", "a", "b"}, "--confidence: 1"},
		{[]string{"--budget", "cpus=0", "a", "b"}, "--budget: only with --base REV"},
		{[]string{"a", "b", "--", "-x"}, "server arguments after --: only with --base REV"},
		{[]string{"--bin", "x", "a", "b"}, "unknown flag: --bin"},
		{[]string{"--base", "HEAD", "--arms", "pgo"}, "--arms: pgo: give --pgo-profile"},
		{[]string{"--base", "HEAD", "--transport", "udp"}, `--transport: "udp", want tcp or unix`},
		{[]string{"--base", "HEAD", "a", "b"}, "want at most one PKG"},
		{[]string{"--base", "HEAD", "--runs", "auto", "--precision", "1"}, "--precision: 1, want a fraction"},
		{[]string{"--base", "HEAD", "--runs", "auto", "--max-runs", "5"}, "--max-runs: 5, want at least 9"},
		{[]string{"--base", "HEAD", "--runs", "often"}, `--runs`},
		{[]string{"--runs", "auto", "a", "b"}, "--runs: only with --base REV"},
		{[]string{"--max-runs", "30", "a", "b"}, "--max-runs: only with --base REV"},
	} {
		parseFlags(t, "gate", newGateCmd, tt.args, tt.want)
	}
}
