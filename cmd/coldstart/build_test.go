package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/coldstart-go/coldstart/builds"
	"github.com/coldstart-go/coldstart/campaign"
	"github.com/coldstart-go/coldstart/cmd/internal/cliopts"
	"github.com/coldstart-go/coldstart/internal/render"
)

func TestBuildCmdParse(t *testing.T) {
	defaults := buildOptions{
		Arms:        builds.ArmList{"default", "static", "upx"},
		UPXLevel:    builds.UPXDefault,
		PGODuration: 10 * time.Second,
		Output:      render.Table,
	}
	with := func(f func(o *buildOptions)) *buildOptions {
		o := defaults
		f(&o)
		return &o
	}
	tests := []struct {
		name    string
		args    []string
		want    *buildOptions
		wantErr string
	}{
		{"defaults", nil, &defaults, ""},
		{"package and arms", []string{"--arms", "upx,default", "./cmd/x"},
			with(func(o *buildOptions) { o.Arms = builds.ArmList{"upx", "default"}; o.Pkg = "./cmd/x" }), ""},
		{"every flag", []string{"--arms=pgo", "--upx-level", "lzma", "--pgo-profile", "cpu.pprof", "--pgo-duration", "3s",
			"--instrument", "--cache-dir", "/tmp/c", "--out-dir", "out", "--no-cache", "-o", "json", "-v", "example.com/srv"},
			with(func(o *buildOptions) {
				o.Arms = builds.ArmList{"pgo"}
				o.UPXLevel = builds.UPXLZMA
				o.PGOProfile = "cpu.pprof"
				o.PGODuration = 3 * time.Second
				o.Instrument = true
				o.CacheDir = "/tmp/c"
				o.OutDir = "out"
				o.NoCache = true
				o.Output = render.JSON
				o.Verbose = true
				o.Pkg = "example.com/srv"
			}), ""},
		{"prebuilt binary", []string{"--bin", "./srv", "--arms", "default,upx", "-q"},
			with(func(o *buildOptions) { o.Bin.Path = "./srv"; o.Arms = builds.ArmList{"default", "upx"}; o.Quiet = true }), ""},
		{"prebuilt binary, arms that apply", []string{"--bin", "./srv"},
			with(func(o *buildOptions) { o.Bin.Path = "./srv"; o.Arms = builds.ArmList{"default", "upx"} }), ""},
		{"named binaries", []string{"--bin", "a=./srv", "--bin", "b=./srv"},
			with(func(o *buildOptions) {
				o.Bin.Named = []campaign.Binary{{Name: "a", Path: "./srv"}, {Name: "b", Path: "./srv"}}
				o.Arms = nil
			}), ""},
		{"named binaries and arms", []string{"--bin", "a=./srv", "--arms", "upx"}, nil, "--arms and --bin ARM=PATH: --bin names its own arms"},
		{"path and named binary", []string{"--bin", "./srv", "--bin", "a=./srv"}, nil, "PATH and ARM=PATH do not mix"},
		{"unknown arm", []string{"--arms", "default,gcc"}, nil, `--arms: unknown arm "gcc" (known: default, pgo, static, upx`},
		{"unknown upx level", []string{"--upx-level", "brute"}, nil, `--upx-level: unknown upx level "brute" (known: default, best, lzma)`},
		{"unknown format", []string{"-o", "xml"}, nil, `--output: unknown format "xml"`},
		{"bin and package", []string{"--bin", "./srv", "./cmd/x"}, nil, "--bin ./srv and PKG ./cmd/x: give one or the other"},
		{"short profile", []string{"--pgo-duration", "100ms"}, nil, "--pgo-duration: 100ms, want at least 1s"},
		{"two packages", []string{"./a", "./b"}, nil, `want at most one PKG, got ["./a" "./b"]`},
		{"pgo load from the user", []string{"--arms", "pgo", "--pgo-call", "/a.B/C", "--pgo-data", "{}", "--env", "K=V", "./cmd/x", "--", "-listen", "{addr}"},
			with(func(o *buildOptions) {
				o.Arms = builds.ArmList{"pgo"}
				o.PGOLoad = cliopts.PGOLoad{Call: "/a.B/C", Data: "{}"}
				o.Env = []string{"K=V"}
				o.Pkg, o.ServerArgs = "./cmd/x", []string{"-listen", "{addr}"}
			}), ""},
		{"a named profile source adds the pgo arm", []string{"--pgo-profile", "cpu.pprof"},
			with(func(o *buildOptions) {
				o.Arms = builds.ArmList{"default", "static", "upx", "pgo"}
				o.PGOProfile = "cpu.pprof"
			}), ""},
		{"a pgo load adds the pgo arm", []string{"--pgo-load", "hey {addr}"},
			with(func(o *buildOptions) {
				o.Arms = builds.ArmList{"default", "static", "upx", "pgo"}
				o.PGOLoad = cliopts.PGOLoad{Command: "hey {addr}"}
			}), ""},
		{"a pgo source without the pgo arm", []string{"--arms", "default,static", "--pgo-call", "/a.B/C"}, nil,
			"--pgo-call: the pgo arm is not among --arms default,static; add pgo to --arms, or leave --arms out"},
		{"pgo load and profile", []string{"--pgo-load", "hey {addr}", "--pgo-profile", "cpu.pprof"}, nil, "--pgo-load with --pgo-profile"},
		{"pgo load placeholder", []string{"--pgo-load", "hey {url}"}, nil, "--pgo-load: server arguments: unknown placeholder {url}"},
		{"verbose and quiet", []string{"-v", "-q"}, nil, "none of the others can be"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := parseFlags(t, "build", newBuildCmd, tt.args, tt.wantErr)
			if got == nil {
				return
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreUnexported(buildOptions{})); diff != "" {
				t.Errorf("build %q options (-want +got):\n%s", tt.args, diff)
			}
		})
	}
}

// TestRunBuild builds a prebuilt binary as-is (no compiler run) and a
// missing upx, through the command's real run function: rows on stdout for
// what built, an error for what did not.
func TestRunBuild(t *testing.T) {
	o := &buildOptions{Bin: cliopts.Bins{Path: "/bin/true"}, Arms: builds.ArmList{"default"}, UPXLevel: builds.UPXDefault,
		PGODuration: time.Second, Output: render.JSON, CacheDir: t.TempDir(), Quiet: true}
	var out bytes.Buffer
	if err := runBuild(context.Background(), o, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"arm": "default"`, `"path": "/bin/true"`, `"flags": "as-is"`, `"size_bytes"`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("build -o json output lacks %s:\n%s", want, out.String())
		}
	}
	o.Arms = builds.ArmList{"default", "static"}
	o.Output = render.Table
	out.Reset()
	err := runBuild(context.Background(), o, &out)
	if err == nil || !strings.Contains(err.Error(), "static arm of /bin/true") {
		t.Errorf("static arm of a binary: error %v, want it refused", err)
	}
	if !strings.HasPrefix(out.String(), "arm ") || !strings.Contains(out.String(), "as-is") {
		t.Errorf("table output:\n%s\nwant a header and the default row", out.String())
	}

	// The same binary under two names: two arms, each as it is.
	o.Bin = cliopts.Bins{Named: []campaign.Binary{{Name: "a", Path: "/bin/true"}, {Name: "b", Path: "/bin/true"}}}
	o.Arms = nil
	o.Output = render.CSV
	out.Reset()
	if err := runBuild(context.Background(), o, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\na,", "\nb,"} {
		if !strings.Contains(out.String(), want) || !strings.Contains(out.String(), "as-is") {
			t.Errorf("build --bin a=/bin/true --bin b=/bin/true output lacks row %q:\n%s", want[1:], out.String())
		}
	}
}

func TestBuildRows(t *testing.T) {
	arts := []builds.Artifact{
		{Arm: "default", SizeBytes: 19051830, BuildMs: 1191.4, Path: "/c/1/echo"},
		{},
		{Arm: "pgo", SizeBytes: 19158996, BuildMs: 225106, Flags: "-pgo=/c/profiles/9/default.pgo", Profile: "/c/2/default.pgo", ProfileNote: "/c/2/profile.json", Cached: true},
		{Arm: "static", SizeBytes: 12996770, Flags: "CGO_ENABLED=0 -trimpath '-ldflags=-s -w'", Instrumented: true},
	}
	errs := []error{nil, errors.New("upx not found"), nil, nil}
	built, rows := buildRows(arts, errs)
	want := []buildRow{
		{Arm: "default", SizeBytes: 19051830, BuildMs: 1191.4},
		{Arm: "pgo", SizeBytes: 19158996, BuildMs: 225106, Flags: "-pgo=default.pgo (collected)", Cached: true},
		{Arm: "static", SizeBytes: 12996770, Flags: "CGO_ENABLED=0 -trimpath '-ldflags=-s -w'", Instrumented: true},
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("buildRows rows (-want +got):\n%s", diff)
	}
	if len(built) != 3 || built[1].Profile != "/c/2/default.pgo" {
		t.Errorf("buildRows kept %+v, want the three built artifacts whole", built)
	}
	if got := dedupe([]error{errs[1], nil, errors.New("upx not found")}); len(got) != 1 {
		t.Errorf("dedupe kept %v, want one error", got)
	}
}
