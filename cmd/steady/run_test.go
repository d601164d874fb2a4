package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/grpc/metadata"

	"github.com/coldstart-go/coldstart/budget"
	"github.com/coldstart-go/coldstart/campaign"
	"github.com/coldstart-go/coldstart/cmd/internal/cliopts"
	"github.com/coldstart-go/coldstart/internal/grpcschema"
	"github.com/coldstart-go/coldstart/internal/testservers/testcerts"
	"github.com/coldstart-go/coldstart/prober"
	"github.com/coldstart-go/coldstart/steady"
)

// parse runs `steady run args` with a run function that only records the
// options, and returns the error as steady prints it (flagError).
func parse(t *testing.T, args ...string) (*runOptions, error) {
	t.Helper()
	var got *runOptions
	cmd := newRunCmd(func(_ context.Context, o *runOptions, _ io.Writer) error {
		got = o
		return nil
	})
	cmd.SetArgs(args)
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.ExecuteContext(context.Background())
	if err != nil {
		return got, flagError(err)
	}
	return got, nil
}

func TestParse(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		want steady.Config
		pkg  string
		srv  []string
		bins cliopts.Bins
		arms []string
	}{
		{
			name: "defaults",
			want: steady.Config{
				Protocols: []steady.Protocol{steady.GRPC}, Payloads: []int{8}, Concurrency: []int{1, 32},
				Conns: []int{1}, Pipeline: []int{1}, Warmup: 20000, Calls: 50000, Rounds: 5, Confidence: 0.95,
				RampP99: 10 * time.Millisecond, RampErrors: 0.01, MaxInFlight: 128, HTTPPath: "/echo",
				Budgets: []budget.Budget{{}}, Client: steady.ClientGRPC, WindowLimit: 10 * time.Minute,
			},
			arms: []string{"default", "static", "upx", "pgo", "image"},
		},
		{
			// One binary, as coldstart run takes it: measured as the arms
			// that apply to a binary (as is, and packed).
			name: "one binary",
			args: []string{"--bin", "/bin/a", "--budget", "cpus=0", "--budget", "cores=0.5"},
			want: steady.Config{
				Protocols: []steady.Protocol{steady.GRPC}, Payloads: []int{8}, Concurrency: []int{1, 32},
				Conns: []int{1}, Pipeline: []int{1}, Warmup: 20000, Calls: 50000, Rounds: 5, Confidence: 0.95,
				RampP99: 10 * time.Millisecond, RampErrors: 0.01, MaxInFlight: 128, HTTPPath: "/echo",
				Budgets: []budget.Budget{{CPUs: []int{0}}, {Cores: 0.5}}, Client: steady.ClientGRPC, WindowLimit: 10 * time.Minute,
			},
			bins: cliopts.Bins{Path: "/bin/a"},
			arms: []string{"default", "upx"},
		},
		{
			name: "lists and open loop",
			args: []string{"--protocol", "grpc,http1", "--payload", "8B,1KiB,64KiB", "--concurrency", "1,32", "--conns", "1,8",
				"--pipeline", "16,64", "--rate", "2000", "--duration", "10s", "--warmup", "0", "./cmd/api", "--", "--listen={addr}"},
			want: steady.Config{
				Protocols: []steady.Protocol{steady.GRPC, steady.HTTP1}, Payloads: []int{8, 1024, 65536},
				Concurrency: []int{1, 32}, Conns: []int{1, 8}, Pipeline: []int{16, 64},
				Scenarios: []steady.Scenario{steady.Open}, Rate: 2000, Duration: 10 * time.Second,
				Warmup: -1, Calls: 50000, Rounds: 5, Confidence: 0.95, RampP99: 10 * time.Millisecond, RampErrors: 0.01, MaxInFlight: 128,
				HTTPPath: "/echo", Budgets: []budget.Budget{{}}, Client: steady.ClientGRPC, WindowLimit: 10 * time.Minute,
			},
			pkg:  "./cmd/api",
			srv:  []string{"--listen={addr}"},
			arms: []string{"default", "static", "upx", "pgo", "image"},
		},
		{
			name: "bins, ramp, pinning",
			args: []string{"--bin", "default=/bin/a", "--bin", "pgo=/bin/b", "--ramp", "--rate", "1000", "--duration", "2s",
				"--pin-server", "0", "--pin-generator", "1"},
			want: steady.Config{
				Protocols: []steady.Protocol{steady.GRPC}, Payloads: []int{8}, Concurrency: []int{1, 32},
				Conns: []int{1}, Pipeline: []int{1}, Scenarios: []steady.Scenario{steady.Ramp}, Rate: 1000,
				Duration: 2 * time.Second, Warmup: 20000, Calls: 50000, Rounds: 5, Confidence: 0.95, RampP99: 10 * time.Millisecond,
				RampErrors: 0.01, MaxInFlight: 128, HTTPPath: "/echo", Budgets: []budget.Budget{{CPUs: []int{0}}},
				Client: steady.ClientGRPC, WindowLimit: 10 * time.Minute,
			},
			bins: cliopts.Bins{Named: []campaign.Binary{{Name: "default", Path: "/bin/a"}, {Name: "pgo", Path: "/bin/b"}}},
		},
		{
			name: "target, lean client",
			args: []string{"--target", "unix:///run/api.sock", "--server-pid", "42", "--debug-addr", "127.0.0.1:9", "--client", "lean", "--window-limit", "1m"},
			want: steady.Config{
				Target:    &steady.Target{Addr: prober.Target{Network: "unix", Address: "/run/api.sock"}, PID: 42, DebugAddr: "127.0.0.1:9"},
				Protocols: []steady.Protocol{steady.GRPC}, Payloads: []int{8}, Concurrency: []int{1, 32},
				Conns: []int{1}, Pipeline: []int{1}, Warmup: 20000, Calls: 50000, Rounds: 5, Confidence: 0.95,
				RampP99: 10 * time.Millisecond, RampErrors: 0.01, MaxInFlight: 128, HTTPPath: "/echo",
				Budgets: []budget.Budget{{}}, Client: steady.ClientLean, WindowLimit: time.Minute,
			},
			arms: []string{"default", "static", "upx", "pgo", "image"},
		},
		{
			name: "knative",
			args: []string{"--on", "knative", "--namespace", "bench", "--arms", "static", "--target", "203.0.113.7:80", "--client", "lean"},
			want: steady.Config{
				Protocols: []steady.Protocol{steady.GRPC}, Payloads: []int{8}, Concurrency: []int{1, 32},
				Conns: []int{1}, Pipeline: []int{1}, Warmup: 20000, Calls: 50000, Rounds: 5, Confidence: 0.95,
				RampP99: 10 * time.Millisecond, RampErrors: 0.01, MaxInFlight: 128, HTTPPath: "/echo",
				Budgets: []budget.Budget{{}}, Client: steady.ClientLean, WindowLimit: 10 * time.Minute,
			},
			arms: []string{"static"},
		},
		{
			// A user's deployed Service: any arm name, its own prefix.
			name: "knative, a user's service",
			args: []string{"--on", "knative", "--arms", "myservice", "--name-prefix", "team-"},
			want: steady.Config{
				Protocols: []steady.Protocol{steady.GRPC}, Payloads: []int{8}, Concurrency: []int{1, 32},
				Conns: []int{1}, Pipeline: []int{1}, Warmup: 20000, Calls: 50000, Rounds: 5, Confidence: 0.95,
				RampP99: 10 * time.Millisecond, RampErrors: 0.01, MaxInFlight: 128, HTTPPath: "/echo",
				Budgets: []budget.Budget{{}}, Client: steady.ClientGRPC, WindowLimit: 10 * time.Minute,
			},
			arms: []string{"myservice"},
		},
		{
			name: "soak",
			args: []string{"--soak", "10m", "--soak-interval", "30s", "--rate", "500"},
			want: steady.Config{
				Protocols: []steady.Protocol{steady.GRPC}, Payloads: []int{8}, Concurrency: []int{1, 32},
				Conns: []int{1}, Pipeline: []int{1}, Warmup: 20000, Calls: 50000, Rate: 500, Rounds: 5, Confidence: 0.95,
				RampP99: 10 * time.Millisecond, RampErrors: 0.01, MaxInFlight: 128, HTTPPath: "/echo",
				Budgets: []budget.Budget{{}}, Client: steady.ClientGRPC, WindowLimit: 10 * time.Minute,
				Soak: 10 * time.Minute, SoakInterval: 30 * time.Second,
			},
			arms: []string{"default", "static", "upx", "pgo", "image"},
		},
		{
			// Rounds left open: Rounds 0, the precision and cap set.
			name: "rounds auto",
			args: []string{"--rounds", "auto", "--precision", "0.05", "--max-rounds", "12"},
			want: steady.Config{
				Protocols: []steady.Protocol{steady.GRPC}, Payloads: []int{8}, Concurrency: []int{1, 32},
				Conns: []int{1}, Pipeline: []int{1}, Warmup: 20000, Calls: 50000, Precision: 0.05, MaxRounds: 12, Confidence: 0.95,
				RampP99: 10 * time.Millisecond, RampErrors: 0.01, MaxInFlight: 128, HTTPPath: "/echo",
				Budgets: []budget.Budget{{}}, Client: steady.ClientGRPC, WindowLimit: 10 * time.Minute,
			},
			arms: []string{"default", "static", "upx", "pgo", "image"},
		},
		{
			// --precision and --max-rounds mean nothing without --rounds
			// auto (checked all the same), and --rounds N after auto wins.
			name: "rounds fixed after auto",
			args: []string{"--rounds", "auto", "--rounds", "8", "--precision", "0.1"},
			want: steady.Config{
				Protocols: []steady.Protocol{steady.GRPC}, Payloads: []int{8}, Concurrency: []int{1, 32},
				Conns: []int{1}, Pipeline: []int{1}, Warmup: 20000, Calls: 50000, Rounds: 8, Confidence: 0.95,
				RampP99: 10 * time.Millisecond, RampErrors: 0.01, MaxInFlight: 128, HTTPPath: "/echo",
				Budgets: []budget.Budget{{}}, Client: steady.ClientGRPC, WindowLimit: 10 * time.Minute,
			},
			arms: []string{"default", "static", "upx", "pgo", "image"},
		},
		{
			// A user's own method, ghz's flag names; metadata k=v,
			// repeatable, a key given twice keeping both values.
			name: "call",
			args: []string{"--target", "127.0.0.1:8079", "--call", "/fgrpc.PingServer/Ping", "-d", `{"seq": 1}`,
				"-m", "authorization=Bearer x", "--metadata", "x-id=1", "-m", "x-id=2", "--proto", "ping.proto", "-i", "api,third_party"},
			want: steady.Config{
				Protocols: []steady.Protocol{steady.GRPC}, Payloads: []int{8}, Concurrency: []int{1, 32},
				Conns: []int{1}, Pipeline: []int{1}, Warmup: 20000, Calls: 50000, Rounds: 5, Confidence: 0.95,
				RampP99: 10 * time.Millisecond, RampErrors: 0.01, MaxInFlight: 128, HTTPPath: "/echo",
				Budgets: []budget.Budget{{}}, Client: steady.ClientGRPC, WindowLimit: 10 * time.Minute,
				Target: &steady.Target{Addr: prober.Target{Network: "tcp", Address: "127.0.0.1:8079"}},
				Call: &steady.Call{Method: "/fgrpc.PingServer/Ping", Data: [][]byte{[]byte(`{"seq": 1}`)},
					Metadata: metadata.MD{"authorization": {"Bearer x"}, "x-id": {"1", "2"}},
					Schema:   grpcschema.Source{Protos: []string{"ping.proto"}, ImportPaths: []string{"api", "third_party"}}},
			},
			arms: []string{"default", "static", "upx", "pgo", "image"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "call" {
				// The schema is loaded as the flags are checked: give it.
				dir := t.TempDir()
				os.WriteFile(filepath.Join(dir, "ping.proto"), []byte("syntax = \"proto3\";\npackage fgrpc;\nmessage PingMessage { int64 seq = 1; }\nservice PingServer { rpc Ping(PingMessage) returns (PingMessage); }\n"), 0o644)
				t.Chdir(dir)
			}
			o, err := parse(t, tt.args...)
			if err != nil {
				t.Fatalf("parse(%q) = %v", tt.args, err)
			}
			if diff := cmp.Diff(tt.want, o.cfg, cmpopts.IgnoreUnexported(steady.Config{})); diff != "" {
				t.Errorf("parse(%q) config (-want +got):\n%s", tt.args, diff)
			}
			if o.Pkg != tt.pkg || !cmp.Equal(o.ServerArgs, tt.srv, cmpopts.EquateEmpty()) {
				t.Errorf("parse(%q): PKG %q args %q, want %q %q", tt.args, o.Pkg, o.ServerArgs, tt.pkg, tt.srv)
			}
			if diff := cmp.Diff(tt.bins, o.Bin, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("parse(%q) --bin (-want +got):\n%s", tt.args, diff)
			}
			if diff := cmp.Diff(tt.arms, o.Arms.Names, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("parse(%q) arms (-want +got):\n%s", tt.args, diff)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--concurrency", "0"}, "--concurrency: 0, want at least 1"},
		{[]string{"--rounds", "0"}, "--rounds: 0, want at least 1 measured window"},
		{[]string{"--rounds", "many"}, `"many", want a number of rounds or auto`},
		{[]string{"--rounds", "auto", "--precision", "0"}, "--precision: 0, want a fraction of the median between 0 and 1, exclusive (e.g. 0.03)"},
		{[]string{"--rounds", "auto", "--precision", "1"}, "--precision: 1, want a fraction of the median between 0 and 1"},
		{[]string{"--rounds", "auto", "--precision", "3"}, "--precision: 3, want a fraction of the median between 0 and 1"},
		{[]string{"--rounds", "auto", "--precision", "-0.1"}, "--precision: -0.1, want a fraction"},
		{[]string{"--rounds", "auto", "--max-rounds", "5"}, "--max-rounds: 5, want at least 6 (the fewest rounds whose median has a 95% interval"},
		{[]string{"--max-rounds", "0"}, "--max-rounds: 0, want at least 6"},
		{[]string{"--rounds", "auto", "--soak", "10m", "--rate", "100"}, "--rounds auto: a --soak loads one open loop in --soak-interval rows, not rounds"},
		{[]string{"--rounds", "auto", "--ramp", "--rate", "100", "--duration", "1s"}, "--rounds auto: a --ramp searches for its knee once per arm"},
		{[]string{"--rounds", "auto", "--scenario", "ramp", "--rate", "100", "--duration", "1s"}, "--rounds auto: a --ramp"},
		{[]string{"--confidence", "1.5"}, "--confidence: 1.5: confidence level must be between 0 and 1"},
		{[]string{"--confidence", "0"}, "--confidence: 0: confidence level must be between 0 and 1"},
		{[]string{"--concurrency", "1,x"}, `--concurrency: "x" is not a whole number`},
		{[]string{"--conns", "0"}, "--conns"},
		{[]string{"--pipeline", "0"}, "--pipeline"},
		{[]string{"--payload", "1kb"}, `--payload: malformed size "1kb": unknown unit "kb"`},
		{[]string{"--rate", "100"}, "--duration: scenario open needs the length of each open-loop window"},
		{[]string{"--ramp", "--duration", "1s"}, "--rate: scenario ramp needs a rate in calls per second"},
		{[]string{"--ramp", "--rate", "100"}, "--duration: scenario ramp needs the length of each open-loop window"},
		{[]string{"--protocol", "quic"}, `--protocol: unknown protocol "quic"`},
		{[]string{"--scenario", "soak"}, `--scenario: unknown scenario "soak"`},
		{[]string{"--scenario", "open", "--duration", "1s"}, "--rate"},
		{[]string{"--bin", "a=", "x"}, "--bin"},
		{[]string{"--bin", "/bin/a", "./pkg"}, "--bin /bin/a and PKG ./pkg: give one or the other"},
		{[]string{"--bin", "/bin/a", "--bin", "/bin/b"}, "--bin: /bin/a and /bin/b: give one PATH"},
		{[]string{"--bin", "/bin/a", "--bin", "b=/bin/b"}, "--bin: \"b=/bin/b\": PATH and ARM=PATH do not mix"},
		{[]string{"--bin", "Api=/bin/a"}, `--bin: "Api=/bin/a": arm name "Api": use lower-case letters`},
		{[]string{"--bin", "a=/bin/a", "--arms", "static"}, "--arms and --bin ARM=PATH: --bin names its own arms"},
		{[]string{"--arms", "gcc"}, `--arms: unknown arm "gcc" (known: default, pgo, static, upx, image)`},
		{[]string{"--upx-level", "ultra"}, `--upx-level: unknown upx level "ultra" (known: default, best, lzma)`},
		{[]string{"--pin-generator", "1000"}, "--pin-generator: CPU 1000 in"},
		{[]string{"--budget", "cpus=1000"}, "--budget: CPU 1000 in"},
		{[]string{"-q", "-v"}, "[quiet verbose] were all set"},
		{[]string{"--bin", "a=/x", "--bin", "a=/y"}, `--bin: arm "a" given twice`},
		{[]string{"--env", "NOEQUALS"}, "--env"},
		{[]string{"--env", "A={prt}"}, `--env: server arguments: unknown placeholder {prt} in "A={prt}"`},
		{[]string{"--budget", "cpus=0", "--pin-server", "0"}, "pin-server"},
		{[]string{"--budget", "gpus=1"}, "--budget"},
		{[]string{"-o", "yaml"}, "yaml"},
		{[]string{"a", "b"}, "at most one PKG"},
		{[]string{"--client", "fast"}, `--client: unknown client "fast"`},
		{[]string{"--target", "8080"}, "--target"},
		{[]string{"--target", "10.1.2.3:80"}, "--target: 10.1.2.3:80 is not a loopback address; steady loads only this machine's servers unless allowed (--allow-remote)"},
		{[]string{"--target", "127.0.0.1:80", "--bin", "/bin/a"},
			"--target: a running server replaces the servers steady would start: give one or the other (--bin, --arms, PKG, server arguments)"},
		{[]string{"--target", "127.0.0.1:80", "--", "-listen={addr}"}, "--target: a running server replaces the servers steady would start"},
		{[]string{"--target", "127.0.0.1:80", "--arms", "static"}, "--target: a running server replaces the servers steady would start"},
		{[]string{"--target", "127.0.0.1:80", "--budget", "cpus=0"}, "--target"},
		{[]string{"--server-pid", "42"}, "only with --target"},
		{[]string{"--target", "127.0.0.1:80", "--server-pid", "-3"}, "--server-pid: -3 is not a process ID"},
		{[]string{"--soak", "1m", "--rate", "100"},
			"--soak: 1m0s is shorter than two soak intervals (1m0s): a trend needs at least two rows, three for its confidence interval; soak longer or shorten the interval (--soak-interval)"},
		{[]string{"--soak", "10m"}, "--rate: a soak needs an open-loop rate in calls per second"},
		{[]string{"--soak", "10m", "--rate", "10", "--duration", "1s"}, "--soak"},
		{[]string{"--soak-interval", "10s"}, "--soak-interval: only with --soak"},
		{[]string{"--window-limit", "0s"}, "--window-limit"},
		{[]string{"--on", "mars"}, `--on: "mars", want local or knative`},
		{[]string{"--namespace", "x"}, "only with --on knative"},
		{[]string{"--on", "knative", "--bin", "/bin/a"}, "--on knative"},
		{[]string{"--arms", "myservice"}, `--arms: unknown arm "myservice"`},
		{[]string{"--on", "knative", "--arms", "My_Service"}, `service name "coldstart-My_Service"`},
		{[]string{"--on", "knative", "--server-pid", "3"}, "--on knative"},
		{[]string{"--on", "knative", "--protocol", "http1"}, "--on knative: --protocol http1"},
		{[]string{"--via", "activator"}, "--via: only with --on knative"},
		{[]string{"--on", "knative", "--via", "activator"}, "--via activator: give the activator's address as --target"},
		{[]string{"--on", "knative", "--via", "mesh", "--target", "127.0.0.1:81"}, `--via: "mesh", want ingress or activator`},
		{[]string{"--arms", "static,upx", "--baseline", "default"}, `--baseline: "default" is not measured (arms: static, upx)`},
		{[]string{"--bin", "api=/bin/a", "--baseline", "old"}, `--baseline: "old" is not measured (arms: api)`},
		{[]string{"--target", "127.0.0.1:80", "--baseline", "default"}, `--baseline: "default" is not measured (arms: target)`},
		{[]string{"--call", "Ping"}, `--call: "Ping" is not a gRPC method (want /package.Service/Method)`},
		{[]string{"-d", "{}"}, "--data: only with --call"},
		{[]string{"--proto", "x.proto"}, "--proto: only with --call"},
		{[]string{"--call", "/a.B/C", "--payload", "1KiB"}, "--payload: Echo's payload; a --call method's requests are --data or --data-file"},
		{[]string{"--call", "/a.B/C", "-d", "{}", "-D", "reqs.jsonl"}, "[data data-file] were all set"},
		{[]string{"--call", "/a.B/C", "--proto", "a.proto", "--protoset", "a.protoset"}, "[proto protoset] were all set"},
		{[]string{"--call", "/a.B/C", "-i", "api"}, "--import-paths: where .proto files find their imports: only with .proto files (--proto)"},
		{[]string{"--call", "/a.B/C", "-m", "authorization"}, `--metadata: an entry without a key before "="`},
		{[]string{"--call", "/a.B/C", "--protoset", "/nonexistent.protoset"}, "--protoset: read protoset /nonexistent.protoset"},
		{[]string{"--call", "/a.B/C", "--protocol", "http1"}, "--call: a gRPC method, called over grpc only; protocol http1 loads the HTTP path instead"},
		{[]string{"--call", "/a.B/C", "--scenario", "stream"}, "--scenario: stream is coldstart's EchoStream ping-pong"},
		{[]string{"--cacert", "ca.crt"}, "--cacert: only with TLS (--tls, or a grpcs://, https:// or h3:// --target)"},
		{[]string{"--target", "127.0.0.1:80", "--key", "c.key"}, "--key: only with TLS"},
		{[]string{"--tls", "--cert", "c.crt"}, "--key: none given for the client certificate c.crt"},
		{[]string{"--tls", "--cacert", "/nonexistent/ca.crt"}, "--cacert: open /nonexistent/ca.crt"},
		{[]string{"--tls", "--cacert", "ca.crt", "--insecure-skip-verify"}, "[cacert insecure-skip-verify] were all set"},
		{[]string{"--tls", "--on", "knative"}, "--tls: --on knative loads each Service"},
		{[]string{"--target", "grpcs://127.0.0.1:443", "--protocol", "h2c"}, "--protocol: h2c is HTTP/2 in clear text"},
		{[]string{"--protocol", "h2"}, "--protocol: h2 is HTTP/2 over TLS, negotiated by ALPN; in clear text load h2c, or turn TLS on (--tls)"},
		{[]string{"--reconnect-every", "-2"}, "--reconnect-every: -2, want 0 (never) or more calls"},
		{[]string{"--target", "h3://127.0.0.1:8443", "--protocol", "grpc,h2"},
			"--target h3://127.0.0.1:8443 is a server over HTTP/3, and --protocol grpc,h2 leaves h3 out: add h3, or give the target as host:port"},
		{[]string{"--target", "h3://127.0.0.1:8443/api/echo", "--http-path", "/echo2"},
			"--target h3://127.0.0.1:8443/api/echo names the path /api/echo, and --http-path /echo2 another: give one"},
	} {
		_, err := parse(t, tt.args...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("parse(%q) = %v, want an error containing %q", tt.args, err, tt.want)
		}
	}
}

// TestParseTLS: --tls, or a grpcs://, https:// or h3:// --target, loads
// the TLS files into the config (the record has their paths and
// fingerprints); without either the load is plaintext. An h3:// target
// loads HTTP/3 unless --protocol says otherwise, and a URL's path is
// where HTTP load goes.
func TestParseTLS(t *testing.T) {
	dir := t.TempDir()
	if err := testcerts.WriteSet(dir); err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join(dir, "ca.crt")
	for _, tt := range []struct {
		name   string
		args   []string
		tls    bool
		target string
	}{
		{"plaintext", []string{"--target", "127.0.0.1:8443"}, false, "127.0.0.1:8443"},
		{"--tls", []string{"--tls", "--cacert", ca, "--reconnect-every", "100"}, true, ""},
		{"grpcs target", []string{"--target", "grpcs://127.0.0.1:8443", "--cacert", ca}, true, "127.0.0.1:8443"},
		{"https target", []string{"--target", "https://localhost:8443/", "--protocol", "http1,h2", "--cacert", ca}, true, "localhost:8443"},
		{"h3 target", []string{"--target", "h3://127.0.0.1:8443/api/echo", "--cacert", ca}, true, "127.0.0.1:8443"},
		{"h3 target, more protocols", []string{"--target", "h3://127.0.0.1:8443", "--protocol", "h3,h2", "--cacert", ca}, true, "127.0.0.1:8443"},
		{"mTLS", []string{"--tls", "--cacert", ca, "--cert", filepath.Join(dir, "client.crt"), "--key", filepath.Join(dir, "client.key")}, true, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parse(t, tt.args...)
			if err != nil {
				t.Fatalf("parse(%q) = %v", tt.args, err)
			}
			if got := o.cfg.TLS != nil; got != tt.tls {
				t.Fatalf("parse(%q): TLS %v, want %v", tt.args, got, tt.tls)
			}
			if tt.target != "" && (o.cfg.Target == nil || o.cfg.Target.Addr.Address != tt.target) {
				t.Errorf("parse(%q): target %+v, want %s", tt.args, o.cfg.Target, tt.target)
			}
			wantProtos, wantPath := []steady.Protocol{steady.GRPC}, "/echo"
			switch tt.name {
			case "https target":
				wantProtos = []steady.Protocol{steady.HTTP1, steady.H2}
			case "h3 target":
				wantProtos, wantPath = []steady.Protocol{steady.H3}, "/api/echo"
			case "h3 target, more protocols":
				wantProtos = []steady.Protocol{steady.H3, steady.H2}
			}
			if diff := cmp.Diff(wantProtos, o.cfg.Protocols); diff != "" || o.cfg.HTTPPath != wantPath {
				t.Errorf("parse(%q): HTTP path %q (want %q), protocols (-want +got):\n%s", tt.args, o.cfg.HTTPPath, wantPath, diff)
			}
			if !tt.tls {
				return
			}
			r := o.cfg.TLS.Record
			if r.CAFile != ca || len(r.CASHA256) != 1 || r.InsecureSkipVerify {
				t.Errorf("parse(%q): TLS record %+v, want the CA file and its fingerprint", tt.args, r)
			}
			if r.CertFile != "" && (r.CertSHA256 == "" || r.KeyFile == "") {
				t.Errorf("parse(%q): TLS record %+v, want the client certificate's fingerprint and the key's path", tt.args, r)
			}
		})
	}
	if o, err := parse(t, "--reconnect-every", "50"); err != nil || o.cfg.ReconnectEvery != 50 || o.cfg.TLS != nil {
		t.Errorf("parse(--reconnect-every 50) = %v, reconnect every %d, TLS %v: want 50 over plaintext", err, o.cfg.ReconnectEvery, o.cfg.TLS)
	}
}

// TestHelp keeps the help text honest about units and defaults.
func TestHelp(t *testing.T) {
	cmd := newRootCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"run", "--help"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"--payload", "KiB", "--rate", "calls/s", "--pipeline", "--pin-generator"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("run --help lacks %q", s)
		}
	}
}

// TestConfigFlags keeps configFlags true to both sides: each key is a
// field path of steady.Config, and each flag it names is one of run's.
func TestConfigFlags(t *testing.T) {
	run := newRunCmd(nil)
	for option, flags := range configFlags {
		typ := reflect.TypeFor[steady.Config]()
		for _, name := range strings.Split(option, ".") {
			for typ.Kind() == reflect.Pointer {
				typ = typ.Elem()
			}
			f, ok := typ.FieldByName(name)
			if !ok {
				t.Errorf("configFlags: %s: steady.Config has no field %s", option, name)
				break
			}
			typ = f.Type
		}
		for _, flag := range strings.Split(flags, ", ") {
			if name, ok := strings.CutPrefix(flag, "--"); ok && run.Flags().Lookup(name) == nil {
				t.Errorf("configFlags: %s: run has no flag %s", option, flag)
			}
		}
	}
}

// TestFlagError: an error about a setting names its flag, and the flag
// that would fix it, once; the context around it stays; errors.Is still
// sees what it wraps.
func TestFlagError(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := steady.Run(ctx, steady.Config{Target: &steady.Target{Addr: prober.Target{Network: "tcp", Address: "192.0.2.1:80"}}}, nil)
	const want = "--target: 192.0.2.1:80 is not a loopback address; steady loads only this machine's servers unless allowed (--allow-remote)"
	if got := flagError(err); got == nil || got.Error() != want {
		t.Errorf("flagError(%v) = %v, want %q", err, got, want)
	}
	wrapped := fmt.Errorf("default arm on knative: %w", err)
	if got := flagError(wrapped); got == nil || got.Error() != "default arm on knative: "+want || !errors.Is(got, err) {
		t.Errorf("flagError(%v) = %v, want %q wrapping it", wrapped, got, "default arm on knative: "+want)
	}
	plain := errors.New("no server to measure")
	if got := flagError(plain); got != plain {
		t.Errorf("flagError(%v) = %v, want it as it is", plain, got)
	}
}
