package cliopts

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/spf13/cobra"

	"github.com/coldstart-go/coldstart/budget"
	"github.com/coldstart-go/coldstart/builds"
	"github.com/coldstart-go/coldstart/campaign"
	"github.com/coldstart-go/coldstart/internal/render"
)

// parse runs a command with the shared flags bound on args and returns
// them after Validate.
func parse(args ...string) (*Common, error) {
	c := New("tool", []string{"default", "static"}, "prebound")
	cmd := &cobra.Command{
		Use: "run", SilenceUsage: true, SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			c.SetArgs(cmd, args)
			return c.Validate()
		},
	}
	c.Bind(cmd, "")
	cmd.SetArgs(args)
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	return &c, cmd.Execute()
}

func TestFlags(t *testing.T) {
	defaults := func(mod func(*Common)) Common {
		c := New("tool", []string{"default", "static"}, "prebound")
		if mod != nil {
			mod(&c)
		}
		return c
	}
	tests := []struct {
		name string
		args []string
		want Common
	}{
		{name: "defaults", want: defaults(nil)},
		{name: "pkg and server args", args: []string{"./cmd/api", "--", "--listen={addr}"},
			want: defaults(func(c *Common) { c.Pkg, c.ServerArgs = "./cmd/api", []string{"--listen={addr}"} })},
		{name: "arms, all and the command's own", args: []string{"--arms", "upx, prebound,upx"},
			want: defaults(func(c *Common) { c.Arms.Names = []string{"upx", "prebound"} })},
		{name: "all is every build arm", args: []string{"--arms", "all"},
			want: defaults(func(c *Common) { c.Arms.Names = builds.Known() })},
		// A binary can only be itself or packed: those are its default arms.
		{name: "bin PATH takes the arms that apply", args: []string{"--bin", "/bin/true"},
			want: defaults(func(c *Common) { c.Bin.Path, c.Arms.Names = "/bin/true", []string{"default", "upx"} })},
		{name: "bin PATH with arms keeps them", args: []string{"--bin", "/bin/true", "--arms", "upx"},
			want: defaults(func(c *Common) { c.Bin.Path, c.Arms.Names = "/bin/true", []string{"upx"} })},
		{name: "a path with = in it", args: []string{"--bin", "./build=1/server"},
			want: defaults(func(c *Common) { c.Bin.Path, c.Arms.Names = "./build=1/server", []string{"default", "upx"} })},
		{name: "bin ARM=PATH names its arms", args: []string{"--bin", "a=/bin/true", "--bin", "b.2=/bin/true"},
			want: defaults(func(c *Common) {
				c.Bin.Named, c.Arms.Names = []campaign.Binary{{Name: "a", Path: "/bin/true"}, {Name: "b.2", Path: "/bin/true"}}, nil
			})},
		{name: "typed values", args: []string{"--upx-level", "best", "--budget", "cpus=0;max", "--budget", "cores=0.5", "-o", "csv", "-q", "--pgo-duration", "3s"},
			want: defaults(func(c *Common) {
				c.UPXLevel, c.Budgets.Budgets, c.Output, c.Quiet, c.PGODuration = builds.UPXBest, []budget.Budget{{CPUs: []int{0}}, {}, {Cores: 0.5}}, render.CSV, true, 3*time.Second
			})},
		// -C is made absolute: the builds' records name it wherever run.
		{name: "module dir", args: []string{"-C", "../cliopts", "."},
			want: defaults(func(c *Common) { c.ModuleDir, c.Pkg = mustAbs(t, "."), "." })},
		{name: "env and verbose", args: []string{"--env", "A=1", "--env", "B=x=y", "-v"},
			want: defaults(func(c *Common) { c.Env, c.Verbose = []string{"A=1", "B=x=y"}, true })},
		{name: "hooks", args: []string{"--setup", "pg.sh start {tmpdir}", "--prepare", "echo {arm} {addr}", "--cleanup", "pg.sh stop {tmpdir}", "--hook-timeout", "5s"},
			want: defaults(func(c *Common) {
				c.HookFlags = HookFlags{Setup: "pg.sh start {tmpdir}", Prepare: "echo {arm} {addr}", Cleanup: "pg.sh stop {tmpdir}", HookTimeout: 5 * time.Second}
			})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parse(tt.args...)
			if err != nil {
				t.Fatalf("parse(%q) = %v", tt.args, err)
			}
			if diff := cmp.Diff(tt.want, *got, cmpopts.IgnoreUnexported(Common{}, Arms{}, budget.List{}, Variants{}), cmpopts.IgnoreFields(Common{}, "User"), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("parse(%q) (-want +got):\n%s", tt.args, diff)
			}
		})
	}
}

// TestFlagErrors: each bad input is refused naming the flag, the value and
// what the flag takes.
func TestFlagErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--arms", "gcc"}, `--arms: unknown arm "gcc" (known: default, pgo, static, upx, image, prebound)`},
		{[]string{"--arms", ","}, `--arms: no arms named (known: default, pgo, static, upx, image, prebound)`},
		{[]string{"--upx-level", "ultra"}, `--upx-level: unknown upx level "ultra" (known: default, best, lzma)`},
		{[]string{"--budget", "gpus=1"}, `--budget: unknown key "gpus" in "gpus=1" (known: cpus=LIST, cores=N, mem=SIZE, or max)`},
		{[]string{"--budget", "cpus=1000"}, `--budget: CPU 1000 in "cpus=1000" is not one this machine lets us use`},
		{[]string{"--budget", ""}, `--budget: empty budget list`},
		{[]string{"--bin", ""}, `--bin: empty path: want ARM=PATH or PATH`},
		{[]string{"--bin", "=/bin/true"}, `--bin: "=/bin/true": want ARM=PATH or PATH`},
		{[]string{"--bin", "a="}, `--bin: "a=": want ARM=PATH or PATH`},
		{[]string{"--bin", "Api=/bin/true"}, `--bin: "Api=/bin/true": arm name "Api": use lower-case letters, digits, '-', '_' and '.'`},
		{[]string{"--bin", "a=/x", "--bin", "a=/y"}, `--bin: arm "a" given twice`},
		{[]string{"--bin", "/x", "--bin", "/y"}, `--bin: /x and /y: give one PATH (measured as default and upx), or ARM=PATH for each binary`},
		{[]string{"--bin", "/x", "--bin", "a=/y"}, `--bin: "a=/y": PATH and ARM=PATH do not mix`},
		{[]string{"--bin", "a=/x", "--bin", "/y"}, `--bin: "/y": PATH and ARM=PATH do not mix`},
		{[]string{"--bin", "a=/x", "--arms", "static"}, `--arms and --bin ARM=PATH: --bin names its own arms`},
		{[]string{"--bin", "/x", "./cmd/api"}, `--bin /x and PKG ./cmd/api: give one or the other`},
		{[]string{"./a", "./b"}, `want at most one PKG, got ["./a" "./b"] (server arguments go after --)`},
		{[]string{"--env", "NOEQUALS"}, `--env: "NOEQUALS", want K=V`},
		{[]string{"--pgo-duration", "100ms"}, `--pgo-duration: 100ms, want at least 1s`},
		{[]string{"--pgo-load", "hey {addr}", "--pgo-profile", "cpu.pprof"}, `--pgo-load with --pgo-profile: the profile is given, nothing is collected; give one or the other`},
		{[]string{"--pgo-call", "/a.B/C", "--pgo-profile", "cpu.pprof"}, `--pgo-call with --pgo-profile: the profile is given, nothing is collected; give one or the other`},
		{[]string{"--pgo-load", "hey {addr}", "--pgo-call", "/a.B/C"}, `--pgo-load with --pgo-call: give one load or the other`},
		{[]string{"--pgo-data", "{}"}, `--pgo-data: only with --pgo-call`},
		{[]string{"--pgo-load", "hey {url}"}, `--pgo-load: server arguments: unknown placeholder {url}`},
		{[]string{"--pgo-call", "/a.B/C", "--pgo-metadata", "novalue"}, `--pgo-metadata: `},
		{[]string{"-C", "/tmp"}, `-C /tmp: name the package to build there`},
		{[]string{"-C", "/nonexistent/module", "."}, `-C: stat /nonexistent/module: no such file or directory`},
		{[]string{"-C", "/tmp", "--bin", "/bin/true"}, `-C /tmp: builds PKG there; --bin is a binary already built`},
		{[]string{"-C", "/bin/true", "."}, `-C /bin/true: not a directory`},
		{[]string{"-o", "yaml"}, `-o`},
		{[]string{"-q", "-v"}, `[quiet verbose] were all set`},
		{[]string{"--run-as", "no-such-user-here"}, `no-such-user-here`},
		{[]string{"--cleanup", "rm -r {socket}"}, `--cleanup: unknown placeholder {socket} (known: {tmpdir})`},
		{[]string{"--prepare", "echo {debug_addr}"}, `--prepare: unknown placeholder {debug_addr} (known: {tmpdir}, {arm}, {addr}, {host}, {port}, {socket})`},
		{[]string{"--hook-timeout", "-1s"}, `--hook-timeout: -1s, want a positive duration`},
	}
	for _, tt := range tests {
		_, err := parse(tt.args...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("parse(%q) = %v, want an error containing %q", tt.args, err, tt.want)
		}
	}
}

func TestParseBin(t *testing.T) {
	tests := []struct {
		in, name, path, err string
	}{
		{in: "/bin/true", path: "/bin/true"},
		{in: "server", path: "server"},
		{in: "api=./server", name: "api", path: "./server"},
		{in: "a-1_b.c=/x=y", name: "a-1_b.c", path: "/x=y"},
		{in: "./dir=1/server", path: "./dir=1/server"},
		{in: "", err: "empty path"},
		{in: "=x", err: `"=x": want ARM=PATH or PATH`},
		{in: "a=", err: `"a=": want ARM=PATH or PATH`},
		{in: "A=x", err: `arm name "A"`},
		{in: "-a=x", err: `arm name "-a"`},
	}
	for _, tt := range tests {
		name, path, err := ParseBin(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseBin(%q) = %v, want an error containing %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || name != tt.name || path != tt.path {
			t.Errorf("ParseBin(%q) = %q, %q, %v, want %q, %q", tt.in, name, path, err, tt.name, tt.path)
		}
	}
}

// FuzzParseBin: --bin's grammar never panics, a name it accepts is a valid
// arm name, and what it accepts reads back the same once written out.
func FuzzParseBin(f *testing.F) {
	for _, s := range []string{"/bin/true", "api=./server", "./d=1/s", "=x", "a=", "A=x", "a=b=c", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		name, path, err := ParseBin(s)
		if err != nil {
			return
		}
		if path == "" {
			t.Fatalf("ParseBin(%q) accepted an empty path", s)
		}
		if name == "" {
			if path != s {
				t.Fatalf("ParseBin(%q) = path %q, want the whole value", s, path)
			}
			return
		}
		if err := campaign.CheckArmName(name); err != nil {
			t.Fatalf("ParseBin(%q) accepted arm %q: %v", s, name, err)
		}
		n2, p2, err := ParseBin(name + "=" + path)
		if err != nil || n2 != name || p2 != path {
			t.Fatalf("ParseBin(%q) = %q %q; written back it reads %q %q %v", s, name, path, n2, p2, err)
		}
	})
}

// TestBuildArmsRecordsOnce: the one arm-building path records every
// artifact and every arm that could not be made once, names the latter on
// the error writer, measures the rest, and End says which were not.
func TestBuildArmsRecordsOnce(t *testing.T) {
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	c, err := parse("--bin", "a="+bin, "--bin", "b="+bin, "--bin", "gone="+filepath.Join(dir, "no-such-server"), "--results-dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	var notes bytes.Buffer
	c.stderr = &notes
	r, err := c.CreateResults("test", map[string]string{"where": "here"})
	if err != nil {
		t.Fatal(err)
	}
	built, err := c.BuildArms(context.Background(), r, campaign.ArmsConfig{})
	defer built.Close()
	if err != nil {
		t.Fatalf("BuildArms = %v", err)
	}
	if got := campaign.ArmNames(built.Arms); got != "a, b" {
		t.Errorf("built arms %q, want a, b", got)
	}
	for _, a := range built.Arms {
		if a.Path != bin {
			t.Errorf("arm %s path %q, want the binary as it is, %q", a.Name, a.Path, bin)
		}
	}
	if !strings.Contains(notes.String(), "tool: not measured: gone arm: ") {
		t.Errorf("notes %q do not name the arm that could not be made", notes.String())
	}

	rows := []struct {
		Arm string `json:"arm"`
	}{{"a"}, {"b"}}
	var out bytes.Buffer
	err = r.End(&out, Rows(render.CSV, rows), nil, built)
	if err == nil || !strings.Contains(err.Error(), "measured a, b only: gone arm: ") {
		t.Errorf("End = %v, want an error naming what was measured and what was not", err)
	}
	if out.String() != "arm\na\nb\n" {
		t.Errorf("End printed %q, want the rows measured", out.String())
	}
	if !strings.Contains(notes.String(), "tool: results in "+r.Path()) {
		t.Errorf("notes %q do not say where the results are", notes.String())
	}

	kinds := map[string][]string{}
	f, err := os.Open(r.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec struct {
			Kind  string            `json:"kind"`
			Arm   string            `json:"arm"`
			Error string            `json:"error"`
			Notes map[string]string `json:"notes"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		kinds[rec.Kind] = append(kinds[rec.Kind], rec.Arm+rec.Error)
		if rec.Kind == "provenance" && rec.Notes["where"] != "here" {
			t.Errorf("provenance notes %v, want where=here", rec.Notes)
		}
	}
	if diff := cmp.Diff([]string{"a", "b"}, kinds["artifact"]); diff != "" {
		t.Errorf("artifact records (-want +got):\n%s", diff)
	}
	if n := len(kinds["build_error"]); n != 1 || !strings.HasPrefix(kinds["build_error"][0], "gone arm: ") {
		t.Errorf("build_error records %q, want one for the gone arm", kinds["build_error"])
	}
	if n := len(kinds["provenance"]); n != 1 {
		t.Errorf("%d provenance records, want 1", n)
	}
}

// TestEndInterrupted: an interrupted campaign still says where its results
// are and prints what it finished, then returns its error.
func TestEndInterrupted(t *testing.T) {
	c, err := parse("--results-dir", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var notes, out bytes.Buffer
	c.stderr = &notes
	r, err := c.CreateResults("test", nil)
	if err != nil {
		t.Fatal(err)
	}
	rows := []struct {
		Arm string `json:"arm"`
	}{{"a"}}
	err = r.End(&out, Rows(render.CSV, rows), context.Canceled, campaign.Built{})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("End = %v, want the campaign's error", err)
	}
	if out.String() != "arm\na\n" || !strings.Contains(notes.String(), "results in") {
		t.Errorf("End printed %q and noted %q, want the row and where the results are", out.String(), notes.String())
	}
	out.Reset()
	if err := r.End(&out, Rows[struct{}](render.JSON, nil), nil, campaign.Built{}); err != nil || out.Len() != 0 {
		t.Errorf("End with no rows = %v and printed %q, want nothing", err, out.String())
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}
