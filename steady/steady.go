// Package steady measures a warm server: it starts each arm, warms it, puts
// it under closed-loop, streaming and open-loop load over gRPC, HTTP/1.1
// (keep-alive, optionally pipelined), HTTP/2 or HTTP/3 (QUIC), in clear
// text or over TLS (Config.TLS), and meters the server from outside (CPU from /proc,
// memory, Go runtime allocation) and the generator from inside (its own
// CPU per call), one Row per step.
package steady

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/coldstart-go/coldstart/budget"
	"github.com/coldstart-go/coldstart/internal/progress"
	"github.com/coldstart-go/coldstart/internal/stats"
	"github.com/coldstart-go/coldstart/launch"
	"github.com/coldstart-go/coldstart/prober"
)

// The protocols steady speaks.
const (
	// GRPC calls Echo (or EchoStream) over grpc-go, conns ClientConns shared
	// by the workers.
	GRPC Protocol = "grpc"
	// HTTP1 POSTs {"payload": base64} to the HTTP path over keep-alive
	// HTTP/1.1 connections, each carrying up to Pipeline requests in flight.
	HTTP1 Protocol = "http1"
	// H2C POSTs the same JSON over cleartext HTTP/2, the workers' requests
	// spread as streams over conns connections.
	H2C Protocol = "h2c"
	// H2 is H2C's load over TLS: HTTP/2 negotiated by ALPN (Config.TLS
	// must be set).
	H2 Protocol = "h2"
	// H3 is the same load over HTTP/3: QUIC connections to the UDP port
	// of the HTTP address's host:port, ALPN h3 (Config.TLS must be set:
	// QUIC is always TLS).
	H3 Protocol = "h3"
)

// Protocols lists the accepted protocols, for help text and errors.
var Protocols = []Protocol{GRPC, HTTP1, H2C, H2, H3}

// The scenarios, in the order a run performs them.
const (
	Sequential Scenario = "sequential" // one call in flight, closed loop
	Throughput Scenario = "throughput" // N calls in flight, closed loop
	Stream     Scenario = "stream"     // N EchoStream streams, ping-pong per message
	Open       Scenario = "open"       // constant rate, independent of responses
	Ramp       Scenario = "ramp"       // open-loop steps of rising rate
	Knee       Scenario = "knee"       // the last ramp step under the thresholds
)

// Arm is one server binary to measure.
type Arm struct {
	// Name labels the arm in rows and errors ("default", "pgo", ...).
	Name string
	// Path is the server binary.
	Path string
	// Args are its arguments. The placeholders {addr}, {port}, {socket},
	// {http_addr} and {debug_addr} are replaced by the addresses steady
	// chose ({socket} makes the server's address a Unix socket). When
	// an argument names {http_addr}, HTTP load goes there; otherwise it goes
	// to {addr} ($PORT), as for a plain HTTP server.
	Args []string
	// Env is added to the server's environment.
	Env []string
	// Launcher starts this arm (nil = Config.Launcher): the image arm's
	// runc launcher, say.
	Launcher launch.Launcher
	// Prepare, when set, runs before each start of the arm, told the
	// server's gRPC address (the --prepare hook). Its error ends the run.
	Prepare func(ctx context.Context, t prober.Target) error
}

// SampleArgs are the bundled sample server's arguments: gRPC on {addr},
// HTTP/1.1 JSON on {http_addr}.
var SampleArgs = []string{"--addr={addr}", "--http-addr={http_addr}"}

// Config says what to run. Zero fields take the defaults named on them,
// which Defaults returns.
type Config struct {
	Arms []Arm
	// Target is a running server to load instead of starting Arms.
	Target *Target
	// Soak, when set, replaces the scenarios with one open-loop load at
	// Rate for this long, reported every SoakInterval (see RunSoak).
	Soak time.Duration
	// SoakInterval is the length of each soak row (0 = 1 minute).
	SoakInterval time.Duration
	// SoakAuto makes Soak a cap: each server's soak ends after the first
	// window at which the slope of its RSS is known within half the rate
	// that counts as drift on either side (the 95% interval's half-width at
	// most 0.5 MiB/h), after at least stats.MinAutoRounds windows, or at
	// Soak. It stops on the interval's width, never on where the slope
	// lies, so it favours neither verdict. p99's trend is not waited for:
	// over minutes its interval stays far wider than its material rate.
	// The server's RSS must be known (a Target needs its PID).
	SoakAuto bool
	// soakTarget overrides the RSS slope half-width, in bytes/h, at which
	// SoakAuto stops (0 = rssTargetHalfWidth): tests soak for seconds,
	// where no slope is known to 0.5 MiB/h.
	soakTarget float64
	// WindowLimit bounds every closed-loop window in time, whatever its
	// call count (0 = 10 minutes; a soak is bounded by Soak instead).
	WindowLimit time.Duration
	// Client is the gRPC client library ("" = ClientGRPC).
	Client Client
	// TLS, when set, makes every connection of the load (and each
	// readiness check) a TLS client with its configuration: gRPC over
	// TLS, HTTP/1.1 as https, and HTTP/2 negotiated by ALPN (protocol H2;
	// H2C is clear text only). nil = plaintext. Rows then count the TLS
	// handshakes each window completed.
	TLS *prober.TLS
	// ReconnectEvery closes each connection of the load and dials it
	// again after this many calls on it, so that a window measures the
	// cost of connecting (TCP, and a full TLS handshake with TLS, which
	// resumes no session) beside the calls (0 = never: connections live
	// for the whole step).
	ReconnectEvery int
	// Call, when set, is the user's own gRPC method every gRPC step calls
	// instead of coldstart's Echo (or a target's health check); its
	// payload is its requests, so Payloads do not apply. gRPC only, and
	// not the stream scenario (EchoStream ping-pong).
	Call *Call
	// Budgets are the budgets each arm runs under, one server per arm and
	// budget (nil = one unlimited budget).
	Budgets []budget.Budget
	// Protocols to load the server over (nil = gRPC only).
	Protocols []Protocol
	// Scenarios to run, in this order (nil = sequential, throughput).
	// Open needs Rate and Duration; Ramp needs Rate, Duration and RampStep.
	Scenarios []Scenario
	// Payloads are the payload sizes in bytes (nil = 8).
	Payloads []int
	// Concurrency levels for throughput and stream (nil = 1, 32).
	Concurrency []int
	// Conns are the connection counts for gRPC, h2c, h2 and h3 (nil = 1).
	// A level with fewer workers than connections uses one connection per
	// worker.
	Conns []int
	// StreamsPerConn, when set, shapes the throughput steps of the
	// multiplexing protocols (gRPC, h2c, h2, h3) as a fan-out: each
	// Conns count C times each S here, C connections with S requests in
	// flight on each (C×S workers), instead of the Concurrency levels
	// spread over the connections (nil = Concurrency). HTTP/1.1, the
	// stream scenario and open loops keep Concurrency and MaxInFlight.
	StreamsPerConn []int
	// Pipeline depths for HTTP/1.1: requests in flight per connection
	// (nil = 1: plain keep-alive). N workers use ceil(N/depth) connections.
	Pipeline []int
	// Warmup is the number of uncounted calls before each measured window
	// (0 = 20,000; negative = none).
	Warmup int
	// Calls bounds each closed-loop window (0 = 50,000), unless Duration
	// is set.
	Calls int
	// Duration is the length of each open-loop window, and of each
	// closed-loop window when set.
	Duration time.Duration
	// Rate is the open-loop rate in calls per second, and the ramp's first
	// rate.
	Rate float64
	// RampStep is added to the rate at each ramp step (0 = Rate).
	RampStep float64
	// RampMax stops the ramp at this rate (0 = 100 × Rate).
	RampMax float64
	// RampP99 ends the ramp when a step's p99 exceeds it (0 = 10 ms).
	RampP99 time.Duration
	// RampErrors ends the ramp when a step's error rate exceeds it
	// (0 = 0.01).
	RampErrors float64
	// MaxInFlight bounds the calls outstanding in open loop (0 = 128). Late
	// calls wait for a free slot; their latency still counts from their
	// intended send time.
	MaxInFlight int
	// HTTPPath is the path HTTP load POSTs to (0 = "/echo").
	HTTPPath string
	// GeneratorCPUs pins steady itself (every thread) to these CPUs while it
	// loads a server, and sets its GOMAXPROCS to their number (nil = no
	// pin). Servers are started unpinned from it, so a budget may give them
	// other CPUs.
	GeneratorCPUs []int
	// Rounds is the number of measured windows per arm and step, the arms
	// interleaved round by round, and so the protocols of one scenario,
	// payload and concurrency (0 = DefaultRounds, or as many as Precision
	// takes).
	Rounds int
	// Precision, above 0, leaves the number of rounds open (Rounds must
	// be 0): each step's rounds go on until, for every arm, the medians of
	// calls/s and of server CPU per call (where it is read) have intervals
	// reaching no farther than Precision of the median on either side
	// (max(m−lo, hi−m)/m ≤ Precision, e.g. 0.03) after at least
	// stats.MinAutoRounds rounds, or MaxRounds rounds were measured
	// (stats.AutoStop). Those are the figures the verdicts against the
	// baseline compare; latency percentiles are not waited for. It stops
	// on precision, never on a comparison's p-value. A ramp's steps,
	// which run once, are not affected.
	Precision float64
	// MaxRounds caps each step's rounds when Precision is set (at least
	// stats.MinAutoRounds).
	MaxRounds int
	// Stopped, when set, gets why each step run with Precision stopped,
	// also when it was interrupted.
	Stopped func(Stop) error
	// Confidence is the level of the intervals over rounds (0 = 95%).
	Confidence float64
	// Launcher starts the servers (nil = launch.Process{}).
	Launcher launch.Launcher
	// Log gets progress lines and spawned command lines (nil = quiet).
	// The lines that count progress (each round of a step, each soak
	// interval) go through progress.For: a line each, or a live bar when
	// Log is a progress.Terminal; other lines print as they are (above a
	// live bar).
	Log io.Writer
	// Verbose also logs spawned command lines.
	Verbose bool

	progress progress.Reporter // Run's and RunSoak's, for the steps they count
}

// reportStep reports one counted step, line saying which, to the run's
// progress (as a line to Log when it has none).
func (c Config) reportStep(line string) {
	if c.progress == nil {
		fmt.Fprintln(c.Log, line)
		return
	}
	c.progress.Step(line)
}

// skipSteps takes n steps that will not be taken off the run's progress.
func (c Config) skipSteps(n int) {
	if c.progress != nil {
		c.progress.Skip(n)
	}
}

// roundLines is how many rounds Run reports: every round of every group
// of steps measured in rounds (stepGroups: a round each protocol's step
// of one scenario, payload and concurrency), under each budget (one when
// loading a target). Ramps, which search rather than run rounds, are not
// counted.
func roundLines(cfg Config) int {
	n := 0
	for _, g := range stepGroups(cfg) {
		if g[0].scenario != Ramp {
			n += cfg.maxRounds()
		}
	}
	if cfg.Target == nil {
		n *= len(cfg.Budgets)
	}
	return n
}

// Defaults returns the settings Config's zero fields stand for: the one
// place they are set, which Run (through withDefaults) and front ends
// (steady run's flag defaults) both take them from, so that they cannot
// drift apart. The settings whose defaults follow from others (RampStep
// and RampMax from Rate; Payloads with a Call) stay zero, as do those
// with no value to show (Launcher, Log).
func Defaults() Config {
	return Config{
		Budgets:      []budget.Budget{{}},
		Protocols:    []Protocol{GRPC},
		Scenarios:    []Scenario{Sequential, Throughput},
		Payloads:     []int{8},
		Concurrency:  []int{1, 32},
		Conns:        []int{1},
		Pipeline:     []int{1},
		Warmup:       20000,
		Calls:        50000,
		RampP99:      10 * time.Millisecond,
		RampErrors:   0.01,
		MaxInFlight:  128,
		HTTPPath:     "/echo",
		Rounds:       DefaultRounds,
		Confidence:   stats.DefaultConfidence,
		Client:       ClientGRPC,
		SoakInterval: time.Minute,
		WindowLimit:  10 * time.Minute,
	}
}

// withDefaults fills c's zero fields from Defaults, and those whose
// defaults follow from other settings.
func (c Config) withDefaults() Config {
	d := Defaults()
	if len(c.Budgets) == 0 {
		c.Budgets = d.Budgets
	}
	if len(c.Protocols) == 0 {
		c.Protocols = d.Protocols
	}
	if len(c.Scenarios) == 0 {
		c.Scenarios = d.Scenarios
	}
	if len(c.Payloads) == 0 {
		c.Payloads = d.Payloads
	}
	if c.Call != nil {
		c.Payloads = []int{0} // the requests are the Call's
	}
	if len(c.Concurrency) == 0 {
		c.Concurrency = d.Concurrency
	}
	if len(c.Conns) == 0 {
		c.Conns = d.Conns
	}
	if len(c.Pipeline) == 0 {
		c.Pipeline = d.Pipeline
	}
	if c.Warmup == 0 {
		c.Warmup = d.Warmup
	}
	if c.Warmup < 0 {
		c.Warmup = 0
	}
	if c.Calls == 0 {
		c.Calls = d.Calls
	}
	if c.RampStep == 0 {
		c.RampStep = c.Rate
	}
	if c.RampMax == 0 {
		c.RampMax = 100 * c.Rate
	}
	if c.RampP99 == 0 {
		c.RampP99 = d.RampP99
	}
	if c.RampErrors == 0 {
		c.RampErrors = d.RampErrors
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = d.MaxInFlight
	}
	if c.HTTPPath == "" {
		c.HTTPPath = d.HTTPPath
	}
	if c.Launcher == nil {
		c.Launcher = launch.Process{}
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	if c.Rounds == 0 && c.Precision == 0 {
		c.Rounds = d.Rounds
	}
	if c.Confidence == 0 {
		c.Confidence = d.Confidence
	}
	if c.Client == "" {
		c.Client = d.Client
	}
	if c.SoakInterval == 0 {
		c.SoakInterval = d.SoakInterval
	}
	if c.WindowLimit == 0 {
		c.WindowLimit = d.WindowLimit
	}
	return c
}

// Validate reports the first setting that cannot run as an *OptionError
// naming it by its field path (so that a front end can name its own
// option instead); a Config that names no server, or an arm that cannot
// start, is a plain error.
func (c Config) Validate() error {
	if len(c.Arms) == 0 && c.Target == nil {
		return errors.New("no server to measure")
	}
	if c.Target != nil {
		if len(c.Arms) > 0 {
			return &OptionError{Option: "Target", Fix: "Arms",
				Err: errors.New("a running server replaces the servers steady would start: give one or the other")}
		}
		if err := c.Target.checkLoopback(); err != nil {
			return err
		}
		if c.Target.PID < 0 {
			return optionf("Target.PID", "%d is not a process ID", c.Target.PID)
		}
	}
	if c.ReconnectEvery < 0 {
		return optionf("ReconnectEvery", "%d is negative (0 = never reconnect)", c.ReconnectEvery)
	}
	if c.Client != "" && !known(Clients, c.Client) {
		return optionf("Client", "unknown client %q (known: grpc, lean)", c.Client)
	}
	if c.Call != nil {
		if err := c.Call.validate(); err != nil {
			return err
		}
		for _, p := range c.Protocols {
			if p != GRPC {
				return optionf("Call.Method", "a gRPC method, called over grpc only; protocol %s loads the HTTP path instead", p)
			}
		}
		if known(c.Scenarios, Stream) {
			return optionf("Scenarios", "stream is coldstart's EchoStream ping-pong; a method of your own, server-streaming too, runs under sequential, throughput, open and ramp")
		}
	}
	if c.Soak != 0 {
		iv := c.SoakInterval
		if iv == 0 {
			iv = Defaults().SoakInterval
		}
		if iv < 0 {
			return optionf("SoakInterval", "%v is negative", iv)
		}
		if c.Soak < 2*iv {
			return &OptionError{Option: "Soak", Fix: "SoakInterval",
				Err: fmt.Errorf("%v is shorter than two soak intervals (%v): a trend needs at least two rows, three for its confidence interval; soak longer or shorten the interval", c.Soak, iv)}
		}
		if c.Rate <= 0 {
			return optionf("Rate", "a soak needs an open-loop rate in calls per second")
		}
		if c.SoakAuto && c.Soak < stats.MinAutoRounds*iv {
			return &OptionError{Option: "Soak", Fix: "SoakInterval",
				Err: fmt.Errorf("%v caps a soak that stops on precision, shorter than its fewest windows (%d of %v); raise the cap or shorten the interval", c.Soak, stats.MinAutoRounds, iv)}
		}
		if c.SoakAuto && c.Target != nil && c.Target.PID == 0 {
			return &OptionError{Option: "SoakAuto", Fix: "Target.PID",
				Err: errors.New("a soak that stops on the precision of the RSS slope needs the server's RSS: give the target's PID, or a soak of fixed length")}
		}
	} else if c.SoakAuto {
		return optionf("SoakAuto", "needs Soak, the longest the soak may run")
	}
	for _, a := range c.Arms {
		if a.Path == "" {
			return fmt.Errorf("arm %q: no binary", a.Name)
		}
		if err := checkPlaceholders(a.Args); err != nil {
			return fmt.Errorf("arm %q: %w", a.Name, err)
		}
	}
	for _, n := range c.Concurrency {
		if n < 1 {
			return optionf("Concurrency", "%d is not a positive number of calls in flight", n)
		}
	}
	for _, n := range c.Conns {
		if n < 1 {
			return optionf("Conns", "%d is not a positive number of connections", n)
		}
	}
	for _, n := range c.Pipeline {
		if n < 1 {
			return optionf("Pipeline", "%d is not a positive depth", n)
		}
	}
	for _, n := range c.StreamsPerConn {
		if n < 1 {
			return optionf("StreamsPerConn", "%d is not a positive number of requests in flight per connection", n)
		}
	}
	if len(c.StreamsPerConn) > 0 && len(c.Protocols) > 0 && !known(c.Protocols, GRPC) && !known(c.Protocols, H2C) && !known(c.Protocols, H2) && !known(c.Protocols, H3) {
		return optionf("StreamsPerConn", "streams per connection shape the multiplexing protocols (grpc, h2c, h2, h3); HTTP/1.1 answers one request at a time per connection: deepen it with the pipeline instead")
	}
	for _, n := range c.Payloads {
		if n < 0 {
			return optionf("Payloads", "%d bytes is negative", n)
		}
	}
	for _, p := range c.Protocols {
		if !known(Protocols, p) {
			return optionf("Protocols", "unknown protocol %q (known: grpc, http1, h2c, h2, h3)", p)
		}
		if p == H2 && c.TLS == nil {
			return &OptionError{Option: "Protocols", Fix: "TLS",
				Err: errors.New("h2 is HTTP/2 over TLS, negotiated by ALPN; in clear text load h2c, or turn TLS on")}
		}
		if p == H3 && c.TLS == nil {
			return &OptionError{Option: "Protocols", Fix: "TLS",
				Err: errors.New("h3 is HTTP/3 over QUIC, which is always TLS: turn TLS on, with the CA that signed the server's certificate")}
		}
		if p == H2C && c.TLS != nil {
			return optionf("Protocols", "h2c is HTTP/2 in clear text (prior knowledge); over TLS load h2 (HTTP/2 negotiated by ALPN)")
		}
	}
	if c.Rounds < 0 {
		return optionf("Rounds", "%d is negative", c.Rounds)
	}
	if c.Precision != 0 {
		if err := stats.CheckPrecision(c.Precision); err != nil {
			return &OptionError{Option: "Precision", Err: err}
		}
		if err := stats.CheckMaxRounds(c.MaxRounds); err != nil {
			return &OptionError{Option: "MaxRounds", Err: err}
		}
		if c.Rounds != 0 {
			return &OptionError{Option: "Rounds", Fix: "Precision",
				Err: fmt.Errorf("%d rounds with a precision to run until: give one or the other", c.Rounds)}
		}
		if c.Soak != 0 {
			return &OptionError{Option: "Precision", Fix: "Soak",
				Err: errors.New("a soak loads one open loop in intervals, not rounds: nothing to stop on precision")}
		}
	}
	if c.Confidence != 0 {
		if err := stats.CheckConfidence(c.Confidence); err != nil {
			return &OptionError{Option: "Confidence", Err: err}
		}
	}
	if c.Calls < 0 {
		return optionf("Calls", "%d is negative", c.Calls)
	}
	if c.Duration < 0 {
		return optionf("Duration", "%v is negative", c.Duration)
	}
	if c.Rate < 0 {
		return optionf("Rate", "%g is negative", c.Rate)
	}
	for _, s := range c.Scenarios {
		switch s {
		case Sequential, Throughput, Stream:
		case Open, Ramp:
			if c.Rate == 0 {
				return optionf("Rate", "scenario %s needs a rate in calls per second", s)
			}
			if c.Duration == 0 {
				return optionf("Duration", "scenario %s needs the length of each open-loop window", s)
			}
		default:
			return optionf("Scenarios", "unknown scenario %q (known: sequential, throughput, stream, open, ramp)", s)
		}
	}
	return nil
}

func known[T comparable](list []T, v T) bool {
	for _, k := range list {
		if k == v {
			return true
		}
	}
	return false
}

// Run measures every arm under every budget in interleaved rounds (see
// runBudgetRounds), calling record with each row as soon as it is measured
// (so an interrupted run keeps the rounds it finished). It stops at the
// first arm that fails, returning an error that names it.
func Run(ctx context.Context, cfg Config, record func(Row) error) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	cfg = cfg.withDefaults()
	p, err := newPin(cfg.GeneratorCPUs)
	if err != nil {
		return err
	}
	if p != nil {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(len(cfg.GeneratorCPUs)))
		defer p.release()
	}
	cfg.progress = progress.For(cfg.Log)
	cfg.progress.Start(roundLines(cfg), "steady rounds")
	defer cfg.progress.Done() // before the caller prints results or the error
	if cfg.Target != nil {
		s, err := attachTarget(ctx, cfg, *cfg.Target)
		if err != nil {
			return err
		}
		defer s.stop()
		if err := p.apply(); err != nil {
			return err
		}
		return runServers(ctx, cfg, []*server{s}, record)
	}
	for _, b := range cfg.Budgets {
		if err := runBudgetRounds(ctx, cfg, p, b, record); err != nil {
			return err
		}
	}
	return nil
}

// checkPlaceholders refuses a placeholder steady does not fill, naming it
// and the known ones (prober.Placeholders), and {socket} beside
// {addr}/{host}/{port}.
func checkPlaceholders(args []string) error {
	_, err := prober.ParseTemplate(args)
	return err
}

// usesSocket reports whether the server listens on the Unix socket {socket}.
func usesSocket(args []string) bool {
	t, err := prober.ParseTemplate(args)
	return err == nil && t.UsesSocket()
}

// addrs are the addresses one server instance was given.
type addrs struct {
	grpc, http, debug prober.Target
}

// expandArgs fills the server's arguments with prober's one expander;
// httpNamed says the server was given {http_addr}.
func expandArgs(args []string, ad addrs) (out []string, httpNamed bool, err error) {
	t, err := prober.ParseTemplate(args)
	if err != nil {
		return nil, false, err
	}
	v := prober.VarsFor(ad.grpc)
	v.HTTPAddr, v.DebugAddr = ad.http.Address, ad.debug.Address
	out, err = t.Expand(v)
	return out, t.Uses("http_addr"), err
}

// startArm starts one arm's server under b and waits until it is ready.
func startArm(ctx context.Context, cfg Config, p *pin, a Arm, b budget.Budget) (_ *server, err error) {
	var cleanup []func()
	defer func() {
		if err != nil {
			for _, c := range cleanup {
				c()
			}
		}
	}()
	var ad addrs
	for _, t := range []*prober.Target{&ad.grpc, &ad.http, &ad.debug} {
		if *t, err = prober.FreeTCP(); err != nil {
			return nil, fmt.Errorf("arm %s: %w", a.Name, err)
		}
	}
	if usesSocket(a.Args) {
		sock, remove, err := launch.SocketTarget("st-")
		if err != nil {
			return nil, fmt.Errorf("arm %s: %w", a.Name, err)
		}
		cleanup = append(cleanup, remove)
		ad.grpc = sock
	}
	args, httpNamed, err := expandArgs(a.Args, ad)
	if err != nil {
		return nil, fmt.Errorf("arm %s: %w", a.Name, err)
	}
	if !httpNamed {
		ad.http = ad.grpc
	}
	spec := launch.Spec{
		Arm:    a.Name,
		Path:   a.Path,
		Args:   args,
		Env:    append(append([]string(nil), a.Env...), "COLDSTART_DEBUG_ADDR="+ad.debug.Address),
		Target: ad.grpc,
		Budget: b,
		ID:     budget.NewID(),
	}
	if cfg.Verbose {
		spec.Log = cfg.Log
	}
	if err := prober.EnsureFree(ctx, ad.grpc); err != nil {
		return nil, fmt.Errorf("arm %s: %w", a.Name, err)
	}
	if a.Prepare != nil {
		if err := a.Prepare(ctx, ad.grpc); err != nil {
			return nil, fmt.Errorf("arm %s: %w", a.Name, err)
		}
	}
	if err := p.release(); err != nil {
		return nil, err
	}
	launcher := cfg.Launcher
	if a.Launcher != nil {
		launcher = a.Launcher
	}
	grpcReady := known(cfg.Protocols, GRPC)
	readyAt := ad.grpc
	if !grpcReady {
		readyAt = ad.http
	}
	checker := readyChecker(cfg, grpcReady)
	if !grpcReady && !usesHTTP(cfg.Protocols) && cfg.TLS != nil {
		// HTTP/3 alone: ready when it answers over QUIC, so a server
		// that serves HTTP only over UDP can be loaded.
		checker = &prober.HTTP{H3: true, Path: cfg.HTTPPath, Body: jsonBody(nil), ContentType: "application/json", TLS: cfg.TLS}
	}
	// The server starts unpinned (p released above); steady's own threads
	// are pinned again before the wait.
	inst, _, err := launch.StartReady(ctx, launcher, spec, launch.ReadyOptions{
		At: readyAt, Checker: checker, Name: "wait for ready at " + readyAt.String(),
		Launched: func(launch.Instance) error { return p.apply() },
	})
	if err != nil {
		return nil, fmt.Errorf("arm %s: %w", a.Name, err)
	}
	cleanup = append([]func(){func() { inst.Stop(context.Background()) }}, cleanup...)
	fmt.Fprintf(cfg.Log, "steady: %s ready at %s (pid %d)\n", a.Name, readyAt, inst.PID())
	if grpcReady && ad.http != ad.grpc && usesHTTP(cfg.Protocols) {
		// The HTTP listener is loaded too: a TLS mismatch there is said
		// now rather than counted as every call's error.
		if err := checkOnce(ctx, readyChecker(cfg, false), ad.http); err != nil {
			return nil, fmt.Errorf("arm %s: HTTP at %s: %w", a.Name, ad.http, err)
		}
	}
	if known(cfg.Protocols, H3) {
		if err := checkH3(ctx, cfg, ad.http); err != nil {
			return nil, fmt.Errorf("arm %s: HTTP/3 at udp://%s: %w", a.Name, ad.http.Address, err)
		}
	}
	s := &server{arm: a.Name, inst: inst, addrs: ad, budget: b.String(), cpuLimit: b.CPULimit(), cleanup: cleanup, metered: true}
	if cfg.Call != nil {
		if s.call, err = resolveCall(ctx, cfg.Call, ad.grpc, "", cfg.TLS); err != nil {
			return nil, fmt.Errorf("arm %s: %w", a.Name, err)
		}
	}
	return s, nil
}

// stop stops the server and removes what was made for it.
func (s *server) stop() {
	for _, c := range s.cleanup {
		c()
	}
}

// server is one running arm and where it listens.
type server struct {
	arm    string
	budget string
	inst   launch.Instance
	addrs  addrs
	// cleanup stops the server, then removes its socket dir.
	cleanup []func()
	// metered: inst.PID() is the server's process, read from /proc.
	metered bool
	// cpuLimit is the CPUs' worth of time its budget lets it use (0 =
	// unknown): Row.ServerCPUShare is its CPU use against it.
	cpuLimit float64
	// authority is the gRPC :authority ("" = the address).
	authority string
	// pods counts the server's instances (nil = one process, not counted).
	pods func(context.Context) (int, error)
	// health: the server (a target) has no coldstart Echo service; gRPC
	// load calls its health check.
	health bool
	// call is the user's method gRPC load calls (Config.Call), resolved
	// against this server; nil = Echo or the health check.
	call *resolvedCall
	// handshakes counts the TLS handshakes its load's connections
	// completed (Config.TLS), read at each window's edges.
	handshakes atomic.Int64
}

// step is one measured window's load shape.
type step struct {
	proto       Protocol
	scenario    Scenario
	payload     int
	concurrency int
	conns       int
	depth       int
	rate        float64
}

// steps expands the scenarios into the steps of one protocol, payload
// size aside.
func steps(cfg Config, proto Protocol) []step {
	var out []step
	seen := map[step]bool{}
	add := func(s step) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	// shape spreads n workers over connections.
	shapes := func(n int) []step {
		var sh []step
		if proto == HTTP1 {
			for _, d := range cfg.Pipeline {
				d = min(d, n)
				sh = append(sh, step{concurrency: n, conns: (n + d - 1) / d, depth: d})
			}
			return sh
		}
		for _, c := range cfg.Conns {
			c = min(c, n)
			sh = append(sh, step{concurrency: n, conns: c, depth: (n + c - 1) / c})
		}
		return sh
	}
	for _, sc := range cfg.Scenarios {
		switch sc {
		case Sequential:
			add(step{proto: proto, scenario: sc, concurrency: 1, conns: 1, depth: 1})
		case Throughput:
			if len(cfg.StreamsPerConn) > 0 && proto != HTTP1 {
				// The fan-out: C connections × S streams each.
				for _, c := range cfg.Conns {
					for _, s := range cfg.StreamsPerConn {
						if c*s == 1 && known(cfg.Scenarios, Sequential) {
							continue // one call in flight is the sequential step
						}
						add(step{proto: proto, scenario: sc, concurrency: c * s, conns: c, depth: s})
					}
				}
				continue
			}
			for _, n := range cfg.Concurrency {
				if n == 1 && known(cfg.Scenarios, Sequential) {
					continue // one call in flight is the sequential step
				}
				for _, sh := range shapes(n) {
					sh.proto, sh.scenario = proto, sc
					add(sh)
				}
			}
		case Stream:
			if proto != GRPC {
				continue // streaming is gRPC's EchoStream
			}
			for _, n := range cfg.Concurrency {
				for _, sh := range shapes(n) {
					sh.proto, sh.scenario = proto, sc
					add(sh)
				}
			}
		case Open, Ramp:
			for _, sh := range shapes(cfg.MaxInFlight) {
				sh.proto, sh.scenario, sh.rate = proto, sc, cfg.Rate
				add(sh)
			}
		}
	}
	return out
}

func (st step) String() string {
	s := fmt.Sprintf("%s %s %dB c=%d conns=%d depth=%d", st.proto, st.scenario, st.payload, st.concurrency, st.conns, st.depth)
	if st.rate > 0 {
		s += fmt.Sprintf(" rate=%.0f/s", st.rate)
	}
	return s
}
