package main

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/coldstart-go/coldstart/explain"
	"github.com/coldstart-go/coldstart/internal/render"
	"github.com/coldstart-go/coldstart/record"
)

func TestExplainFlags(t *testing.T) {
	base := func(mod func(*explainOptions)) explainOptions {
		o := explainOptions{serverOptions: newServerOptions([]string{"default", "static", "upx"}), Runs: 10, Transport: "tcp", Timeout: 30 * time.Second, Top: 10}
		if mod != nil {
			mod(&o)
		}
		return o
	}
	tests := []struct {
		name    string
		args    []string
		want    explainOptions
		wantErr string
	}{
		{name: "defaults", want: base(nil)},
		{name: "bin arms top and template",
			args: []string{"--bin", "/bin/true", "--arms", "default,upx", "-n", "4", "--top", "3", "-o", "markdown", "--", "server", "-grpc-port", "{addr}"},
			want: base(func(o *explainOptions) {
				o.Bin.Path, o.Arms.Names, o.Runs, o.Top, o.Output, o.ServerArgs = "/bin/true", []string{"default", "upx"}, 4, 3, render.Markdown, []string{"server", "-grpc-port", "{addr}"}
			})},
		{name: "image refused", args: []string{"--arms", "static,image"}, wantErr: "--arms: image: explain reads the init trace"},
		{name: "unknown arm", args: []string{"--arms", "gcc"}, wantErr: `--arms`},
		{name: "zero runs", args: []string{"-n", "0"}, wantErr: "--runs: 0, want at least 1"},
		{name: "zero top", args: []string{"--top", "0"}, wantErr: "--top: 0, want at least 1"},
		{name: "bad budget", args: []string{"--budget", "cpus=4096"}, wantErr: "--budget"},
		{name: "two packages", args: []string{"./a", "./b"}, wantErr: "want at most one PKG"},
		{name: "baseline", args: []string{"--arms", "static,upx", "--baseline", "upx"}, want: base(func(o *explainOptions) { o.Arms.Names, o.Baseline = []string{"static", "upx"}, "upx" })},
		{name: "baseline not measured", args: []string{"--arms", "static,upx", "--baseline", "default"}, wantErr: `--baseline: "default" is not measured (arms: static, upx)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := parseFlags(t, "explain", newExplainCmd, tt.args, tt.wantErr)
			if tt.wantErr != "" {
				return
			}
			if diff := cmp.Diff(tt.want, *got, optsCmp); diff != "" {
				t.Errorf("explain %q options (-want +got):\n%s", tt.args, diff)
			}
		})
	}
}

// The printed report from fixed input: every section titled, notes last,
// JSON a single object whose unbounded intervals are null.
func TestWriteExplain(t *testing.T) {
	v := func(x float64) *float64 { return &x }
	r := explain.Report{
		Phases: []explain.PhaseRow{{Arm: "default", Budget: "max", Runs: 6, TracedRuns: 6, ExecToRuntimeMs: v(3), InitsMs: v(5), MainUntilListenMs: v(1.5), ListenToFirstRPCMs: 2, AcceptingMs: 9.5, FirstRPCMs: 11.5, InitTotalMs: v(4)}},
		Packages: []explain.PackageRow{{Arm: "default", Budget: "max", Rank: 1, Package: "example.com/heavy", Module: "example.com", MedianMs: 30, CILoMs: v(30), CIHiMs: v(31), ResolutionMs: 1, SharePct: 88, Bytes: 4 << 20, Allocs: 3, Runs: 6},
			{Arm: "default", Budget: "max", Rank: 2, Package: "net/http", Module: "std", MedianMs: 0.1, ResolutionMs: 0.01, Runs: 2}},
		Notes: []string{"default arm: something\nsecond line"},
	}
	var tbl bytes.Buffer
	if err := writeExplain(&tbl, render.Table, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# phases", "# packages by median init time", "example.com/heavy", "# notes\n# - default arm: something\n#   second line"} {
		if !strings.Contains(tbl.String(), want) {
			t.Errorf("table output lacks %q:\n%s", want, tbl.String())
		}
	}
	if strings.Contains(tbl.String(), "# modules") || strings.Contains(tbl.String(), "# arms against") {
		t.Errorf("empty sections printed:\n%s", tbl.String())
	}
	var js bytes.Buffer
	if err := writeExplain(&js, render.JSON, r); err != nil {
		t.Fatal(err)
	}
	var back explain.Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatalf("JSON output does not read back: %v\n%s", err, js.String())
	}
	if diff := cmp.Diff(r, back); diff != "" {
		t.Errorf("JSON round trip (-want +got):\n%s", diff)
	}
	if !strings.Contains(js.String(), `"ci_lo_ms": null`) {
		t.Errorf("an unbounded interval should be null in JSON:\n%s", js.String())
	}
}

// TestWriteExplainVsBaseline: at a terminal each phase row ends with its
// first RPC against the baseline's in one column; JSON and CSV carry the
// vs_baseline_* fields instead.
func TestWriteExplainVsBaseline(t *testing.T) {
	v := func(x float64) *float64 { return &x }
	r := explain.Report{Phases: []explain.PhaseRow{
		{Arm: "default", Budget: "max", Runs: 8, FirstRPCMs: 10, VsBaseline: record.VsBaseline{Baseline: "default", Verdict: record.VerdictBaseline}},
		{Arm: "upx", Budget: "max", Runs: 8, FirstRPCMs: 100, VsBaseline: record.VsBaseline{Baseline: "default", Ratio: v(10), CILow: v(9.5), CIHigh: v(10.4), P: v(0.0002), Verdict: "slower"}},
		{Arm: "static", Budget: "max", Runs: 2, FirstRPCMs: 9, VsBaseline: record.VsBaseline{Baseline: "default", Ratio: v(0.9), P: v(0.33), Verdict: "no difference detected"}},
	}}
	var tbl bytes.Buffer
	if err := writeExplain(&tbl, render.Table, r); err != nil {
		t.Fatal(err)
	}
	for _, re := range []string{
		`(?m)^arm +budget +runs .* first_rpc_ms .* packages +first_rpc vs default$`,
		`(?m)^default +max +8 .* baseline$`,
		`(?m)^upx +max +8 .* 10\.0× \[9\.50, 10\.4\] slower$`,
		`(?m)^static +max +2 .* 0\.900× \(no CI: 2 runs\) ~$`,
	} {
		if !regexp.MustCompile(re).MatchString(tbl.String()) {
			t.Errorf("table lacks %s:\n%s", re, tbl.String())
		}
	}
	if strings.Contains(tbl.String(), "vs_baseline_") {
		t.Errorf("table shows the vs_baseline_* fields as columns:\n%s", tbl.String())
	}
	var csv, js bytes.Buffer
	if err := writeExplain(&csv, render.CSV, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(csv.String(), "vs_baseline_ratio,vs_baseline_ci_low,vs_baseline_ci_high,vs_baseline_p,vs_baseline_verdict") {
		t.Errorf("csv lacks the vs_baseline_* columns:\n%s", csv.String())
	}
	if err := writeExplain(&js, render.JSON, r); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"baseline": "default"`, `"vs_baseline_ratio": 10`, `"vs_baseline_ci_low": 9.5`, `"vs_baseline_ci_high": 10.4`, `"vs_baseline_p": 0.0002`, `"vs_baseline_verdict": "slower"`} {
		if !strings.Contains(js.String(), k) {
			t.Errorf("JSON lacks %s:\n%s", k, js.String())
		}
	}
}

// TestWriteExplainText: the terminal report fits textWidth with package
// paths of ordinary length, puts arms side by side per package and module
// (the baseline's ranking first, "–" where an arm did not rank it), and
// lists only the comparisons that resolved a difference, counting the
// rest.
func TestWriteExplainText(t *testing.T) {
	v := func(x float64) *float64 { return &x }
	r := explain.Report{
		Phases: []explain.PhaseRow{
			{Arm: "default", Budget: "max", Runs: 6, TracedRuns: 6, ExecToRuntimeMs: v(3.5), InitsMs: v(8.5), MainUntilListenMs: v(1.4), ListenToFirstRPCMs: 1.8, FirstRPCMs: 16.7,
				VsBaseline: record.VsBaseline{Baseline: "default", Verdict: record.VerdictBaseline}},
			{Arm: "static", Budget: "max", Runs: 6, TracedRuns: 6, ExecToRuntimeMs: v(1.5), InitsMs: v(6.1), MainUntilListenMs: v(1.5), ListenToFirstRPCMs: 1.8, FirstRPCMs: 13.6,
				VsBaseline: record.VsBaseline{Baseline: "default", Ratio: v(0.752), CILow: v(0.407), CIHigh: v(1.43), P: v(0.31), Verdict: "no difference detected"}},
		},
		Packages: []explain.PackageRow{
			{Arm: "default", Budget: "max", Rank: 1, Package: "google.golang.org/protobuf/reflect/protodesc", MedianMs: 0.42, SharePct: 13.1},
			{Arm: "default", Budget: "max", Rank: 2, Package: "runtime", MedianMs: 0.165, SharePct: 5.2},
			{Arm: "static", Budget: "max", Rank: 1, Package: "google.golang.org/protobuf/reflect/protodesc", MedianMs: 0.395, SharePct: 12.3},
			{Arm: "static", Budget: "max", Rank: 2, Package: "golang.org/x/net/trace", MedianMs: 0.061, SharePct: 1.9},
		},
		Modules: []explain.ModuleRow{
			{Arm: "default", Budget: "max", Module: "std", Version: "", MedianMs: 1.23, SharePct: 38.3},
			{Arm: "static", Budget: "max", Module: "std", MedianMs: 1.12, SharePct: 34.9},
		},
		Compare: []explain.CompareRow{
			{Budget: "max", What: "exec_to_runtime", Base: "default", Arm: "static", BaseMs: 3.53, ArmMs: 1.47, DiffMs: -1.93, DiffLoMs: v(-47.8), DiffHiMs: v(-0.851), P: 0.009, N: "6+6", Verdict: "static faster"},
			{Budget: "max", What: "init google.golang.org/protobuf/reflect/protodesc", Base: "default", Arm: "static", DiffMs: 0, P: 0.96, N: "6+6", Verdict: "no difference detected"},
			{Budget: "max", What: "inits", Base: "default", Arm: "static", DiffMs: -1.91, P: 0.39, N: "6+6", Verdict: "no difference detected"},
		},
		Notes: []string{"upx arm: modules from its unpacked twin"},
	}
	var b bytes.Buffer
	if err := writeExplainText(&b, r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, l := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(l); n > textWidth {
			t.Errorf("line of %d columns (> %d): %q", n, textWidth, l)
		}
	}
	for _, re := range []string{
		`(?m)^6 runs per arm, 6 with an init trace; budget max; baseline default; medians in ms from t0`,
		`(?m)^arm +exec→runtime +inits +main→listen +listen→RPC +first RPC +first RPC vs default$`,
		`(?m)^static +1\.50 +6\.10 +1\.50 +1\.80 +13\.6 +0\.752× \[0\.407, 1\.43\] ~$`,
		`(?m)^package +default +static +%$`,
		// The baseline's ranking first, then what only static ranked.
		`(?m)^google.golang.org/protobuf/reflect/protodesc +0\.420 +0\.395 +13\nruntime +0\.165 +– +5\ngolang.org/x/net/trace +– +0\.061 +–$`,
		`(?m)^std +1\.23 +1\.12 +38$`,
		`(?m)^static +exec_to_runtime +-1\.93 \[-47\.8, -0\.851\] +0\.009 +faster$`,
		`(?m)^2 of 3: no difference detected \(--wide lists them\)$`,
		`(?m)^note: upx arm: modules from its unpacked twin$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("output lacks %s:\n%s", re, out)
		}
	}
	if regexp.MustCompile(`(?m)^static +(inits|init google)`).MatchString(out) {
		t.Errorf("an unresolved comparison is listed:\n%s", out)
	}
}
