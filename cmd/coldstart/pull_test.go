package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/coldstart-go/coldstart/builds"
	"github.com/coldstart-go/coldstart/campaign"
	"github.com/coldstart-go/coldstart/internal/render"
	"github.com/coldstart-go/coldstart/internal/testservers/testcerts"
	"github.com/coldstart-go/coldstart/record"
)

func TestPullFlags(t *testing.T) {
	certs := t.TempDir()
	if err := testcerts.WriteSet(certs); err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join(certs, "ca.crt")
	base := func(mod func(*pullOptions)) pullOptions {
		o := pullOptions{
			Arms: builds.ArmList{"static", "upx"}, UPXLevel: builds.UPXDefault, Compression: "gzip,zstd", Bandwidth: "10Mbit,100Mbit,1Gbit,max",
			Layers: "single,split", Runs: 5, Probe: "health", Timeout: 30 * time.Second, Output: render.Table, ResultsDir: "results",
		}
		if mod != nil {
			mod(&o)
		}
		return o
	}
	tests := []struct {
		name    string
		args    []string
		want    pullOptions
		wantErr string
	}{
		{name: "defaults", want: base(nil)},
		{name: "lists and pkg", args: []string{"--bandwidth", "10Mbit,max", "--compression", "zstd", "--layers", "split", "-n", "5", "--registry-port", "5000", "./cmd/api", "--", "--listen={addr}"},
			want: base(func(o *pullOptions) {
				o.Bandwidth, o.Compression, o.Layers, o.Runs, o.RegistryPort, o.Pkg, o.ServerArgs = "10Mbit,max", "zstd", "split", 5, 5000, "./cmd/api", []string{"--listen={addr}"}
			})},
		{name: "unknown compression", args: []string{"--compression", "gzip,lz4"}, wantErr: `--compression: unknown compression "lz4" (known: gzip, zstd)`},
		{name: "bandwidth zero", args: []string{"--bandwidth", "0Mbit"}, wantErr: `--bandwidth: bandwidth "0Mbit": must be more than 0 (use max for no cap)`},
		{name: "bandwidth bare zero", args: []string{"--bandwidth", "0"}, wantErr: `--bandwidth: bandwidth "0": want a number and a unit`},
		{name: "bandwidth unparseable", args: []string{"--bandwidth", "fast"}, wantErr: `--bandwidth: bandwidth "fast"`},
		{name: "bandwidth empty", args: []string{"--bandwidth", ""}, wantErr: `--bandwidth: no bandwidth given`},
		{name: "unknown layering", args: []string{"--layers", "many"}, wantErr: `--layers: unknown layering "many"`},
		{name: "image arm", args: []string{"--arms", "static,image"}, wantErr: `--arms: "image": pull makes the images itself`},
		{name: "unknown arm", args: []string{"--arms", "gcc"}, wantErr: `--arms: unknown arm "gcc"`},
		{name: "upx level", args: []string{"--upx-level", "lzma"}, want: base(func(o *pullOptions) { o.UPXLevel = builds.UPXLZMA })},
		{name: "unknown upx level", args: []string{"--upx-level", "ultra"}, wantErr: `--upx-level: unknown upx level "ultra" (known: default, best, lzma)`},
		{name: "port out of range", args: []string{"--registry-port", "70000"}, wantErr: "--registry-port: 70000, want 1..65535, or 0 for any free port"},
		{name: "zero runs", args: []string{"-n", "0"}, wantErr: "--runs: 0, want at least 1"},
		{name: "unknown probe", args: []string{"--probe", "ftp://x"}, wantErr: `--probe: unknown probe "ftp://x" (known: `},
		{name: "named binaries", args: []string{"--bin", "v1=./a", "--bin", "v2=./b"},
			want: base(func(o *pullOptions) {
				o.Bin.Named = []campaign.Binary{{Name: "v1", Path: "./a"}, {Name: "v2", Path: "./b"}}
				o.Arms = nil
			})},
		{name: "binary as the arms that apply", args: []string{"--bin", "./a"},
			want: base(func(o *pullOptions) { o.Bin.Path = "./a"; o.Arms = builds.ArmList{"default", "upx"} })},
		{name: "named binaries and arms", args: []string{"--bin", "v1=./a", "--arms", "upx"}, wantErr: "--arms and --bin ARM=PATH"},
		{name: "baseline", args: []string{"--baseline", "upx"}, want: base(func(o *pullOptions) { o.Baseline = "upx" })},
		{name: "baseline a named binary", args: []string{"--bin", "v1=./a", "--bin", "v2=./b", "--baseline", "v2"},
			want: base(func(o *pullOptions) {
				o.Bin.Named = []campaign.Binary{{Name: "v1", Path: "./a"}, {Name: "v2", Path: "./b"}}
				o.Arms, o.Baseline = nil, "v2"
			})},
		{name: "baseline not measured", args: []string{"--arms", "static,upx", "--baseline", "default"}, wantErr: `--baseline: "default" is not measured (arms: static, upx)`},
		// TLS, as coldstart run takes it.
		{name: "tls", args: []string{"--tls", "--cacert", ca, "--tls-server-name", "localhost", "--", "--tls-cert", "s.crt"},
			want: base(func(o *pullOptions) {
				o.TLS.On, o.TLS.CACert, o.TLS.ServerName, o.ServerArgs = true, ca, "localhost", []string{"--tls-cert", "s.crt"}
			})},
		{name: "grpcs probe", args: []string{"--probe", "grpcs://localhost", "--cacert", ca},
			want: base(func(o *pullOptions) { o.Probe, o.TLS.CACert = "grpcs://localhost", ca })},
		{name: "https probe", args: []string{"--probe", "https://127.0.0.1/healthz", "--insecure-skip-verify"},
			want: base(func(o *pullOptions) { o.Probe, o.TLS.InsecureSkipVerify = "https://127.0.0.1/healthz", true })},
		{name: "cacert without TLS", args: []string{"--cacert", ca}, wantErr: "--cacert: only with TLS (--tls, or a grpcs://, https:// or h3:// --probe)"},
		{name: "cacert missing", args: []string{"--tls", "--cacert", filepath.Join(certs, "nope.crt")}, wantErr: "--cacert: open " + filepath.Join(certs, "nope.crt") + ": no such file or directory"},
		{name: "cacert not PEM", args: []string{"--tls", "--cacert", filepath.Join(certs, "server.key")}, wantErr: "--cacert: " + filepath.Join(certs, "server.key") + ": no PEM certificate in it"},
		{name: "key not the cert's", args: []string{"--tls", "--cert", filepath.Join(certs, "client.crt"), "--key", filepath.Join(certs, "server.key")},
			wantErr: "--key: " + filepath.Join(certs, "server.key") + " does not match the certificate in " + filepath.Join(certs, "client.crt")},
		{name: "tls over tcp", args: []string{"--tls", "--probe", "tcp"}, wantErr: "--tls: --probe: the tcp-connect (lower bound, not readiness) probe makes no TLS handshake"},
		{name: "tls over h2c", args: []string{"--tls", "--probe", "h2c://127.0.0.1/healthz"}, wantErr: "--tls: --probe: h2c /healthz is HTTP/2 without TLS; over TLS probe https://"},
		{name: "cacert and insecure", args: []string{"--tls", "--cacert", ca, "--insecure-skip-verify"}, wantErr: "none of the others can be"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := parseFlags(t, "pull", newPullCmd, tt.args, tt.wantErr)
			if got == nil {
				return
			}
			if diff := cmp.Diff(tt.want, *got, cmpopts.IgnoreUnexported(pullOptions{})); diff != "" {
				t.Errorf("pull %q options (-want +got):\n%s", tt.args, diff)
			}
		})
	}
}

// TestPullPortInUse: a registry port that is taken fails at once, naming
// the flag, before anything is built or a results file is written.
func TestPullPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	dir := t.TempDir()
	o := parseFlags(t, "pull", newPullCmd, []string{"--registry-port", fmt.Sprint(port), "--results-dir", dir}, "")
	start := time.Now()
	err = runPull(context.Background(), o, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--registry-port") || !strings.Contains(err.Error(), "port in use") || !strings.Contains(err.Error(), fmt.Sprint(port)) {
		t.Fatalf("runPull on a taken port = %v, want an error naming --registry-port, the port and that it is in use", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("results dir holds %d files after a refused run", len(ents))
	}
	t.Logf("refused in %v", time.Since(start))
}

// TestPullJSON: -o json prints one document, the medians and the
// break-evens under their own keys, which JSON tools read whole (pull
// printed two arrays back to back, which python3 -m json.tool refuses).
func TestPullJSON(t *testing.T) {
	var rows []record.PullRow
	for i := range 4 {
		for _, a := range []struct {
			arm         string
			bytes       int64
			ready, cold float64
		}{{"static", 8 << 20, 900, 5}, {"upx", 3 << 20, 400, 40}} {
			rows = append(rows, record.PullRow{
				PullVariant: record.PullVariant{Arm: a.arm, Compression: "gzip", Layering: "single"},
				Deploy:      1, Bandwidth: "100Mbit", BandwidthBits: 100e6, Iteration: i,
				ImageBytes: a.bytes, ImageReadyMs: a.ready + float64(i), NodeToFirstRPCMs: a.ready + a.cold + float64(i),
				AfterPullStartMs: a.cold, ColdStartMs: a.cold + float64(i), WarmStartMs: a.cold/2 + float64(i)/10,
			})
		}
	}
	for _, tt := range []struct {
		name       string
		rows       []record.PullRow
		medians    int
		breakEvens int
	}{
		{"two arms", rows, 2, 1},
		{"one arm: no pair to break even", rows[:1], 1, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := writePulls(&out, render.JSON, tt.rows, ""); err != nil {
				t.Fatal(err)
			}
			dec := json.NewDecoder(bytes.NewReader(out.Bytes()))
			var doc map[string][]map[string]any
			if err := dec.Decode(&doc); err != nil {
				t.Fatalf("-o json: %v\n%s", err, out.String())
			}
			if err := dec.Decode(new(any)); !errors.Is(err, io.EOF) {
				t.Fatalf("-o json holds more than one document (next: %v):\n%s", err, out.String())
			}
			m, okm := doc["medians"]
			b, okb := doc["break_evens"]
			if !okm || !okb || len(doc) != 2 || len(m) != tt.medians || len(b) != tt.breakEvens {
				t.Errorf("-o json keys %d medians, %d break-evens (all keys: %v); want medians %d, break_evens %d", len(m), len(b), docKeys(doc), tt.medians, tt.breakEvens)
			}
			if len(m) > 0 && m[0]["arm"] != "static" {
				t.Errorf("first median %v, want the static arm's", m[0])
			}
			// The issue's own check, where python3 is installed.
			if py, err := exec.LookPath("python3"); err == nil {
				cmd := exec.Command(py, "-m", "json.tool")
				cmd.Stdin = bytes.NewReader(out.Bytes())
				if msg, err := cmd.CombinedOutput(); err != nil {
					t.Errorf("python3 -m json.tool: %v: %s", err, msg)
				}
			}
		})
	}
	var out bytes.Buffer
	if err := writePulls(&out, render.Table, rows, ""); err != nil {
		t.Fatal(err)
	}
	if tables := strings.Split(out.String(), "\n\n"); len(tables) != 2 || !strings.Contains(tables[1], "break_even_starts") {
		t.Errorf("-o table: want the medians, a blank line, the break-evens:\n%s", out.String())
	}
}

func docKeys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// TestPullVsBaseline: each image's medians row sets its pulls against the
// baseline arm's image: one "vs BASE" column at a terminal, the
// vs_baseline_* fields in -o json.
func TestPullVsBaseline(t *testing.T) {
	var rows []record.PullRow
	for i := range 8 {
		for _, a := range []struct {
			arm   string
			ready float64
		}{{"static", 900}, {"upx", 9000}} {
			f := 1 + float64(i)/1000
			rows = append(rows, record.PullRow{
				PullVariant: record.PullVariant{Arm: a.arm, Compression: "gzip", Layering: "single"},
				Deploy:      1, Bandwidth: "10Mbit", Iteration: i, ImageReadyMs: a.ready * f, ColdStartMs: 5, WarmStartMs: 2, NodeToFirstRPCMs: (a.ready + 5) * f,
			})
		}
	}
	var tbl bytes.Buffer
	if err := writePulls(&tbl, render.Table, rows, ""); err != nil {
		t.Fatal(err)
	}
	for _, re := range []string{`(?m)^arm +compression .* vs static$`, `(?m)^static +gzip .* baseline$`, `(?m)^upx +gzip .* 9\.9[0-9]× \[[0-9.]+, [0-9.]+\] slower$`} {
		if !regexp.MustCompile(re).MatchString(tbl.String()) {
			t.Errorf("-o table lacks %s:\n%s", re, tbl.String())
		}
	}
	var js bytes.Buffer
	if err := writePulls(&js, render.JSON, rows, "upx"); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"baseline": "upx"`, `"vs_baseline_ratio": 0.1`, `"vs_baseline_ci_low":`, `"vs_baseline_ci_high":`, `"vs_baseline_p":`, `"vs_baseline_verdict": "faster"`, `"vs_baseline_on": "node_to_first_rpc_ms"`} {
		if !strings.Contains(js.String(), k) {
			t.Errorf("-o json lacks %s:\n%s", k, js.String())
		}
	}
}
