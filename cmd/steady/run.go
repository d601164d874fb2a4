package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/coldstart-go/coldstart/budget"
	"github.com/coldstart-go/coldstart/campaign"
	"github.com/coldstart-go/coldstart/cmd/internal/cliopts"
	"github.com/coldstart-go/coldstart/internal/grpcschema"
	"github.com/coldstart-go/coldstart/internal/render"
	"github.com/coldstart-go/coldstart/internal/size"
	"github.com/coldstart-go/coldstart/internal/stats"
	"github.com/coldstart-go/coldstart/prober"
	"github.com/coldstart-go/coldstart/record"
	"github.com/coldstart-go/coldstart/steady"
)

// runOptions are steady run's flags, as typed: those coldstart shares
// (cliopts.Common) and steady's own; validate parses them into cfg.
type runOptions struct {
	cliopts.Common
	Protocols   string
	Scenarios   string
	Payloads    string
	Concurrency string
	Conns       string
	Pipeline    string
	// StreamsPerConn (--streams-per-conn): the fan-out's requests in
	// flight per connection, "" = none (--concurrency spread over --conns).
	StreamsPerConn string
	Warmup         int
	Calls          int
	Rounds         int
	// AutoRounds (--rounds auto): each step's rounds until its medians
	// are known within Precision, at most MaxRounds; Rounds is then 0.
	AutoRounds   bool
	Precision    float64
	MaxRounds    int
	Confidence   float64
	Duration     time.Duration
	Rate         float64
	Ramp         bool
	RampStep     float64
	RampMax      float64
	RampP99      time.Duration
	RampErrors   float64
	MaxInFlight  int
	HTTPPath     string
	PinServer    budget.CPUList
	PinGenerator budget.CPUList
	Client       string
	Target       string
	ServerPID    int
	// Wide prints every step column at a terminal, as -o csv has them.
	Wide bool
	// --on knative: --on, --via, the cluster and its Services.
	cliopts.Cluster
	DebugAddr    string
	AllowRemote  bool
	Soak         time.Duration
	SoakAuto     bool
	MaxSoak      time.Duration
	SoakInterval time.Duration
	WindowLimit  time.Duration
	// The user's own method (--call) with its requests, metadata and
	// schema; flag names as ghz's.
	Call        string
	Data        string
	DataFile    string
	Metadata    []string
	Protoset    string
	Protos      []string
	ImportPaths []string
	// TLS for the load: --tls, or a grpcs://, https:// or h3:// --target, with
	// these files and names, as coldstart's probes take them; and how
	// often each connection is dialled again.
	TLS            cliopts.TLS
	ReconnectEvery int

	cfg steady.Config // filled by validate
}

func newRunCmd(run func(context.Context, *runOptions, io.Writer) error) *cobra.Command {
	// The flags' defaults are steady's own: one place says what each
	// setting is when not given.
	d := steady.Defaults()
	o := &runOptions{
		Common:      cliopts.New("steady", []string{"default", "static", "upx", "pgo", "image"}),
		Protocols:   list(d.Protocols, func(p steady.Protocol) string { return string(p) }),
		Payloads:    list(d.Payloads, func(n int) string { return size.Format(int64(n)) + "B" }),
		Concurrency: list(d.Concurrency, strconv.Itoa), Conns: list(d.Conns, strconv.Itoa), Pipeline: list(d.Pipeline, strconv.Itoa),
		Warmup: d.Warmup, Calls: d.Calls, Rounds: d.Rounds, Precision: stats.DefaultPrecision, MaxRounds: steady.DefaultMaxRounds, Confidence: d.Confidence, RampP99: d.RampP99, RampErrors: d.RampErrors,
		MaxInFlight: d.MaxInFlight, HTTPPath: d.HTTPPath,
		Client: string(d.Client), SoakInterval: d.SoakInterval, MaxSoak: 10 * time.Minute, WindowLimit: d.WindowLimit,
		Cluster: cliopts.NewCluster(),
	}
	cmd := &cobra.Command{
		Use:   "run [flags] [PKG] [-- SERVER ARGS...]",
		Short: "Warm each server, load it, and report latency, throughput, CPU and allocation per call, memory",
		Long: `run builds PKG (default: the bundled sample server) or takes --bin binaries (PATH:
measured as default and upx; ARM=PATH: each as it is), starts each once per budget,
waits for it to be ready, and for each protocol and payload size runs the scenarios:
sequential (one call in flight), throughput (each --concurrency level over each --conns
count, or with --streams-per-conn S a fan-out of --conns C connections × S requests in
flight on each, or HTTP/1.1 pipelined --pipeline deep), stream (EchoStream ping-pong), open (--rate calls/s for --duration, latency from each call's intended
send time) or ramp (the rate raised by --ramp-step until p99 or the error rate crosses
its limit; the last step under it is the knee). Each step is warmed with --warmup
uncounted calls, then measured in --rounds rounds: one window per arm per round, the
arms round-robin with the order rotated each round, so drift on a busy machine spreads
over all arms. Each window is recorded ("step_round", with what else the machine did
meanwhile); each row is the medians over the rounds with their --confidence intervals
("step"), and its calls/s and server CPU per call against the --baseline arm's rounds of
the same step: the ratio, its interval, the p-value and the verdict (vs_baseline_* and
vs_baseline_cpu_*). --rounds auto leaves the number open: each step's rounds go on until
every arm's calls/s and server CPU per call medians (the figures those verdicts compare;
not latency) have intervals within --precision of the median, after at least 6 rounds, or
--max-rounds; stderr says why each step stopped and its row records it ("stopped": precision,
max-rounds or interrupted). An interrupted run keeps the rounds it finished. The server's CPU per call comes from /proc (all threads); allocation per call
and GC cycles from its runtime metrics when it serves them on $COLDSTART_DEBUG_ADDR.

Server arguments after -- may name {addr}, {host}, {port}, {socket} (a Unix socket instead of
a port), {http_addr} and {debug_addr}; HTTP load goes to {http_addr} when they name it,
else to the server's own address ($PORT or the socket).

--target ADDR loads a server that is already running (host:port or unix:///path; only
loopback unless --allow-remote) instead of starting arms; --server-pid PID, which must be
the process listening at ADDR, lets steady meter its CPU and memory, else those columns
are null (unknown). h3://HOST:PORT/PATH is a server over HTTP/3 on that UDP port: it
implies --tls and, unless --protocol says otherwise, --protocol h3; a URL's path (h3://,
https://, http://) is --http-path's. A gRPC target without coldstart's Echo service but
with the standard health service (fortio's, say) is loaded with health checks, said on
stderr and in each row's method (stream scenarios need Echo). --call /pkg.Svc/Method loads your own unary or
server-streaming method instead (one call = the request and every reply up to the status),
with -d JSON or -D FILE (one JSON request a line, taken in turn) and -m KEY=VALUE metadata;
its types come from --protoset FILE, --proto FILE (-i DIRS for imports; compiled in
process) or the server's reflection service. Rows record the method and the metadata's
keys (never values), and count failed calls by status code. --soak D --rate R loads one open-loop rate for D, one row per
--soak-interval, and ends with the slope of RSS and p99 over time (95% interval) and a
verdict: stable or drifting. --soak auto ends once the RSS slope is known within ±0.5 MiB/h
(half the +1 MiB/h that counts as a leak), after at least 6 rows, or at --max-soak; it
stops on the interval's width, never on the verdict.

--tls (or a grpcs://, https:// or h3:// --target) loads over TLS, as coldstart run probes:
gRPC over TLS with either client, HTTP/1.1 as https, and HTTP/2 negotiated by ALPN
(--protocol h2; h2c stays clear text), and HTTP/3 over QUIC to the UDP port of the HTTP
address's host:port (--protocol h3; the sample server serves it with --http3-addr), verified
against --cacert (or the system's roots),
with a client certificate for mTLS (--cert, --key); the results file records the files'
paths and fingerprints, never a key. A certificate that does not verify, a plaintext server
with --tls or a TLS server without it is said before any load. Connections live for the
whole step and never resume a session; --reconnect-every N closes and redials each one
after N calls on it, and rows count the TLS handshakes per second (tls_handshakes_per_s).`,
		Example: `  steady run --warmup 2000 --calls 20000
  steady run --protocol grpc,http1 --payload 8B,1KiB,64KiB --concurrency 1,32 --conns 1,8
  steady run --rate 2000 --duration 10s
  steady run --ramp --rate 2000 --ramp-step 2000 --duration 5s
  steady run --pin-server 0 --pin-generator 1
  steady run --bin api=./api --protocol http1,h2c --pipeline 1,16,64
  steady run --client lean --pin-generator 1
  steady run --target 127.0.0.1:8080 --server-pid 4242 --scenario sequential,throughput
  steady run --target unix:///run/api.sock --protocol http1
  steady run --soak 10m --soak-interval 1m --rate 1000
  steady run --soak auto --soak-interval 30s --rate 1000
  steady run --target 127.0.0.1:8079 --call /fgrpc.PingServer/Ping -d '{"payload": "hi"}' -m authorization=Bearer-x
  steady run --target grpcs://127.0.0.1:8443 --cacert ca.pem --client lean --reconnect-every 1000
  steady run --target h3://127.0.0.1:8443/echo --cacert ca.pem --conns 4 --streams-per-conn 8
  steady run --tls --cacert ca.pem --protocol h3,h2,http1 --conns 4 --streams-per-conn 8 -- --addr={addr} --http-addr={http_addr} --http3-addr={http_addr} --tls-cert cert.pem --tls-key key.pem`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.SetArgs(cmd, args)
			if err := o.validate(cmd); err != nil {
				return err
			}
			return run(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	o.Common.Bind(cmd, "")
	f := cmd.Flags()
	f.StringVar(&o.Protocols, "protocol", o.Protocols, "protocols, comma-separated: grpc, http1 (keep-alive HTTP/1.1 JSON), h2c (HTTP/2 in clear text), h2 (HTTP/2 over TLS, with --tls), h3 (HTTP/3 over QUIC, with --tls: the UDP port of the HTTP address)")
	f.StringVar(&o.Scenarios, "scenario", "", "scenarios, comma-separated: sequential, throughput, stream, open, ramp (\"\" = sequential,throughput; open with --rate; ramp with --ramp)")
	f.StringVar(&o.Payloads, "payload", o.Payloads, "payload sizes, comma-separated, in B, KiB, MiB, kB or MB (e.g. 8B,1KiB,64KiB)")
	f.StringVar(&o.Concurrency, "concurrency", o.Concurrency, "calls in flight for throughput and stream, comma-separated")
	f.StringVar(&o.Conns, "conns", o.Conns, "connections for gRPC, h2c, h2 and h3, comma-separated (streams per connection = concurrency/conns, or --streams-per-conn)")
	f.StringVar(&o.StreamsPerConn, "streams-per-conn", "", "throughput as a fan-out for gRPC, h2c, h2 and h3: each --conns C with S requests in flight on each connection (C×S in flight), comma-separated S (\"\" = --concurrency spread over --conns)")
	f.StringVar(&o.Pipeline, "pipeline", o.Pipeline, "HTTP/1.1 pipelining depths, comma-separated (1 = plain keep-alive; connections = concurrency/depth)")
	f.IntVar(&o.Warmup, "warmup", o.Warmup, "uncounted calls before each measured window (0 = none)")
	f.IntVar(&o.Calls, "calls", o.Calls, "calls per closed-loop window (ignored when --duration is set)")
	f.Var(&cliopts.AutoCount{N: &o.Rounds, Auto: &o.AutoRounds, Unit: "rounds"}, "rounds", "measured windows per arm and step, arms (and the protocols of one scenario, payload and concurrency) interleaved round by round (at least 1; 6 or more for 95% intervals), or auto: each step's rounds until every arm's calls/s and server CPU per call medians are within --precision, at most --max-rounds")
	f.Float64Var(&o.Precision, "precision", o.Precision, "--rounds auto: stop a step once every arm's calls/s and server CPU per call (where read) median intervals reach no farther than this fraction of the median on either side (0.03 = ±3%); latency is not waited for")
	f.IntVar(&o.MaxRounds, "max-rounds", o.MaxRounds, "--rounds auto: stop a step after this many rounds, however wide the intervals (at least 6)")
	f.Float64Var(&o.Confidence, "confidence", o.Confidence, "confidence level of the intervals over rounds, between 0 and 1")
	f.DurationVar(&o.Duration, "duration", 0, "length of each open-loop window, and of closed-loop windows when set (0 = --calls)")
	f.Float64Var(&o.Rate, "rate", 0, "open-loop rate in calls/s (needs --duration); the ramp's first rate")
	f.BoolVar(&o.Wide, "wide", false, "print every step column in the table (latency percentiles, client CPU, allocation, GC, memory), as -o csv has them")
	f.BoolVar(&o.Ramp, "ramp", false, "raise the open-loop rate step by step until p99 or the error rate crosses its limit")
	f.Float64Var(&o.RampStep, "ramp-step", 0, "calls/s added at each ramp step (0 = --rate)")
	f.Float64Var(&o.RampMax, "ramp-max", 0, "highest ramp rate in calls/s (0 = 100 × --rate)")
	f.DurationVar(&o.RampP99, "ramp-p99", o.RampP99, "the ramp stops when p99 exceeds this")
	f.Float64Var(&o.RampErrors, "ramp-errors", o.RampErrors, "the ramp stops when the error rate (0..1) exceeds this")
	f.IntVar(&o.MaxInFlight, "max-in-flight", o.MaxInFlight, "open loop: most calls outstanding at once (late calls wait; their wait counts)")
	f.StringVar(&o.HTTPPath, "http-path", o.HTTPPath, "path HTTP load POSTs {\"payload\": base64} to")
	f.Var(&o.PinServer, "pin-server", "CPUs for the server, e.g. 0 (same as --budget cpus=LIST)")
	f.Var(&o.PinGenerator, "pin-generator", "CPUs for steady itself, e.g. 1 (\"\" = not pinned); servers then default to the other CPUs")
	f.StringVar(&o.Client, "client", o.Client, "gRPC client: grpc (grpc-go) or lean (HTTP/2 frames written directly, for a cheaper generator)")
	f.StringVar(&o.Target, "target", "", "load this running server instead of starting arms: host:port, unix:///path, or h3://host:port/path (HTTP/3 on that UDP port, over TLS); with --on knative, the ingress address (\"\" = each Service's cluster-local address)")
	o.Cluster.BindOn(cmd, "where the servers run: local, or knative (the Services coldstart deploy made, one per --arms arm, loaded through --target with each Service's host as :authority)",
		"--on knative: what --target is: ingress (calls carry the Service's host) or activator (Knative's activator, e.g. its Service on port 81; calls carry the revision's host, as coldstart run --via activator)")
	f.IntVar(&o.ServerPID, "server-pid", 0, "with --target: the server's PID (its listener), to meter its CPU and memory (0 = unknown: those columns are null)")
	f.StringVar(&o.DebugAddr, "debug-addr", "", "with --target: where the server serves runtime metrics (/debug/runtime), for allocation per call and GC cycles")
	f.BoolVar(&o.AllowRemote, "allow-remote", false, "with --target: allow an address that is not loopback")
	f.Var(&cliopts.AutoDuration{D: &o.Soak, Auto: &o.SoakAuto}, "soak", "soak: one open-loop --rate for this long, a row per --soak-interval, then RSS and p99 trends (0 = no soak), or auto: until the RSS slope's 95% interval is within ±0.5 MiB/h, at least 6 rows, at most --max-soak")
	f.DurationVar(&o.MaxSoak, "max-soak", o.MaxSoak, "--soak auto: the longest each server's soak runs, however wide the RSS slope's interval")
	f.DurationVar(&o.SoakInterval, "soak-interval", o.SoakInterval, "soak: length of each row")
	f.DurationVar(&o.WindowLimit, "window-limit", o.WindowLimit, "longest a closed-loop window may run, whatever --calls")
	f.StringVar(&o.Call, "call", "", "load this gRPC method of yours, /pkg.Svc/Method (unary or server-streaming), instead of Echo (\"\" = Echo)")
	f.StringVarP(&o.Data, "data", "d", "", "with --call: the request as JSON (protojson; \"\" = the empty message)")
	f.StringVarP(&o.DataFile, "data-file", "D", "", "with --call: a file of JSON requests, one a line, taken in turn")
	f.StringArrayVarP(&o.Metadata, "metadata", "m", nil, "with --call: KEY=VALUE sent with every call (repeatable; rows record the keys, never the values)")
	f.StringVar(&o.Protoset, "protoset", "", "with --call: the method's types from this FileDescriptorSet (protoc --descriptor_set_out --include_imports) (\"\" = server reflection)")
	f.StringArrayVar(&o.Protos, "proto", nil, "with --call: the method's types from this .proto file, compiled in process (repeatable; \"\" = server reflection)")
	f.StringSliceVarP(&o.ImportPaths, "import-paths", "i", nil, "with --proto: directories its imports are found in, comma-separated or repeated (the file's own directory is searched too)")
	o.TLS.Bind(cmd, "load over TLS: gRPC over TLS, HTTP/1.1 as https, HTTP/2 by ALPN (--protocol h2), HTTP/3 over QUIC (--protocol h3), each connection a new TLS client, never resuming a session, and the readiness checks too (grpcs://, https:// and h3:// targets imply it)",
		"the host dialled, or localhost for a Unix socket")
	f.IntVar(&o.ReconnectEvery, "reconnect-every", 0, "close each connection and dial it again after this many calls on it, to measure connection (and TLS handshake) churn; rows count handshakes/s (0 = never)")
	cmd.MarkFlagsMutuallyExclusive("data", "data-file")
	cmd.MarkFlagsMutuallyExclusive("proto", "protoset")
	cmd.MarkFlagsMutuallyExclusive("pin-server", "budget")
	return cmd
}

// list is a flag's comma-separated default, each value as text says.
func list[T any](vs []T, text func(T) string) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = text(v)
	}
	return strings.Join(s, ",")
}

// configFlags are the flags run sets steady.Config's settings from, by
// the settings' field paths: the one table that says which flag a
// steady.OptionError is about (flagError). Arms, which PKG, --bin, --arms
// and the server arguments make, is named by all of them.
var configFlags = map[string]string{
	"Arms":                    "--bin, --arms, PKG, server arguments",
	"Target":                  "--target",
	"Target.Addr":             "--target",
	"Target.HTTPAddr":         "--target", // Addr's, unless set apart
	"Target.PID":              "--server-pid",
	"Target.DebugAddr":        "--debug-addr",
	"Target.AllowRemote":      "--allow-remote",
	"Client":                  "--client",
	"Call.Method":             "--call",
	"Call.Data":               "--data",
	"Call.DataFile":           "--data-file",
	"Call.Metadata":           "--metadata",
	"Call.Schema.Protoset":    "--protoset",
	"Call.Schema.Protos":      "--proto",
	"Call.Schema.ImportPaths": "--import-paths",
	"Protocols":               "--protocol",
	"Scenarios":               "--scenario",
	"Payloads":                "--payload",
	"Concurrency":             "--concurrency",
	"Conns":                   "--conns",
	"Pipeline":                "--pipeline",
	"StreamsPerConn":          "--streams-per-conn",
	"Warmup":                  "--warmup",
	"Calls":                   "--calls",
	"Duration":                "--duration",
	"Rate":                    "--rate",
	"RampStep":                "--ramp-step",
	"RampMax":                 "--ramp-max",
	"RampP99":                 "--ramp-p99",
	"RampErrors":              "--ramp-errors",
	"MaxInFlight":             "--max-in-flight",
	"HTTPPath":                "--http-path",
	"GeneratorCPUs":           "--pin-generator",
	"Rounds":                  "--rounds",
	"Precision":               "--precision",
	"MaxRounds":               "--max-rounds",
	"Confidence":              "--confidence",
	"Soak":                    "--soak",
	"SoakAuto":                "--soak",
	"SoakInterval":            "--soak-interval",
	"WindowLimit":             "--window-limit",
	"TLS":                     "--tls",
	"TLS.Options.CAFile":      "--cacert",
	"TLS.Options.ServerName":  "--tls-server-name",
	"TLS.Options.CertFile":    "--cert",
	"ReconnectEvery":          "--reconnect-every",
}

// tlsFlags are the flags prober.LoadTLS's inputs and prober's TLS checks
// name (prober.OptionError), as coldstart's probeFlags.
var tlsFlags = map[string]string{
	"tls": "--tls", "cacert": "--cacert", "tls-server-name": "--tls-server-name", "cert": "--cert", "key": "--key",
}

// flagError is err as the user reads it: where steady says which setting
// of its Config is wrong (a steady.OptionError, with the context around
// it kept), the message names the flag that set it instead, and the flag
// that would fix it (and cliopts.BudgetError names --cgroup-parent where
// budget says what a cgroup needs when not root). steady knows no flags, so that its checks and their
// words live once, in steady, whoever fills its Config.
func flagError(err error) error {
	err = cliopts.BudgetError(err)
	var pe *prober.OptionError
	if errors.As(err, &pe) {
		if f, ok := tlsFlags[pe.Option]; ok {
			err = cliopts.ReplaceMessage(err, pe, f+": "+pe.Err.Error())
		}
	}
	var oe *steady.OptionError
	if !errors.As(err, &oe) {
		return err
	}
	return cliopts.ReplaceMessage(err, oe, oe.Text(func(option string) string {
		if f, ok := configFlags[option]; ok {
			return f
		}
		return option
	}))
}

// validate checks every flag and fills o.cfg, naming the flag in its own
// errors; steady.Config.Validate checks the settings (flagError names
// their flags). The steps run in the order the errors are reported in.
func (o *runOptions) validate(cmd *cobra.Command) error {
	if err := o.Cluster.Check(&o.Common, o.Target); err != nil {
		return err
	}
	if err := o.Common.Validate(); err != nil {
		return err
	}
	for _, step := range []func(*cobra.Command) error{
		o.sweepConfig, o.loopConfig, o.targetConfig, o.soakConfig, o.callConfig, o.tlsConfig,
	} {
		if err := step(cmd); err != nil {
			return err
		}
	}
	return o.checkConfig()
}

// sweepConfig fills the lists steady sweeps (protocols, payloads,
// concurrency, conns, pipeline, scenarios) from their flags.
func (o *runOptions) sweepConfig(*cobra.Command) error {
	c := &o.cfg
	for _, p := range strings.Split(o.Protocols, ",") {
		c.Protocols = append(c.Protocols, steady.Protocol(strings.TrimSpace(p)))
	}
	var err error
	if c.Payloads, err = steady.ParseSizes(o.Payloads); err != nil {
		return fmt.Errorf("--payload: %w", err)
	}
	if c.Concurrency, err = steady.ParseCounts(o.Concurrency); err != nil {
		return fmt.Errorf("--concurrency: %w", err)
	}
	if c.Conns, err = steady.ParseCounts(o.Conns); err != nil {
		return fmt.Errorf("--conns: %w", err)
	}
	if c.Pipeline, err = steady.ParseCounts(o.Pipeline); err != nil {
		return fmt.Errorf("--pipeline: %w", err)
	}
	if o.StreamsPerConn != "" {
		if c.StreamsPerConn, err = steady.ParseCounts(o.StreamsPerConn); err != nil {
			return fmt.Errorf("--streams-per-conn: %w", err)
		}
	}
	switch {
	case o.Scenarios != "":
		for _, s := range strings.Split(o.Scenarios, ",") {
			c.Scenarios = append(c.Scenarios, steady.Scenario(strings.TrimSpace(s)))
		}
	case o.Ramp:
		c.Scenarios = []steady.Scenario{steady.Ramp}
	case o.Rate > 0 && !o.soaking():
		c.Scenarios = []steady.Scenario{steady.Open}
	}
	return nil
}

// loopConfig fills each window's load (warmup, calls, duration, rate,
// rounds, the ramp's bounds), the budgets and the client.
func (o *runOptions) loopConfig(*cobra.Command) error {
	c := &o.cfg
	// steady.Config reads a 0 as its default, so it cannot check one;
	// these flags already hold steady's defaults, so a 0 given here is
	// refused (for --warmup, passed on as none) rather than taken for
	// the default.
	if o.Warmup < 0 {
		return fmt.Errorf("--warmup: %d, want 0 or more calls", o.Warmup)
	}
	if o.Calls < 1 {
		return fmt.Errorf("--calls: %d, want at least 1", o.Calls)
	}
	if !o.AutoRounds && o.Rounds < 1 {
		return fmt.Errorf("--rounds: %d, want at least 1 measured window per arm and step (6 or more give 95%% intervals), or auto", o.Rounds)
	}
	if err := stats.CheckPrecision(o.Precision); err != nil {
		return fmt.Errorf("--precision: %w", err)
	}
	if o.MaxRounds < stats.MinAutoRounds {
		return fmt.Errorf("--max-rounds: %d, want at least %d (the fewest rounds whose median has a 95%% interval: below it no step could stop on precision)", o.MaxRounds, stats.MinAutoRounds)
	}
	if o.AutoRounds && o.soaking() {
		return errors.New("--rounds auto: a --soak loads one open loop in --soak-interval rows, not rounds: there are none to stop on precision")
	}
	if o.AutoRounds && o.onlyRamp() {
		return errors.New("--rounds auto: a --ramp searches for its knee once per arm, not in rounds: there are none to stop on precision")
	}
	if err := stats.CheckConfidence(o.Confidence); err != nil {
		return fmt.Errorf("--confidence: %w", err)
	}
	if o.MaxInFlight < 1 {
		return fmt.Errorf("--max-in-flight: %d, want at least 1", o.MaxInFlight)
	}
	if o.RampStep < 0 || o.RampMax < 0 || o.RampErrors < 0 || o.RampP99 < 0 {
		return errors.New("--ramp-step, --ramp-max, --ramp-p99, --ramp-errors: want values ≥ 0")
	}
	c.Warmup = o.Warmup
	if o.Warmup == 0 {
		c.Warmup = -1 // none
	}
	c.Calls, c.Duration, c.Rate = o.Calls, o.Duration, o.Rate
	c.Rounds, c.Confidence = o.Rounds, o.Confidence
	if o.AutoRounds {
		c.Precision, c.MaxRounds = o.Precision, o.MaxRounds
	}
	c.RampStep, c.RampMax, c.RampP99, c.RampErrors = o.RampStep, o.RampMax, o.RampP99, o.RampErrors
	c.MaxInFlight, c.HTTPPath = o.MaxInFlight, o.HTTPPath
	c.Budgets = o.Budgets.Budgets
	if len(o.PinServer) > 0 {
		c.Budgets = []budget.Budget{{CPUs: o.PinServer}}
	}
	c.Client = steady.Client(o.Client)
	return nil
}

// targetConfig checks the flags that only some targets take (--on
// knative's, a running --target's) and fills cfg.Target for a local
// --target.
func (o *runOptions) targetConfig(cmd *cobra.Command) error {
	c := &o.cfg
	if o.Knative() {
		if o.ServerPID != 0 || o.DebugAddr != "" || cmd.Flags().Changed("budget") || len(o.PinServer) > 0 {
			return errors.New("--on knative: --server-pid, --debug-addr, --budget and --pin-server are for local servers (the pods run on the cluster)")
		}
		for _, p := range c.Protocols {
			if p != steady.GRPC {
				return fmt.Errorf("--on knative: --protocol %s: only grpc goes through the ingress with the Service's authority here", p)
			}
		}
		if o.Target != "" {
			if _, err := steady.ParseTarget(o.Target); err != nil {
				return fmt.Errorf("--target: %w", err)
			}
		}
	}
	if o.Target != "" && o.On == "local" {
		if cmd.Flags().Changed("budget") || len(o.PinServer) > 0 {
			return errors.New("--target: --budget and --pin-server apply to servers steady starts; this one is already running")
		}
		t, err := steady.ParseTarget(o.Target)
		if err != nil {
			return fmt.Errorf("--target: %w", err)
		}
		c.Target = &steady.Target{Addr: t, PID: o.ServerPID, DebugAddr: o.DebugAddr, AllowRemote: o.AllowRemote}
		if err := o.targetURL(cmd); err != nil {
			return err
		}
	} else if o.ServerPID != 0 || o.DebugAddr != "" || o.AllowRemote {
		return errors.New("--server-pid, --debug-addr, --allow-remote: only with --target (steady meters the servers it starts itself)")
	}
	return nil
}

// soaking says whether the flags ask for a soak, of fixed length or auto.
func (o *runOptions) soaking() bool { return o.Soak != 0 || o.SoakAuto }

// soakConfig fills the soak's settings and the window limit.
func (o *runOptions) soakConfig(cmd *cobra.Command) error {
	c := &o.cfg
	if o.soaking() {
		if cmd.Flags().Changed("duration") || o.Ramp || o.Scenarios != "" {
			return errors.New("--soak: runs its own open loop; --duration, --ramp and --scenario do not apply")
		}
		c.Soak, c.SoakInterval = o.Soak, o.SoakInterval
		if o.SoakAuto {
			if o.MaxSoak <= 0 {
				return fmt.Errorf("--max-soak: %v, want a positive duration", o.MaxSoak)
			}
			if o.SoakInterval > 0 && o.MaxSoak < stats.MinAutoRounds*o.SoakInterval {
				return fmt.Errorf("--max-soak: %v is shorter than %d soak intervals (%v), the fewest a soak stops on precision after; raise it or shorten --soak-interval", o.MaxSoak, stats.MinAutoRounds, o.SoakInterval)
			}
			c.Soak, c.SoakAuto = o.MaxSoak, true
		}
	} else if cmd.Flags().Changed("soak-interval") {
		return errors.New("--soak-interval: only with --soak")
	}
	if cmd.Flags().Changed("max-soak") && !o.SoakAuto {
		return errors.New("--max-soak: only with --soak auto (a soak of fixed length runs for --soak)")
	}
	if o.WindowLimit <= 0 {
		return fmt.Errorf("--window-limit: %v, want a positive duration", o.WindowLimit)
	}
	c.WindowLimit = o.WindowLimit
	return nil
}

// checkConfig has steady check the settings, each once: the arms are
// built at run time, so it checks them with a stand-in, there whenever the
// flags start servers (beside --target too, which steady refuses). Then
// --baseline must name an arm.
func (o *runOptions) checkConfig() error {
	check := o.cfg
	if o.On == "knative" {
		// Each arm's target is resolved from the cluster at run time.
		check.Target = &steady.Target{Addr: prober.Target{Network: "tcp", Address: "127.0.0.1:80"}}
	} else if o.Target == "" || o.Bin.Given() || o.Pkg != "" || len(o.ServerArgs) > 0 || o.Arms.Given() {
		check.Arms = []steady.Arm{{Name: "default", Path: "server"}}
	}
	if err := check.Validate(); err != nil {
		return err
	}
	if o.Variants.Given() && (o.Target != "" || o.On == "knative") {
		return errors.New("--variant, --sweep: only for servers steady starts itself; a --target or a Service on the cluster runs as it was started")
	}
	return o.CheckArms(o.armNames())
}

// onlyRamp says the scenarios are ramps only (--ramp, or --scenario
// ramp), which run no rounds.
func (o *runOptions) onlyRamp() bool {
	if o.Scenarios == "" {
		return o.Ramp
	}
	for _, s := range strings.Split(o.Scenarios, ",") {
		if steady.Scenario(strings.TrimSpace(s)) != steady.Ramp {
			return false
		}
	}
	return true
}

// targetURL takes what a --target URL says beyond its address: h3://
// loads HTTP/3 (the protocols, unless --protocol is given, which must
// then include h3), and a path is where HTTP load POSTs (as --http-path,
// which may not say otherwise).
func (o *runOptions) targetURL(cmd *cobra.Command) error {
	c := &o.cfg
	if steady.TargetH3(o.Target) {
		switch {
		case !cmd.Flags().Changed("protocol"):
			c.Protocols = []steady.Protocol{steady.H3}
		case !slices.Contains(c.Protocols, steady.H3):
			return fmt.Errorf("--target %s is a server over HTTP/3, and --protocol %s leaves h3 out: add h3, or give the target as host:port", o.Target, o.Protocols)
		}
	}
	if p := steady.TargetPath(o.Target); p != "" {
		if cmd.Flags().Changed("http-path") && o.HTTPPath != p {
			return fmt.Errorf("--target %s names the path %s, and --http-path %s another: give one", o.Target, p, o.HTTPPath)
		}
		c.HTTPPath = p
	}
	return nil
}

// tlsConfig loads the TLS flags' files into cfg.TLS when --tls is given
// or the --target names TLS (grpcs://, https://); the other TLS flags
// alone are an error. It sets cfg.ReconnectEvery too.
func (o *runOptions) tlsConfig(*cobra.Command) error {
	if o.ReconnectEvery < 0 {
		return fmt.Errorf("--reconnect-every: %d, want 0 (never) or more calls", o.ReconnectEvery)
	}
	o.cfg.ReconnectEvery = o.ReconnectEvery
	if o.On == "knative" && (o.TLS.On || steady.TargetTLS(o.Target)) {
		return errors.New("--tls: --on knative loads each Service through the cluster's ingress in clear text (h2c); TLS is for local servers and --target")
	}
	tl, err := o.TLS.Load(steady.TargetTLS(o.Target), "a grpcs://, https:// or h3:// --target")
	if err != nil {
		return err // a prober.OptionError: flagError names the flag
	}
	o.cfg.TLS = tl
	return nil
}

// callConfig fills cfg.Call from --call and the flags that go with it.
func (o *runOptions) callConfig(cmd *cobra.Command) error {
	if o.Call == "" {
		for _, name := range []string{"data", "data-file", "metadata", "proto", "protoset", "import-paths"} {
			if cmd.Flags().Changed(name) {
				return fmt.Errorf("--%s: only with --call (steady loads Echo otherwise)", name)
			}
		}
		return nil
	}
	if cmd.Flags().Changed("payload") {
		return errors.New("--payload: Echo's payload; a --call method's requests are --data or --data-file")
	}
	md, err := grpcschema.ParseMetadata(o.Metadata)
	if err != nil {
		return fmt.Errorf("--metadata: %w", err)
	}
	call := &steady.Call{Method: o.Call, DataFile: o.DataFile, Metadata: md,
		Schema: grpcschema.Source{Protoset: o.Protoset, Protos: o.Protos, ImportPaths: o.ImportPaths}}
	if o.Data != "" {
		call.Data = [][]byte{[]byte(o.Data)}
	}
	o.cfg.Call = call
	return nil
}

// armNames are the arms steady will measure, in order, for --baseline: a
// --target's one ("target"), else --arms and the --bin ARM=PATH names.
func (o *runOptions) armNames() []string {
	if o.cfg.Target != nil {
		return []string{"target"}
	}
	arms := append([]string(nil), o.Arms.Names...)
	for _, b := range o.Bin.Named {
		arms = append(arms, b.Name)
	}
	return arms
}

// runSteady builds or takes the arms, runs steady, and writes the rows.
func runSteady(ctx context.Context, o *runOptions, w io.Writer) error {
	cfg := o.cfg
	cfg.Log, cfg.Verbose = o.Progress(), o.Verbose
	if o.On == "knative" {
		return runOnKnative(ctx, o, cfg, w)
	}
	rf, err := o.CreateResults("steady", nil)
	if err != nil {
		return err
	}
	if err := addTLS(rf, cfg.TLS); err != nil {
		return err
	}
	var built campaign.Built
	defer func() { built.Close() }()
	if cfg.Target == nil {
		if built, err = o.buildArms(ctx, rf); err != nil {
			return err
		}
		cfg.Arms = steadyArms(built.Arms, o.Env)
	}
	variants := map[string]record.Variant{}
	for _, a := range built.Arms {
		if a.Variant.IsVariant() {
			variants[a.Name] = a.Variant
		}
	}
	if len(o.PinGenerator) > 0 {
		if err := pinGenerator(&cfg, o.PinGenerator); err != nil {
			return err
		}
	}
	if cfg.Soak > 0 {
		return soak(ctx, cfg, o, rf, w, built)
	}
	// Every arm's rounds of a step end before any arm's row of medians
	// comes, so each row is set against the baseline's rounds as it comes.
	// A variant's rows are set against its own arm's.
	bl := record.NewBaselines(cfgArms(cfg), o.Baseline, func(a string) string { return variants[a].Of })
	base := bl.Base
	var rows, rounds []steady.Row
	cfg.Stopped = func(s steady.Stop) error {
		rf.Notef("%s", s)
		return nil
	}
	err = steady.Run(ctx, cfg, func(r steady.Row) error {
		r.Variant = variants[r.Arm]
		if r.Round > 0 {
			rounds = append(rounds, r)
			return rf.Add("step_round", r) // one window; the row of medians follows
		}
		record.CompareSteadyRow(&r, rounds, bl.For(r.Arm), cfg.Confidence, stats.DefaultMinEffect)
		rows = append(rows, r)
		return rf.Add("step", r)
	})
	show := stepRows(o.Output, rows, base)
	if o.Output == render.Table && !o.Wide {
		show = func(w io.Writer) error { return writeStepText(w, rows, rounds, base, cfg.Confidence) }
	}
	return rf.End(w, show, err, built)
}

// addTLS records how the load speaks TLS (paths and fingerprints, never a
// key), as coldstart run records its probes', and says when certificates
// go unverified.
func addTLS(rf *cliopts.Results, tl *prober.TLS) error {
	if tl == nil {
		return nil
	}
	if tl.Unverified() {
		rf.Notef("--insecure-skip-verify: the server's certificate is not verified; the rows are of unverified TLS")
	}
	return rf.Add(record.TLSClientKind, tl.Record)
}

// cfgArms names the arms cfg measures, in order: its --target's, else
// its arms.
func cfgArms(cfg steady.Config) []string {
	if cfg.Target != nil && cfg.Target.Name != "" {
		return []string{cfg.Target.Name}
	}
	if cfg.Target != nil {
		return []string{"target"}
	}
	names := make([]string, len(cfg.Arms))
	for i, a := range cfg.Arms {
		names[i] = a.Name
	}
	return names
}

// vsCPUFields are the columns record.CPUVsBaseline adds to a step row.
var vsCPUFields = []string{"vs_baseline_cpu_ratio", "vs_baseline_cpu_ci_low", "vs_baseline_cpu_ci_high", "vs_baseline_cpu_p", "vs_baseline_cpu_verdict"}

// stepRows prints the step rows in the -o format (the terminal's with
// --wide: writeStepText is its default). At a terminal each row's
// comparison with the baseline's rounds is two columns, calls/s
// ("1.12× [1.05, 1.20] faster") and server CPU per call ("0.91× [0.88,
// 0.95] lower"); a row whose rounds are too few for an interval says so.
// json, csv and markdown keep every field.
func stepRows(f render.Format, rows []steady.Row, base string) func(io.Writer) error {
	return cliopts.RowsVs(f, rows,
		cliopts.VsColumn{Header: "calls_per_s " + cliopts.VsHeader(base), Fields: cliopts.VsFields, Cell: func(i int) string { return callsVs(rows[i], base) }},
		cliopts.VsColumn{Header: "cpu " + cliopts.VsHeader(base), Fields: vsCPUFields, Cell: func(i int) string { return cpuVs(rows[i], base) }})
}

// buildArms builds the arms through the path coldstart run takes
// (cliopts.BuildArms: artifacts and build errors recorded there); the
// sample server gets steady.SampleArgs (gRPC and HTTP/1.1 addresses).
func (o *runOptions) buildArms(ctx context.Context, rf *cliopts.Results) (campaign.Built, error) {
	return o.BuildArms(ctx, rf, campaign.ArmsConfig{SampleArgs: steady.SampleArgs})
}

// steadyArms are the built arms as steady starts them: steady picks each
// server's addresses itself, so it takes the arguments unexpanded; env
// (--env) goes to every arm, a variant's own environment after it.
func steadyArms(arms []campaign.Arm, env []string) []steady.Arm {
	out := make([]steady.Arm, len(arms))
	for i, a := range arms {
		e := env
		if len(a.Variant.Env) > 0 {
			e = append(append([]string(nil), env...), a.Variant.Env...)
		}
		out[i] = steady.Arm{Name: a.Name, Path: a.Path, Args: a.ArgTemplate, Env: e, Launcher: a.Launcher, Prepare: a.Prepare}
	}
	return out
}

// pinGenerator pins steady to cpus and gives budgets without a CPU set the
// CPUs it leaves free, so the server does not inherit the generator's.
func pinGenerator(cfg *steady.Config, cpus []int) error {
	all, err := budget.AllowedCPUs()
	if err != nil {
		return fmt.Errorf("--pin-generator: %w", err)
	}
	rest := budget.Complement(all, cpus)
	for i, b := range cfg.Budgets {
		if len(b.CPUs) == 0 {
			cfg.Budgets[i].CPUs = rest
		}
	}
	cfg.GeneratorCPUs = cpus
	return nil
}

// soak runs steady.RunSoak, recording each interval as "soak" and each
// server's trends as "soak_summary", and prints the rows and verdicts.
func soak(ctx context.Context, cfg steady.Config, o *runOptions, rf *cliopts.Results, w io.Writer, built campaign.Built) error {
	var rows []steady.SoakRow
	var sums []steady.SoakSummary
	err := steady.RunSoak(ctx, cfg, func(r steady.SoakRow) error {
		rows = append(rows, r)
		return rf.Add("soak", r)
	}, func(s steady.SoakSummary) error {
		sums = append(sums, s)
		return rf.Add("soak_summary", s)
	})
	show := func(w io.Writer) error {
		// A soak compares no arms: its table leaves out the step rows'
		// comparison fields.
		noVs := []cliopts.VsColumn{{Fields: cliopts.VsFields}, {Fields: vsCPUFields}}
		if err := cliopts.RowsVs(o.Output, rows, noVs...)(w); err != nil {
			return err
		}
		if o.Output == render.Table || o.Output == render.Markdown {
			for _, s := range sums {
				fmt.Fprintf(w, "\n%s %s: %s over %.0f s at %.0f calls/s (%d intervals, %d calls, %d errors)\n  RSS %s\n  p99 %s\n",
					s.Arm, s.Budget, s.Verdict, s.Seconds, s.RateReq, s.Intervals, s.Calls, s.Errors, s.RSS.Text, s.P99.Text)
				if s.Stop != nil {
					fmt.Fprintf(w, "  %s\n", s.Stop)
				}
			}
		}
		return nil
	}
	return rf.End(w, show, err, built)
}
