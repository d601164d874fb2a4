package main

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/coldstart-go/coldstart/internal/render"
)

func defaultServerOptions() serverOptions {
	var o serverOptions
	o.defaults()
	return o
}

func TestRunFlags(t *testing.T) {
	base := func(mod func(*runOptions)) runOptions {
		o := runOptions{serverOptions: defaultServerOptions(), Runs: 20, Confidence: 0.95, Transport: "tcp", PageCache: "warm", Timeout: 30 * time.Second, Budgets: "max", On: "local"}
		if mod != nil {
			mod(&o)
		}
		return o
	}
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
				o.Runs, o.Arms, o.Pkg, o.Output, o.ServerArgs = 5, "default,upx", "./cmd/api", render.JSON, []string{"--listen={addr}"}
			})},
		{name: "budgets and pinning", args: []string{"--budget", "cpus=0;max", "--pin-prober", "1", "--transport", "unix"},
			want: base(func(o *runOptions) { o.Budgets, o.PinProber, o.Transport = "cpus=0;max", "1", "unix" })},
		{name: "env and probe", args: []string{"--env", "A=1", "--env", "B=x=y", "--probe", "tcp", "--bin", "/bin/true"},
			want: base(func(o *runOptions) {
				o.Env, o.Probe, o.Bin, o.Arms = []string{"A=1", "B=x=y"}, "tcp", "/bin/true", "default,upx"
			})},
		// A binary can only be itself or packed: those are its default arms.
		{name: "bin alone measures the arms that apply", args: []string{"--bin", "/bin/true"},
			want: base(func(o *runOptions) { o.Bin, o.Arms = "/bin/true", "default,upx" })},
		{name: "bin with arms keeps them", args: []string{"--bin", "/bin/true", "--arms", "upx"},
			want: base(func(o *runOptions) { o.Bin, o.Arms = "/bin/true", "upx" })},
		{name: "on knative", args: []string{"--on", "knative", "--namespace", "cs", "--target", "127.0.0.1:80", "--arms", "image"},
			want: base(func(o *runOptions) { o.On, o.Namespace, o.Target, o.Arms = "knative", "cs", "127.0.0.1:80", "image" })},
		{name: "unknown place", args: []string{"--on", "mars"}, wantErr: `--on: "mars", want local or knative`},
		{name: "cold page cache", args: []string{"--page-cache", "cold"}, want: base(func(o *runOptions) { o.PageCache = "cold" })},
		{name: "unknown page cache", args: []string{"--page-cache", "tepid"}, wantErr: `--page-cache: "tepid", want warm or cold`},
		{name: "cold page cache on knative", args: []string{"--on", "knative", "--page-cache", "cold"}, wantErr: "--page-cache cold evicts files on this machine"},
		{name: "zero runs", args: []string{"-n", "0"}, wantErr: "--runs: 0, want at least 1"},
		{name: "confidence as a percentage", args: []string{"--confidence", "95"}, wantErr: "--confidence: 95: confidence level must be between 0 and 1"},
		{name: "confidence 99%", args: []string{"--confidence", "0.99"}, want: base(func(o *runOptions) { o.Confidence = 0.99 })},
		{name: "bad transport", args: []string{"--transport", "udp"}, wantErr: `--transport: "udp", want tcp or unix`},
		{name: "cpu that does not exist", args: []string{"--budget", "cpus=4096"}, wantErr: "--budget"},
		{name: "pin prober to a cpu that does not exist", args: []string{"--pin-prober", "4096"}, wantErr: "--pin-prober"},
		{name: "bad env", args: []string{"--env", "NOEQUALS"}, wantErr: `--env: "NOEQUALS", want K=V`},
		{name: "bin and pkg", args: []string{"--bin", "/bin/true", "./cmd/api"}, wantErr: "give one or the other"},
		{name: "two packages", args: []string{"./a", "./b"}, wantErr: "server arguments go after --"},
		{name: "prebuilt", args: []string{"--prebuilt", "/arms", "--arms", "default,static"},
			want: base(func(o *runOptions) { o.Prebuilt, o.Arms = "/arms", "default,static" })},
		{name: "prebuilt and bin", args: []string{"--prebuilt", "/arms", "--bin", "/bin/true"}, wantErr: "--prebuilt /arms: the arms are built already"},
		{name: "bad output", args: []string{"-o", "yaml"}, wantErr: `unknown format "yaml"`},
		{name: "bad addr", args: []string{"--addr", "unix:relative.sock"}, wantErr: "--addr"},
		{name: "pin-server with budget", args: []string{"--pin-server", "0", "--budget", "max"}, wantErr: "pin-server"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := parseFlags(t, "run", newRunCmd, tt.args, tt.wantErr)
			if got == nil {
				return
			}
			if diff := cmp.Diff(tt.want, *got, cmp.AllowUnexported(runOptions{}), cmpopts.IgnoreUnexported(serverOptions{})); diff != "" {
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
		{name: "two budgets", args: []string{"--budget", "max;cpus=0"}, wantErr: "--budget"},
		{name: "fixed addr", args: []string{"--addr", "127.0.0.1:9000"}, wantErr: "--addr"},
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
