package main

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/coldstart-go/coldstart/budget"
	"github.com/coldstart-go/coldstart/campaign"
	"github.com/coldstart-go/coldstart/cmd/internal/cliopts"
	"github.com/coldstart-go/coldstart/internal/render"
)

// optsCmp compares parsed options by their exported fields (the flag
// values' own bookkeeping and the error writer aside).
var optsCmp = cmp.Options{
	cmp.AllowUnexported(runOptions{}, explainOptions{}), // the embedded serverOptions
	cmpopts.IgnoreUnexported(serverOptions{}, cliopts.Common{}, cliopts.Arms{}, budget.List{}, cliopts.Variants{}),
	cmpopts.IgnoreFields(cliopts.Common{}, "User"), // --run-as parsed: whoever runs the test
	cmpopts.EquateEmpty(),
}

func TestRunFlags(t *testing.T) {
	base := func(mod func(*runOptions)) runOptions {
		o := runOptions{serverOptions: newServerOptions(defaultArms), AutoRuns: true, Confidence: 0.95, Transport: "tcp", PageCache: "warm", Timeout: 30 * time.Second, Cluster: cliopts.NewCluster(),
			Precision: 0.03, MaxRuns: 60}
		if mod != nil {
			mod(&o)
		}
		return o
	}
	arms := func(names ...string) cliopts.Arms { return cliopts.Arms{Names: names} }
	tests := []struct {
		name    string
		args    []string
		want    runOptions
		wantErr string
	}{
		{name: "defaults", want: base(nil)},
		{name: "arms runs pkg and server args",
			args: []string{"-n", "5", "--arms", "default,upx", "./cmd/api", "-o", "json", "--", "--listen={addr}"},
			want: base(func(o *runOptions) {
				o.Runs, o.AutoRuns, o.Arms, o.Pkg, o.Output, o.ServerArgs = 5, false, arms("default", "upx"), "./cmd/api", render.JSON, []string{"--listen={addr}"}
			})},
		{name: "budgets and pinning", args: []string{"--budget", "cpus=0;max", "--pin-prober", "1", "--transport", "unix"},
			want: base(func(o *runOptions) {
				o.Budgets.Budgets, o.PinProber, o.Transport = []budget.Budget{{CPUs: []int{0}}, {}}, budget.CPUList{1}, "unix"
			})},
		{name: "pin server", args: []string{"--pin-server", "0"},
			want: base(func(o *runOptions) { o.PinServer = budget.CPUList{0} })},
		{name: "env and probe", args: []string{"--env", "A=1", "--env", "B=x=y", "--probe", "tcp", "--bin", "/bin/true"},
			want: base(func(o *runOptions) {
				o.Env, o.Probe, o.Bin.Path, o.Arms = []string{"A=1", "B=x=y"}, "tcp", "/bin/true", arms("default", "upx")
			})},
		// A binary can only be itself or packed: those are its default arms.
		{name: "bin alone measures the arms that apply", args: []string{"--bin", "/bin/true"},
			want: base(func(o *runOptions) { o.Bin.Path, o.Arms = "/bin/true", arms("default", "upx") })},
		{name: "bin with arms keeps them", args: []string{"--bin", "/bin/true", "--arms", "upx"},
			want: base(func(o *runOptions) { o.Bin.Path, o.Arms = "/bin/true", arms("upx") })},
		{name: "named bins are their own arms", args: []string{"--bin", "a=/bin/true", "--bin", "b=/bin/false"},
			want: base(func(o *runOptions) {
				o.Bin.Named, o.Arms = []campaign.Binary{{Name: "a", Path: "/bin/true"}, {Name: "b", Path: "/bin/false"}}, arms()
			})},
		{name: "start arms", args: []string{"--arms", "prebound,snapshot", "--start-from", "static"},
			want: base(func(o *runOptions) { o.Arms, o.StartFrom = arms("prebound", "snapshot"), "static" })},
		{name: "upx level", args: []string{"--upx-level", "lzma"}, want: base(func(o *runOptions) { o.UPXLevel = "lzma" })},
		{name: "on knative", args: []string{"--on", "knative", "--namespace", "cs", "--target", "127.0.0.1:80", "--arms", "image"},
			want: base(func(o *runOptions) {
				o.On, o.Namespace, o.Target, o.Arms = "knative", "cs", "127.0.0.1:80", arms("image")
				o.Runs, o.AutoRuns = fixedRuns, false
			})},
		{name: "via activator", args: []string{"--on", "knative", "--via", "activator", "--target", "10.234.0.31:81", "--arms", "image"},
			want: base(func(o *runOptions) {
				o.On, o.Via, o.Target, o.Arms = "knative", "activator", "10.234.0.31:81", arms("image")
				o.Runs, o.AutoRuns = fixedRuns, false
			})},
		{name: "traces", args: []string{"--on", "knative", "--via", "activator", "--target", "10.234.0.31:81", "--traces", "10.233.0.1:9411"},
			want: base(func(o *runOptions) {
				o.On, o.Via, o.Target, o.Traces = "knative", "activator", "10.234.0.31:81", "10.233.0.1:9411"
				o.Runs, o.AutoRuns = fixedRuns, false
			})},
		// Deployed Services are measured by name: any arm, any prefix.
		{name: "on knative, a user's service", args: []string{"--on", "knative", "--arms", "myservice", "--name-prefix", "team-"},
			want: base(func(o *runOptions) {
				o.On, o.Arms, o.NamePrefix = "knative", arms("myservice"), "team-"
				o.Runs, o.AutoRuns = fixedRuns, false
			})},
		{name: "a user's service is no local arm", args: []string{"--arms", "myservice"},
			wantErr: `--arms: unknown arm "myservice" (known: default, pgo, static, upx, image, prebound, snapshot)`},
		{name: "name prefix locally", args: []string{"--name-prefix", "team-"}, wantErr: "--name-prefix: only with --on knative"},
		{name: "on knative, not a service name", args: []string{"--on", "knative", "--arms", "my.service"}, wantErr: `--arms my.service (--name-prefix "coldstart-"): service name "coldstart-my.service"`},
		{name: "traces without a port", args: []string{"--on", "knative", "--traces", "10.233.0.1"}, wantErr: `--traces: "10.233.0.1", want HOST:PORT`},
		{name: "traces locally", args: []string{"--traces", "127.0.0.1:9411"}, wantErr: "--traces: only with --on knative"},
		{name: "pull image", args: []string{"--on", "knative", "--arms", "static", "--lever", "pull=10Mbit", "--pull-image", "static=/bin/true"},
			want: base(func(o *runOptions) {
				o.On, o.Arms, o.Levers, o.PullImages = "knative", arms("static"), []string{"pull=10Mbit"}, []string{"static=/bin/true"}
				o.Runs, o.AutoRuns = fixedRuns, false
			})},
		{name: "pull image without a pull lever", args: []string{"--on", "knative", "--arms", "static", "--lever", "no-token", "--pull-image", "static=/bin/true"},
			wantErr: "--pull-image: only with --on knative and a --lever pull=BANDWIDTH or pull=cached"},
		{name: "pull image of another arm", args: []string{"--on", "knative", "--arms", "static", "--lever", "pull=cached", "--pull-image", "upx=/bin/true"},
			wantErr: "--pull-image upx=/bin/true: not an arm of --arms (static)"},
		{name: "pull image not ARM=PATH", args: []string{"--on", "knative", "--arms", "static", "--lever", "pull=cached", "--pull-image", "/bin/true"},
			wantErr: `--pull-image: "/bin/true", want ARM=PATH`},
		{name: "pull image missing", args: []string{"--on", "knative", "--arms", "static", "--lever", "pull=cached", "--pull-image", "static=/no/such.tar"},
			wantErr: "--pull-image static: stat /no/such.tar: no such file or directory"},
		{name: "pull image twice", args: []string{"--on", "knative", "--arms", "static", "--lever", "pull=cached", "--pull-image", "static=/bin/true", "--pull-image", "static=/bin/true"},
			wantErr: "--pull-image: arm static given twice"},
		{name: "via activator needs its address", args: []string{"--on", "knative", "--via", "activator"}, wantErr: "--via activator: give the activator's address"},
		{name: "unknown place", args: []string{"--on", "mars"}, wantErr: `--on: "mars", want local or knative`},
		{name: "cold page cache", args: []string{"--page-cache", "cold"}, want: base(func(o *runOptions) { o.PageCache = "cold" })},
		{name: "unknown page cache", args: []string{"--page-cache", "tepid"}, wantErr: `--page-cache: "tepid", want warm or cold`},
		{name: "cold page cache on knative", args: []string{"--on", "knative", "--page-cache", "cold"}, wantErr: "--page-cache cold evicts files on this machine"},
		{name: "zero runs", args: []string{"-n", "0"}, wantErr: "--runs: 0, want at least 1"},
		{name: "a pgo load adds the pgo arm", args: []string{"--pgo-call", "/a.B/C"}, want: base(func(o *runOptions) {
			o.Arms = arms("default", "static", "upx", "pgo", "image")
			o.PGOLoad.Call = "/a.B/C"
		})},
		{name: "a pgo profile without the pgo arm", args: []string{"--arms", "default,static", "--pgo-profile", "cpu.pprof"},
			wantErr: "--pgo-profile: the pgo arm is not among --arms default,static; add pgo to --arms, or leave --arms out"},
		{name: "runs auto", args: []string{"--runs", "auto"}, want: base(nil)},
		{name: "a number of runs", args: []string{"-n", "20"}, want: base(func(o *runOptions) { o.Runs, o.AutoRuns = 20, false })},
		{name: "a burst counts rounds", args: []string{"--burst", "1,4"},
			want: base(func(o *runOptions) { o.Runs, o.AutoRuns, o.Burst, o.BurstGiven = fixedRuns, false, "1,4", true })},
		{name: "a burst with runs auto", args: []string{"--burst", "1,4", "--runs", "auto"}, wantErr: "--burst: give --runs a number of rounds, not auto"},
		{name: "runs auto to 1% within 100", args: []string{"-n", "auto", "--precision", "0.01", "--max-runs", "100"},
			want: base(func(o *runOptions) { o.Runs, o.AutoRuns, o.Precision, o.MaxRuns = 0, true, 0.01, 100 })},
		{name: "runs neither a number nor auto", args: []string{"--runs", "lots"}, wantErr: `"lots", want a number of runs or auto`},
		{name: "precision as a percentage", args: []string{"--runs", "auto", "--precision", "3"}, wantErr: "--precision: 3, want a fraction of the median between 0 and 1"},
		{name: "cap below 6", args: []string{"--runs", "auto", "--max-runs", "5"}, wantErr: "--max-runs: 5, want at least 6"},
		{name: "runs auto on knative", args: []string{"--on", "knative", "--runs", "auto"}, wantErr: "--runs auto: only with --on local"},
		{name: "confidence as a percentage", args: []string{"--confidence", "95"}, wantErr: "--confidence: 95: confidence level must be between 0 and 1"},
		{name: "confidence 99%", args: []string{"--confidence", "0.99"}, want: base(func(o *runOptions) { o.Confidence = 0.99 })},
		{name: "bad transport", args: []string{"--transport", "udp"}, wantErr: `--transport: "udp", want tcp or unix`},
		{name: "unknown arm names the start arms too", args: []string{"--arms", "gcc"},
			wantErr: `--arms: unknown arm "gcc" (known: default, pgo, static, upx, image, prebound, snapshot)`},
		{name: "start from a start arm", args: []string{"--arms", "prebound", "--start-from", "snapshot"}, wantErr: `--start-from: "snapshot" is a start arm`},
		{name: "start from an unknown arm", args: []string{"--arms", "prebound", "--start-from", "gcc"}, wantErr: `--start-from: unknown arm "gcc"`},
		{name: "cpu that does not exist", args: []string{"--budget", "cpus=1000"}, wantErr: "--budget: CPU 1000 in"},
		{name: "pin prober to a cpu that does not exist", args: []string{"--pin-prober", "1000"}, wantErr: "--pin-prober: CPU 1000 in"},
		{name: "pin server to a quota", args: []string{"--pin-server", "0,cores=1"}, wantErr: `--pin-server: "0,cores=1": want CPUs only`},
		{name: "bad upx level", args: []string{"--upx-level", "ultra"}, wantErr: `--upx-level: unknown upx level "ultra" (known: default, best, lzma)`},
		{name: "bad env", args: []string{"--env", "NOEQUALS"}, wantErr: `--env: "NOEQUALS", want K=V`},
		{name: "env with an unknown placeholder", args: []string{"--env", "A={prt}"}, wantErr: `--env: server arguments: unknown placeholder {prt} in "A={prt}"`},
		{name: "image not NAME=SOURCE", args: []string{"--image", "./img"}, wantErr: `--image: "./img", want NAME=LAYOUT`},
		{name: "image arm name", args: []string{"--image", "Orders=./img"}, wantErr: `--image: arm name "Orders"`},
		{name: "probe metadata for a health probe", args: []string{"--probe-metadata", "authorization=x"},
			wantErr: "--proto, --protoset, --probe-metadata: only for a /pkg.Svc/Method probe, not --probe grpc-health"},
		{name: "probe metadata without =", args: []string{"--probe", "/a.B/C", "--probe-metadata", "authorization"},
			wantErr: `--probe-metadata: an entry without a key before "="`},
		{name: "import paths without a proto", args: []string{"--probe", "/a.B/C", "-i", "api"}, wantErr: "--import-paths: only with --proto"},
		{name: "proto and protoset", args: []string{"--probe", "/a.B/C", "--proto", "a.proto", "--protoset", "a.protoset"}, wantErr: "[proto protoset] were all set"},
		{name: "protoset that is not there", args: []string{"--probe", "/a.B/C", "--protoset", "/nonexistent.protoset"},
			wantErr: "--protoset: read protoset /nonexistent.protoset"},
		{name: "method the proto lacks", args: []string{"--probe", "/coldstart.test.v1.Count/Sum", "--proto", "../../internal/testservers/testserver/count.proto"},
			wantErr: "--proto: ../../internal/testservers/testserver/count.proto: service coldstart.test.v1.Count has no method Sum (methods: Count, Last)"},
		{name: "bin and pkg", args: []string{"--bin", "/bin/true", "./cmd/api"}, wantErr: "give one or the other"},
		{name: "named bins and arms", args: []string{"--bin", "a=/bin/true", "--arms", "upx"}, wantErr: "--arms and --bin ARM=PATH: --bin names its own arms"},
		{name: "two packages", args: []string{"./a", "./b"}, wantErr: "server arguments go after --"},
		{name: "prebuilt", args: []string{"--prebuilt", "/arms", "--arms", "default,static"},
			want: base(func(o *runOptions) { o.Prebuilt, o.Arms = "/arms", arms("default", "static") })},
		{name: "prebuilt and bin", args: []string{"--prebuilt", "/arms", "--bin", "/bin/true"}, wantErr: "--prebuilt /arms: the arms are built already"},
		{name: "bad output", args: []string{"-o", "yaml"}, wantErr: `unknown format "yaml"`},
		{name: "bad addr", args: []string{"--addr", "unix:relative.sock"}, wantErr: `--addr: "unix:relative.sock": a Unix socket needs an absolute path`},
		{name: "unknown probe", args: []string{"--probe", "ftp://x"}, wantErr: `--probe: unknown probe "ftp://x" (known: `},
		{name: "probe not loopback", args: []string{"--probe", "http://10.0.0.1/"}, wantErr: `--probe: "http://10.0.0.1/": host "10.0.0.1" is not loopback`},
		{name: "request for a health probe", args: []string{"--probe-request", "{}"}, wantErr: "--probe-request: the health probe takes no request"},
		{name: "request not JSON", args: []string{"--probe", "/a.B/C", "--probe-request", "{"}, wantErr: `--probe-request: not valid JSON: "{"`},
		{name: "pin-server with budget", args: []string{"--pin-server", "0", "--budget", "max"}, wantErr: "pin-server"},
		{name: "quiet and verbose", args: []string{"-q", "-v"}, wantErr: "[quiet verbose] were all set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := parseFlags(t, "run", newRunCmd, tt.args, tt.wantErr)
			if got == nil {
				return
			}
			if diff := cmp.Diff(tt.want, *got, optsCmp); diff != "" {
				t.Errorf("run %q options (-want +got):\n%s", tt.args, diff)
			}
		})
	}
}

func TestDensityFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    int
		wantErr string
	}{
		{name: "default", want: 8},
		{name: "instances", args: []string{"--instances", "3", "--arms", "static,upx"}, want: 3},
		{name: "zero instances", args: []string{"--instances", "0"}, wantErr: "--instances: 0, want at least 1"},
		{name: "two budgets", args: []string{"--budget", "max;cpus=0"}, wantErr: "--budget: max;cpus=0 is 2 budgets; density runs every instance under one"},
		{name: "fixed addr", args: []string{"--addr", "127.0.0.1:9000"}, wantErr: "--addr"},
		{name: "baseline", args: []string{"--arms", "static,upx", "--baseline", "upx"}, want: 8},
		{name: "baseline not measured", args: []string{"--arms", "static,upx", "--baseline", "default"}, wantErr: `--baseline: "default" is not measured (arms: static, upx)`},
		{name: "baseline a named binary", args: []string{"--bin", "api=/bin/true", "--bin", "old=/bin/true", "--baseline", "old"}, want: 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := parseFlags(t, "density", newDensityCmd, tt.args, tt.wantErr)
			if got == nil {
				return
			}
			if got.Instances != tt.want {
				t.Errorf("density %q: instances %d, want %d", tt.args, got.Instances, tt.want)
			}
		})
	}
}
