package steady

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/coldstart-go/coldstart/internal/testservers"
	"github.com/coldstart-go/coldstart/prober"
	"github.com/coldstart-go/coldstart/prober/probertest"
)

// h3Arm is tlsArm serving HTTP/3 too, on the UDP port of its HTTP
// address.
func h3Arm(t *testing.T, dir string, mtls bool) Arm {
	a := tlsArm(t, dir, mtls)
	a.Args = append(a.Args, "--http3-addr={http_addr}")
	return a
}

// TestH3 loads the sample server over HTTP/3, TLS and mTLS, as a fan-out
// of connections × streams: every call succeeds, the rows carry the
// server's CPU and allocation per call as the other protocols' do, and
// connections made before the warmup pay no handshake in the window.
func TestH3(t *testing.T) {
	dir := certDir(t)
	for _, mtls := range []bool{false, true} {
		o := prober.TLSOptions{CAFile: filepath.Join(dir, "ca.crt")}
		if mtls {
			o.CertFile, o.KeyFile = filepath.Join(dir, "client.crt"), filepath.Join(dir, "client.key")
		}
		t.Run(map[bool]string{false: "tls", true: "mtls"}[mtls], func(t *testing.T) {
			var c collect
			cfg := Config{
				Arms: []Arm{h3Arm(t, dir, mtls)}, TLS: probertest.LoadTLS(t, o), Protocols: []Protocol{H3},
				Scenarios: []Scenario{Sequential, Throughput}, Conns: []int{2}, StreamsPerConn: []int{4}, Rounds: 1, Warmup: 20, Calls: 400,
			}
			if err := Run(context.Background(), cfg, c.record); err != nil {
				t.Fatal(err)
			}
			var shapes [][3]int
			for _, r := range c.rows {
				shapes = append(shapes, [3]int{r.Concurrency, r.Conns, r.Depth})
				if r.Protocol != H3 || r.Calls != 400 || r.Errors != 0 || !r.TLS || r.CallsPerS <= 0 {
					t.Errorf("%s %s: calls %d errors %d (%s) tls %v, %.0f calls/s: want h3, 400, none, true, some", r.Protocol, r.Scenario, r.Calls, r.Errors, r.FirstError, r.TLS, r.CallsPerS)
				}
				if r.ServerCPUUsPerCall == nil || *r.ServerCPUUsPerCall <= 0 || r.AllocBytesPerCall == nil || *r.AllocBytesPerCall <= 0 {
					t.Errorf("%s %s: server CPU %v, allocation %v per call: want both read", r.Protocol, r.Scenario, r.ServerCPUUsPerCall, r.AllocBytesPerCall)
				}
				if r.TLSHandshakes == nil || *r.TLSHandshakes != 0 {
					t.Errorf("%s %s: %v handshakes in the window, want 0", r.Protocol, r.Scenario, r.TLSHandshakes)
				}
			}
			if diff := cmp.Diff([][3]int{{1, 1, 1}, {8, 2, 4}}, shapes); diff != "" {
				t.Errorf("steps (concurrency, conns, streams each) (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStreamsPerConn: the fan-out shapes the multiplexing protocols'
// throughput steps, C connections × S streams; HTTP/1.1 keeps its
// concurrency levels and pipeline.
func TestStreamsPerConn(t *testing.T) {
	cfg := Config{Scenarios: []Scenario{Sequential, Throughput}, Concurrency: []int{1, 32}, Conns: []int{1, 4}, StreamsPerConn: []int{1, 16}}.withDefaults()
	shape := func(p Protocol) [][3]int {
		var out [][3]int
		for _, st := range steps(cfg, p) {
			out = append(out, [3]int{st.concurrency, st.conns, st.depth})
		}
		return out
	}
	for _, p := range []Protocol{GRPC, H2C, H2, H3} {
		if diff := cmp.Diff([][3]int{{1, 1, 1}, {16, 1, 16}, {4, 4, 1}, {64, 4, 16}}, shape(p)); diff != "" {
			t.Errorf("%s steps (-want +got):\n%s", p, diff)
		}
	}
	if diff := cmp.Diff([][3]int{{1, 1, 1}, {32, 32, 1}}, shape(HTTP1)); diff != "" {
		t.Errorf("http1 steps (-want +got):\n%s", diff)
	}
}

// TestProtocolsInterleaved: the protocols of one scenario, payload and
// concurrency share their rounds, whatever their connection shapes: each
// round measures every protocol once, the order rotated per round, and
// every row names the protocols its rounds interleaved.
func TestProtocolsInterleaved(t *testing.T) {
	dir := certDir(t)
	var c collect
	protos := []Protocol{H3, H2, HTTP1}
	cfg := Config{
		Arms: []Arm{h3Arm(t, dir, false)}, TLS: probertest.LoadTLS(t, prober.TLSOptions{CAFile: filepath.Join(dir, "ca.crt")}), Protocols: protos,
		Scenarios: []Scenario{Sequential, Throughput}, Concurrency: []int{8}, Conns: []int{2}, StreamsPerConn: []int{4},
		Rounds: 3, Warmup: 20, Calls: 200,
	}
	if err := Run(context.Background(), cfg, c.record); err != nil {
		t.Fatal(err)
	}
	type window struct {
		scenario Scenario
		round    int
		proto    Protocol
	}
	var got []window
	for _, w := range c.windows {
		got = append(got, window{w.Scenario, w.Round, w.Protocol})
		if w.Errors != 0 {
			t.Errorf("%s %s round %d: %d errors (%s)", w.Protocol, w.Scenario, w.Round, w.Errors, w.FirstError)
		}
	}
	var want []window
	for _, sc := range []Scenario{Sequential, Throughput} {
		for r := 0; r < 3; r++ {
			for k := range protos {
				want = append(want, window{sc, r + 1, protos[(k+r)%len(protos)]})
			}
		}
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(window{})); diff != "" {
		t.Errorf("windows in order (-want +got):\n%s", diff)
	}
	shapes := map[Protocol][2]int{}
	for _, r := range append(c.rows, c.windows...) {
		if diff := cmp.Diff(protos, r.RoundProtocols); diff != "" {
			t.Errorf("%s %s round %d: round protocols (-want +got):\n%s", r.Protocol, r.Scenario, r.Round, diff)
		}
		if r.Scenario == Throughput {
			shapes[r.Protocol] = [2]int{r.Conns, r.Depth}
		}
	}
	if diff := cmp.Diff(map[Protocol][2]int{H3: {2, 4}, H2: {2, 4}, HTTP1: {8, 1}}, shapes); diff != "" {
		t.Errorf("throughput shapes, conns and depth (-want +got):\n%s", diff)
	}
	if len(c.rows) != 6 {
		t.Errorf("%d rows of medians, want 6 (3 protocols × 2 scenarios)", len(c.rows))
	}
}

// TestStepGroups: steps of one scenario, payload, concurrency and rate
// share a group across protocols; a protocol alone in its group (gRPC's
// stream) keeps its rounds to itself.
func TestStepGroups(t *testing.T) {
	cfg := Config{Protocols: []Protocol{GRPC, HTTP1}, Scenarios: []Scenario{Sequential, Throughput, Stream},
		Payloads: []int{8, 1024}, Concurrency: []int{1, 32}, Conns: []int{1, 4}}.withDefaults()
	var got []string
	for _, g := range stepGroups(cfg) {
		var names []string
		for _, st := range g {
			names = append(names, st.String())
		}
		got = append(got, strings.Join(names, " + "))
	}
	want := []string{
		"grpc sequential 8B c=1 conns=1 depth=1 + http1 sequential 8B c=1 conns=1 depth=1",
		"grpc throughput 8B c=32 conns=1 depth=32 + grpc throughput 8B c=32 conns=4 depth=8 + http1 throughput 8B c=32 conns=32 depth=1",
		"grpc stream 8B c=1 conns=1 depth=1",
		"grpc stream 8B c=32 conns=1 depth=32 + grpc stream 8B c=32 conns=4 depth=8",
		"grpc sequential 1024B c=1 conns=1 depth=1 + http1 sequential 1024B c=1 conns=1 depth=1",
		"grpc throughput 1024B c=32 conns=1 depth=32 + grpc throughput 1024B c=32 conns=4 depth=8 + http1 throughput 1024B c=32 conns=32 depth=1",
		"grpc stream 1024B c=1 conns=1 depth=1",
		"grpc stream 1024B c=32 conns=1 depth=32 + grpc stream 1024B c=32 conns=4 depth=8",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("step groups (-want +got):\n%s", diff)
	}
	if n := roundLines(Config{Protocols: cfg.Protocols, Scenarios: cfg.Scenarios, Payloads: cfg.Payloads, Concurrency: cfg.Concurrency,
		Conns: cfg.Conns, Rounds: 3, Budgets: cfg.Budgets}.withDefaults()); n != 8*3 {
		t.Errorf("roundLines = %d, want 24 (8 groups × 3 rounds)", n)
	}
}

// TestTargetH3 loads a sample server started by hand over HTTP/3 alone,
// as steady run --target h3://HOST:PORT does: verified against the CA,
// metered through its PID, the process bound to the UDP port; a PID
// that holds no such socket is refused, naming the UDP address.
func TestTargetH3(t *testing.T) {
	dir := certDir(t)
	bin := testservers.BuildPackage(t, testservers.Echo)
	grpcAddr, _ := prober.FreeTCP()
	httpAddr, _ := prober.FreeTCP()
	cmd := startByHand(t, grpcAddr, bin, nil, "--addr="+grpcAddr.Address, "--http-addr="+httpAddr.Address, "--http3-addr="+httpAddr.Address,
		"--tls-cert", filepath.Join(dir, "server.crt"), "--tls-key", filepath.Join(dir, "server.key"))
	// startByHand saw the gRPC port accept; the server binds its UDP
	// socket after it, so wait until the process holds that too (a
	// loaded host once ran the check in between).
	udp := prober.Target{Network: "udp", Address: httpAddr.Address}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		err := (listeners{Root: "/proc"}).checkListener(cmd.Process.Pid, udp)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server by hand never bound %s: %v", udp, err)
		}
	}
	tl := probertest.LoadTLS(t, prober.TLSOptions{CAFile: filepath.Join(dir, "ca.crt")})
	var c collect
	cfg := Config{Target: &Target{Addr: httpAddr, PID: cmd.Process.Pid}, TLS: tl, Protocols: []Protocol{H3},
		Scenarios: []Scenario{Sequential}, Warmup: 20, Calls: 300, Rounds: 2}
	if err := Run(context.Background(), cfg, c.record); err != nil {
		t.Fatal(err)
	}
	if len(c.rows) != 1 || len(c.windows) != 2 {
		t.Fatalf("%d rows, %d windows; want 1 step of 2 rounds", len(c.rows), len(c.windows))
	}
	r := c.rows[0]
	if r.Protocol != H3 || r.Arm != "target" || r.Calls != 300 || r.Errors != 0 || !r.TLS || r.ServerCPUUsPerCall == nil || *r.ServerCPUUsPerCall <= 0 {
		t.Errorf("row: %s arm %q, %d calls, %d errors (%s), tls %v, server CPU %v: want h3, target, 300, none, true, read", r.Protocol, r.Arm, r.Calls, r.Errors, r.FirstError, r.TLS, r.ServerCPUUsPerCall)
	}
	bad := cfg
	bad.Target = &Target{Addr: httpAddr, PID: 1}
	err := Run(context.Background(), bad, (&collect{}).record)
	var oe *OptionError
	if !errors.As(err, &oe) || oe.Option != "Target.PID" || !strings.Contains(err.Error(), "udp://"+httpAddr.Address) {
		t.Errorf("Run with PID 1 = %v, want a Target.PID error naming udp://%s", err, httpAddr.Address)
	}
}
