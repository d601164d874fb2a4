package steady

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/coldstart-go/coldstart/internal/testservers"
	"github.com/coldstart-go/coldstart/launch"
	"github.com/coldstart-go/coldstart/prober"
)

func TestMain(m *testing.M) { os.Exit(testservers.Run(m)) }

func sampleArm(t *testing.T) Arm {
	t.Helper()
	return Arm{Name: "default", Path: testservers.BuildPackage(t, testservers.Echo), Args: SampleArgs}
}

// collect keeps the rows of medians in rows and the measured windows
// (rounds) in windows.
type collect struct {
	mu      sync.Mutex
	rows    []Row
	windows []Row
}

func (c *collect) record(r Row) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.Round > 0 {
		c.windows = append(c.windows, r)
	} else {
		c.rows = append(c.rows, r)
	}
	return nil
}

// spy is a Launcher that remembers the instances it started.
type spy struct {
	launch.Launcher
	mu    sync.Mutex
	insts []launch.Instance
}

func (s *spy) Launch(ctx context.Context, sp launch.Spec) (launch.Instance, error) {
	inst, err := s.Launcher.Launch(ctx, sp)
	if err == nil {
		s.mu.Lock()
		s.insts = append(s.insts, inst)
		s.mu.Unlock()
	}
	return inst, err
}

func (s *spy) last() launch.Instance {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.insts[len(s.insts)-1]
}

// onMeasure is a progress writer that calls f(n) when the n-th measured
// window (counting from 1) begins.
func onMeasure(f func(n int)) io.Writer {
	pr, pw := io.Pipe()
	go func() {
		sc := bufio.NewScanner(pr)
		n := 0
		for sc.Scan() {
			if strings.HasSuffix(sc.Text(), ": measure") {
				n++
				f(n)
			}
		}
	}()
	return pw
}

type shape struct {
	Protocol    Protocol
	Scenario    Scenario
	Payload     int
	Concurrency int
	Conns       int
	Depth       int
}

func shapes(rows []Row) []shape {
	var out []shape
	for _, r := range rows {
		out = append(out, shape{r.Protocol, r.Scenario, r.PayloadBytes, r.Concurrency, r.Conns, r.Depth})
	}
	return out
}

func TestRunClosedLoop(t *testing.T) {
	var c collect
	cfg := Config{
		Rounds:      1,
		Arms:        []Arm{sampleArm(t)},
		Protocols:   []Protocol{GRPC, HTTP1},
		Scenarios:   []Scenario{Sequential, Throughput, Stream},
		Payloads:    []int{8, 1024},
		Concurrency: []int{4},
		Conns:       []int{1, 2},
		Pipeline:    []int{1, 4},
		Warmup:      100,
		Calls:       1000,
	}
	if err := Run(context.Background(), cfg, c.record); err != nil {
		t.Fatal(err)
	}
	// Per payload and step, the protocols share their rounds: each
	// group's rows of medians come together.
	var want []shape
	for _, size := range []int{8, 1024} {
		want = append(want,
			shape{GRPC, Sequential, size, 1, 1, 1},
			shape{HTTP1, Sequential, size, 1, 1, 1},
			shape{GRPC, Throughput, size, 4, 1, 4},
			shape{GRPC, Throughput, size, 4, 2, 2},
			shape{HTTP1, Throughput, size, 4, 4, 1},
			shape{HTTP1, Throughput, size, 4, 1, 4},
			shape{GRPC, Stream, size, 4, 1, 4},
			shape{GRPC, Stream, size, 4, 2, 2},
		)
	}
	if diff := cmp.Diff(want, shapes(c.rows)); diff != "" {
		t.Fatalf("steps (-want +got):\n%s", diff)
	}
	for _, r := range c.rows {
		if r.Calls != 1000 || r.Errors != 0 || r.FirstError != "" {
			t.Errorf("%s %s %dB: calls %d errors %d (%s), want 1000 and none", r.Protocol, r.Scenario, r.PayloadBytes, r.Calls, r.Errors, r.FirstError)
		}
		if !(r.P50Us > 0 && r.P50Us <= r.P90Us && r.P90Us <= r.P99Us && r.P99Us <= r.P999Us && r.P999Us <= r.MaxUs) {
			t.Errorf("%s %s: percentiles not ordered: %+v", r.Protocol, r.Scenario, r)
		}
		if r.ServerCPUUsPerCall == nil || *r.ServerCPUUsPerCall <= 0 || r.ClientCPUUsPerCall <= 0 || r.CallsPerS <= 0 {
			t.Errorf("%s %s: server CPU %v, client CPU %g µs/call, %g calls/s, want all > 0", r.Protocol, r.Scenario, r.ServerCPUUsPerCall, r.ClientCPUUsPerCall, r.CallsPerS)
		}
		if r.AllocBytesPerCall == nil || *r.AllocBytesPerCall <= 0 || r.GCCycles == nil || r.GoMaxProcs < 1 {
			t.Errorf("%s %s: runtime metrics missing: alloc %v gc %v gomaxprocs %d", r.Protocol, r.Scenario, r.AllocBytesPerCall, r.GCCycles, r.GoMaxProcs)
		}
		// GC CPU per call, the runtime's estimate, is there when a GC ran.
		if r.GCCycles != nil && *r.GCCycles > 0 && (r.GCCPUUsPerCall == nil || *r.GCCPUUsPerCall < 0) {
			t.Errorf("%s %s: %d GC cycles, GC CPU per call %v", r.Protocol, r.Scenario, *r.GCCycles, r.GCCPUUsPerCall)
		}
		if r.PeakRSSBytes == nil || r.RSSBytes == nil || r.PSSBytes == nil || *r.PeakRSSBytes < *r.RSSBytes || *r.RSSBytes <= 0 || *r.PSSBytes <= 0 {
			t.Errorf("%s %s: memory peak %v rss %v pss %v", r.Protocol, r.Scenario, r.PeakRSSBytes, r.RSSBytes, r.PSSBytes)
			continue
		}
		t.Logf("%s %s %dB c=%d conns=%d depth=%d: %.0f calls/s p50 %.0f p99 %.0f µs server %.1f client %.1f µs/call alloc %.0f B/call",
			r.Protocol, r.Scenario, r.PayloadBytes, r.Concurrency, r.Conns, r.Depth, r.CallsPerS, r.P50Us, r.P99Us, *r.ServerCPUUsPerCall, r.ClientCPUUsPerCall, *r.AllocBytesPerCall)
	}
	// A 1 KiB payload allocates more per call on the server than 8 B.
	if a, b := c.rows[0], c.rows[8]; *b.AllocBytesPerCall <= *a.AllocBytesPerCall {
		t.Errorf("alloc per call: %dB %.0f, %dB %.0f: want the larger payload to allocate more", a.PayloadBytes, *a.AllocBytesPerCall, b.PayloadBytes, *b.AllocBytesPerCall)
	}
}

// TestOpenLoopStall stops the server for 300 ms in the middle of a
// sequential (closed-loop) window and again in an open-loop window. The
// open loop's latency, counted from each call's intended send time, must
// show the stall in its p99 (every call due during the stall waits for it);
// the closed loop, which stops sending while it waits, shows it in its
// maximum only: one slow call.
func TestOpenLoopStall(t *testing.T) {
	const stall = 300 * time.Millisecond
	sp := &spy{Launcher: launch.Process{}}
	stalled := make(chan int, 2)
	log := onMeasure(func(n int) {
		go func() {
			time.Sleep(400 * time.Millisecond)
			pid := sp.last().PID()
			syscall.Kill(pid, syscall.SIGSTOP)
			time.Sleep(stall)
			syscall.Kill(pid, syscall.SIGCONT)
			stalled <- n
		}()
	})
	var c collect
	cfg := Config{
		Rounds:    1,
		Arms:      []Arm{sampleArm(t)},
		Scenarios: []Scenario{Sequential, Open},
		Warmup:    200,
		Duration:  1500 * time.Millisecond,
		Rate:      400,
		Launcher:  sp,
		Log:       log,
	}
	if err := Run(context.Background(), cfg, c.record); err != nil {
		t.Fatal(err)
	}
	if len(stalled) != 2 {
		t.Fatalf("stalled %d windows, want 2", len(stalled))
	}
	if len(c.rows) != 2 {
		t.Fatalf("got %d rows, want 2", len(c.rows))
	}
	closed, open := c.rows[0], c.rows[1]
	t.Logf("closed: p99 %.0f max %.0f µs over %d calls; open: p50 %.0f p99 %.0f max %.0f µs (service p99 %.0f) over %d calls, %.0f/s of %.0f/s",
		closed.P99Us, closed.MaxUs, closed.Calls, open.P50Us, open.P99Us, open.MaxUs, open.ServiceP99Us, open.Calls, open.CallsPerS, open.RateReq)
	lower := float64(stall-50*time.Millisecond) / 1e3
	if closed.MaxUs < lower {
		t.Errorf("closed loop max %.0f µs, want the stall (≥ %.0f µs) in it", closed.MaxUs, lower)
	}
	if open.P99Us < lower {
		t.Errorf("open loop p99 %.0f µs, want the stall (≥ %.0f µs): coordinated omission", open.P99Us, lower)
	}
	if closed.P99Us*2 > open.P99Us {
		t.Errorf("closed-loop p99 %.0f µs is not well below open-loop p99 %.0f µs: the closed loop should hide the stall", closed.P99Us, open.P99Us)
	}
	if open.Calls != 600 || open.Errors != 0 {
		t.Errorf("open loop: %d calls, %d errors, want 600 and none", open.Calls, open.Errors)
	}
}

// TestServerDies kills the server as the second window starts: Run must
// fail naming the arm and the exit status, with the first window's row
// kept (and the cut window's row, if it got that far, with its errors).
func TestServerDies(t *testing.T) {
	sp := &spy{Launcher: launch.Process{}}
	log := onMeasure(func(n int) {
		if n == 2 {
			syscall.Kill(sp.last().PID(), syscall.SIGKILL)
		}
	})
	var c collect
	cfg := Config{
		Rounds:      1,
		Arms:        []Arm{sampleArm(t)},
		Scenarios:   []Scenario{Throughput, Stream},
		Concurrency: []int{8},
		Warmup:      100,
		Calls:       20000,
		Launcher:    sp,
		Log:         log,
	}
	err := Run(context.Background(), cfg, c.record)
	if err == nil {
		t.Fatal("Run = nil, want the server's death")
	}
	if !errors.Is(err, launch.ErrExited) || !strings.Contains(err.Error(), "arm default") || !strings.Contains(err.Error(), "signal: killed") {
		t.Errorf("Run = %v, want launch.ErrExited naming arm default and the signal", err)
	}
	if len(c.rows) < 1 || c.rows[0].Scenario != Throughput || c.rows[0].Errors != 0 || c.rows[0].Calls != 20000 {
		t.Fatalf("rows %+v, want the throughput row kept whole", shapes(c.rows))
	}
	if len(c.rows) == 2 && c.rows[1].Calls == 20000 && c.rows[1].Errors == 0 {
		t.Errorf("cut row %+v claims a whole window without errors", c.rows[1])
	}
}

// TestCancel interrupts a run: Run returns the context's error, the server
// is stopped and reaped, and the rows measured before are kept.
func TestCancel(t *testing.T) {
	sp := &spy{Launcher: launch.Process{}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := onMeasure(func(n int) {
		if n == 2 {
			cancel()
		}
	})
	var c collect
	cfg := Config{
		Rounds:      1,
		Arms:        []Arm{sampleArm(t)},
		Scenarios:   []Scenario{Throughput, Stream},
		Concurrency: []int{8},
		Warmup:      100,
		Calls:       20000,
		Launcher:    sp,
		Log:         log,
	}
	err := Run(ctx, cfg, c.record)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	inst := sp.last()
	select {
	case <-inst.Done():
	default:
		t.Fatal("server still running after Run returned")
	}
	if err := syscall.Kill(inst.PID(), 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("kill -0 %d = %v, want ESRCH (reaped)", inst.PID(), err)
	}
	if len(c.rows) != 1 || c.rows[0].Scenario != Throughput {
		t.Errorf("rows %+v, want the throughput row only", shapes(c.rows))
	}
}

// TestHTTPOnly loads a plain HTTP server that reads only $PORT (no gRPC,
// no runtime metrics) over HTTP/1.1, pipelined HTTP/1.1 and h2c.
func TestHTTPOnly(t *testing.T) {
	var c collect
	cfg := Config{
		Rounds:      1,
		Arms:        []Arm{{Name: "http", Path: testservers.Build(t), Args: []string{"-mode=http", "-h2c"}}},
		Protocols:   []Protocol{HTTP1, H2C},
		Scenarios:   []Scenario{Sequential, Throughput},
		Concurrency: []int{8},
		Conns:       []int{2},
		Pipeline:    []int{1, 8},
		Warmup:      100,
		Calls:       2000,
	}
	if err := Run(context.Background(), cfg, c.record); err != nil {
		t.Fatal(err)
	}
	want := []shape{
		{HTTP1, Sequential, 8, 1, 1, 1},
		{H2C, Sequential, 8, 1, 1, 1},
		{HTTP1, Throughput, 8, 8, 8, 1},
		{HTTP1, Throughput, 8, 8, 1, 8},
		{H2C, Throughput, 8, 8, 2, 4},
	}
	if diff := cmp.Diff(want, shapes(c.rows)); diff != "" {
		t.Fatalf("steps (-want +got):\n%s", diff)
	}
	for _, r := range c.rows {
		t.Logf("%s %s c=%d conns=%d depth=%d: %.0f calls/s p50 %.0f µs server %v client %.1f µs/call", r.Protocol, r.Scenario, r.Concurrency, r.Conns, r.Depth, r.CallsPerS, r.P50Us, r.ServerCPUUsPerCall, r.ClientCPUUsPerCall)
		if r.Calls != 2000 || r.Errors != 0 {
			t.Errorf("%s %s: calls %d errors %d (%s), want 2000 and none", r.Protocol, r.Scenario, r.Calls, r.Errors, r.FirstError)
		}
		if r.ServerCPUUsPerCall == nil || *r.ServerCPUUsPerCall <= 0 || r.P50Us <= 0 {
			t.Errorf("%s %s: server CPU %v µs/call, p50 %g µs, want > 0", r.Protocol, r.Scenario, r.ServerCPUUsPerCall, r.P50Us)
		}
		if r.AllocBytesPerCall != nil || r.GoMaxProcs != 0 {
			t.Errorf("%s %s: runtime metrics from a server that serves none: %v %d", r.Protocol, r.Scenario, r.AllocBytesPerCall, r.GoMaxProcs)
		}
	}
}

// TestHTTPConnectionClose: a server that closes each HTTP/1.1 connection
// after its response (the sample with --http-no-keepalives) answers every
// call: each is counted once, none an error, and the next call dials a
// new connection, as any HTTP/1.1 client does.
func TestHTTPConnectionClose(t *testing.T) {
	var c collect
	arm := sampleArm(t)
	arm.Args = append(slices.Clone(arm.Args), "--http-no-keepalives")
	cfg := Config{
		Rounds:      1,
		Arms:        []Arm{arm},
		Protocols:   []Protocol{HTTP1},
		Scenarios:   []Scenario{Sequential, Throughput},
		Concurrency: []int{4},
		Warmup:      50,
		Calls:       500,
	}
	if err := Run(context.Background(), cfg, c.record); err != nil {
		t.Fatal(err)
	}
	if len(c.rows) != 2 {
		t.Fatalf("%d rows, want 2", len(c.rows))
	}
	for _, r := range c.rows {
		if r.Calls != 500 || r.Errors != 0 {
			t.Errorf("%s: calls %d errors %d (%s), want 500 and none", r.Scenario, r.Calls, r.Errors, r.FirstError)
		}
	}
}

// TestHTTPErrors counts non-2xx answers as errors with the first one's
// status line, never dropping them.
func TestHTTPErrors(t *testing.T) {
	var c collect
	cfg := Config{
		Rounds: 1,
		Arms:   []Arm{sampleArm(t)},
		// With gRPC in the list, readiness is gRPC health, so the wrong
		// HTTP path does not hold up readiness.
		Protocols: []Protocol{GRPC, HTTP1},
		Scenarios: []Scenario{Sequential},
		HTTPPath:  "/nothing-here",
		Warmup:    -1,
		Calls:     50,
	}
	if err := Run(context.Background(), cfg, c.record); err != nil {
		t.Fatal(err)
	}
	r := c.rows[1]
	if r.Protocol != HTTP1 || r.Errors != 50 || r.ErrorRate != 1 || !strings.Contains(r.FirstError, "404") {
		t.Errorf("http1 row: protocol %s, %d errors, rate %g, first %q; want 50 errors, rate 1, a 404", r.Protocol, r.Errors, r.ErrorRate, r.FirstError)
	}
}

// TestRamp raises the rate in steps. With a generous p99 limit it climbs to
// the last rate and reports it as the knee; with an impossible one (1 ns)
// it stops after the first step with no knee.
func TestRamp(t *testing.T) {
	arm := sampleArm(t)
	for _, tt := range []struct {
		name  string
		p99   time.Duration
		steps int
		knee  float64
	}{
		// Generous: no p99 or error rate a loaded machine reaches stops it
		// (1 s stopped it twice at load average 12-17).
		{"generous", time.Minute, 3, 300},
		{"impossible", time.Nanosecond, 1, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var c collect
			cfg := Config{
				Rounds: 1,
				Arms:   []Arm{arm}, Scenarios: []Scenario{Ramp}, Warmup: 100,
				Rate: 100, RampStep: 100, RampMax: 300, RampP99: tt.p99, RampErrors: rampErrors(tt.p99),
				Duration: 300 * time.Millisecond,
			}
			if err := Run(context.Background(), cfg, c.record); err != nil {
				t.Fatal(err)
			}
			var rates []float64
			knee := 0.0
			for _, r := range c.rows {
				switch r.Scenario {
				case Ramp:
					rates = append(rates, r.RateReq)
				case Knee:
					knee = r.RateReq
				}
			}
			if len(rates) != tt.steps || knee != tt.knee {
				t.Errorf("ramp rates %v, knee %g; want %d steps and knee %g", rates, knee, tt.steps, tt.knee)
			}
		})
	}
}

// rampErrors is the error-rate limit of TestRamp's cases: none for the
// generous one (every error counts against the impossible one anyway).
func rampErrors(p99 time.Duration) float64 {
	if p99 >= time.Minute {
		return 1
	}
	return 0
}

// TestDefaults: a zero Config runs with what Defaults says, and the
// defaults pass Validate.
func TestDefaults(t *testing.T) {
	got := Config{}.withDefaults()
	got.Launcher, got.Log = nil, nil
	if diff := cmp.Diff(Defaults(), got, cmpopts.IgnoreUnexported(Config{})); diff != "" {
		t.Errorf("Config{}.withDefaults() (-Defaults +got):\n%s", diff)
	}
	d := Defaults()
	d.Arms = []Arm{{Name: "a", Path: "/bin/true"}}
	if err := d.Validate(); err != nil {
		t.Errorf("Defaults().Validate() = %v", err)
	}
}

// TestValidate: a setting that cannot run is an OptionError naming it by
// its field path, never by a front end's flag.
func TestValidate(t *testing.T) {
	arm := []Arm{{Name: "a", Path: "/bin/true"}}
	remote := &Target{Addr: prober.Target{Network: "tcp", Address: "192.0.2.1:80"}}
	for _, tt := range []struct {
		name   string
		cfg    Config
		option string // "" = a plain error, or none
		want   string // "" = valid
	}{
		{"defaults", Config{Arms: arm}, "", ""},
		{"no arms", Config{}, "", "no server to measure"},
		{"target and arms", Config{Arms: arm, Target: &Target{Addr: prober.Target{Network: "unix", Address: "/s"}}}, "Target",
			"Target: a running server replaces the servers steady would start: give one or the other (Arms)"},
		{"remote target", Config{Target: remote}, "Target.Addr",
			"Target.Addr: 192.0.2.1:80 is not a loopback address; steady loads only this machine's servers unless allowed (Target.AllowRemote)"},
		{"remote target allowed", Config{Target: &Target{Addr: remote.Addr, AllowRemote: true}}, "", ""},
		{"concurrency 0", Config{Arms: arm, Concurrency: []int{1, 0}}, "Concurrency", "Concurrency: 0 is not a positive number of calls in flight"},
		{"conns 0", Config{Arms: arm, Conns: []int{0}}, "Conns", "Conns: 0 is not a positive number of connections"},
		{"open without rate", Config{Arms: arm, Scenarios: []Scenario{Open}, Duration: time.Second}, "Rate", "Rate: scenario open needs a rate in calls per second"},
		{"rate without duration", Config{Arms: arm, Scenarios: []Scenario{Open}, Rate: 10}, "Duration", "Duration: scenario open needs the length of each open-loop window"},
		{"soak without rate", Config{Arms: arm, Soak: time.Hour}, "Rate", "Rate: a soak needs an open-loop rate in calls per second"},
		{"soak of one interval", Config{Arms: arm, Soak: time.Minute, Rate: 10}, "Soak",
			"Soak: 1m0s is shorter than two soak intervals (1m0s): a trend needs at least two rows, three for its confidence interval; soak longer or shorten the interval (SoakInterval)"},
		{"unknown protocol", Config{Arms: arm, Protocols: []Protocol{"quic"}}, "Protocols", `Protocols: unknown protocol "quic" (known: grpc, http1, h2c, h2, h3)`},
		{"h3 without TLS", Config{Arms: arm, Protocols: []Protocol{H3}}, "Protocols",
			"Protocols: h3 is HTTP/3 over QUIC, which is always TLS: turn TLS on, with the CA that signed the server's certificate (TLS)"},
		{"h3 over TLS", Config{Arms: arm, Protocols: []Protocol{H3}, TLS: &prober.TLS{}, StreamsPerConn: []int{8}}, "", ""},
		{"streams per conn 0", Config{Arms: arm, StreamsPerConn: []int{0}}, "StreamsPerConn", "StreamsPerConn: 0 is not a positive number of requests in flight per connection"},
		{"streams per conn over HTTP/1.1", Config{Arms: arm, Protocols: []Protocol{HTTP1}, StreamsPerConn: []int{4}}, "StreamsPerConn",
			"StreamsPerConn: streams per connection shape the multiplexing protocols (grpc, h2c, h2, h3); HTTP/1.1 answers one request at a time per connection: deepen it with the pipeline instead"},
		{"h2 without TLS", Config{Arms: arm, Protocols: []Protocol{H2}}, "Protocols",
			"Protocols: h2 is HTTP/2 over TLS, negotiated by ALPN; in clear text load h2c, or turn TLS on (TLS)"},
		{"h2c over TLS", Config{Arms: arm, Protocols: []Protocol{H2C}, TLS: &prober.TLS{}}, "Protocols",
			"Protocols: h2c is HTTP/2 in clear text (prior knowledge); over TLS load h2 (HTTP/2 negotiated by ALPN)"},
		{"h2 over TLS", Config{Arms: arm, Protocols: []Protocol{H2}, TLS: &prober.TLS{}}, "", ""},
		{"reconnect negative", Config{Arms: arm, ReconnectEvery: -1}, "ReconnectEvery", "ReconnectEvery: -1 is negative (0 = never reconnect)"},
		{"unknown scenario", Config{Arms: arm, Scenarios: []Scenario{"soak"}}, "Scenarios", `Scenarios: unknown scenario "soak" (known: sequential, throughput, stream, open, ramp)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || err.Error() != tt.want {
				t.Fatalf("Validate() = %v, want %q", err, tt.want)
			}
			var oe *OptionError
			if got := errors.As(err, &oe); got != (tt.option != "") || (got && oe.Option != tt.option) {
				t.Errorf("Validate() = %#v, want an OptionError about %q", err, tt.option)
			}
		})
	}
}

func TestParseSize(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int
		err  string
	}{
		{"8", 8, ""},
		{"8B", 8, ""},
		{"1KiB", 1024, ""},
		{"64KiB", 65536, ""},
		{"1MiB", 1 << 20, ""},
		{"2kB", 2000, ""},
		{" 16 B ", 16, ""},
		{"1kb", 0, `unknown unit "kb"`},
		{"1GiB", 1 << 30, ""},
		{"4GiB", 0, "too large"},
		{"KiB", 0, "malformed size"},
		{"-1", 0, "malformed size"},
	} {
		got, err := ParseSize(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseSize(%q) = %d, %v, want error containing %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseSize(%q) = %d, %v, want %d", tt.in, got, err, tt.want)
		}
	}
	if got, err := ParseSizes("8B,1KiB,64KiB"); err != nil || !cmp.Equal(got, []int{8, 1024, 65536}) {
		t.Errorf("ParseSizes = %v, %v", got, err)
	}
	if _, err := ParseCounts("1,0"); err == nil {
		t.Error("ParseCounts(\"1,0\") = nil error, want one")
	}
}

// TestLargePayload sends 64 KiB payloads: more than one HTTP/2 flow-control
// window for gRPC, and a chunked JSON answer over HTTP/1.1.
func TestLargePayload(t *testing.T) {
	var c collect
	cfg := Config{
		Rounds:      1,
		Arms:        []Arm{sampleArm(t)},
		Protocols:   []Protocol{GRPC, HTTP1},
		Scenarios:   []Scenario{Sequential, Throughput, Stream},
		Payloads:    []int{64 << 10},
		Concurrency: []int{4},
		Pipeline:    []int{2},
		Warmup:      20,
		Calls:       200,
	}
	if err := Run(context.Background(), cfg, c.record); err != nil {
		t.Fatal(err)
	}
	if len(c.rows) != 5 {
		t.Fatalf("got %d rows %v, want 5", len(c.rows), shapes(c.rows))
	}
	for _, r := range c.rows {
		if r.Calls != 200 || r.Errors != 0 {
			t.Errorf("%s %s: %d calls, %d errors (%s), want 200 and none", r.Protocol, r.Scenario, r.Calls, r.Errors, r.FirstError)
		}
		if *r.AllocBytesPerCall < 64<<10 {
			t.Errorf("%s %s: server allocates %.0f B per 64 KiB call, want at least the payload", r.Protocol, r.Scenario, *r.AllocBytesPerCall)
		}
	}
}
