package steady

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/coldstart-go/coldstart/prober"
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
				Arms: []Arm{h3Arm(t, dir, mtls)}, TLS: loadTLS(t, o), Protocols: []Protocol{H3},
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
