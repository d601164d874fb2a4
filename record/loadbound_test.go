package record

import (
	"strings"
	"testing"
)

// TestLoadBound: only a closed loop meant to find capacity (throughput,
// stream, more than one call in flight) below LoadBoundShare of a known limit is load-bound; an open
// loop, a sequential step or a row without a share never is, and the
// text names the share, the limit and the generator's CPUs.
func TestLoadBound(t *testing.T) {
	share := func(v float64) *float64 { return &v }
	tests := []struct {
		name string
		r    SteadyRow
		want string
	}{
		{"throughput below", SteadyRow{Scenario: "throughput", Concurrency: 32, ServerCPULimit: 1, ServerCPUShare: share(0.51), CallsPerS: 30000, ClientCPUUsPerCall: 33},
			"the server used 51% of its 1 CPU, the generator 0.99 CPUs: calls/s is the load's limit, not the server's"},
		{"stream below", SteadyRow{Scenario: "stream", Concurrency: 32, ServerCPULimit: 2, ServerCPUShare: share(0.4), CallsPerS: 1000, ClientCPUUsPerCall: 100},
			"the server used 40% of its 2 CPUs, the generator 0.10 CPUs: calls/s is the load's limit, not the server's"},
		{"throughput at the limit", SteadyRow{Scenario: "throughput", Concurrency: 32, ServerCPULimit: 0.5, ServerCPUShare: share(0.97)}, ""},
		{"just at the share", SteadyRow{Scenario: "throughput", Concurrency: 32, ServerCPULimit: 1, ServerCPUShare: share(LoadBoundShare)}, ""},
		{"sequential", SteadyRow{Scenario: "sequential", ServerCPULimit: 1, ServerCPUShare: share(0.1)}, ""},
		{"open loop", SteadyRow{Scenario: "throughput", Concurrency: 32, RateReq: 1000, ServerCPULimit: 1, ServerCPUShare: share(0.1)}, ""},
		{"no share", SteadyRow{Scenario: "throughput"}, ""},
	}
	for _, tt := range tests {
		got := tt.r.LoadBoundText()
		if got != tt.want || tt.r.LoadBound() != (tt.want != "") {
			t.Errorf("%s: LoadBound() %v, text %q; want %q", tt.name, tt.r.LoadBound(), got, tt.want)
		}
		if got != "" && !strings.Contains(got, "load's limit") {
			t.Errorf("%s: %q does not say what calls/s is", tt.name, got)
		}
	}
}

// TestServerCPUs: calls/s times server CPU per call, in CPUs; 0 when the
// server's CPU was not read.
func TestServerCPUs(t *testing.T) {
	us := 25.0
	if got := (SteadyRow{CallsPerS: 40000, ServerCPUUsPerCall: &us}).ServerCPUs(); got != 1 {
		t.Errorf("40000 calls/s at 25 µs: ServerCPUs() = %g, want 1", got)
	}
	if got := (SteadyRow{CallsPerS: 40000}).ServerCPUs(); got != 0 {
		t.Errorf("no server CPU read: ServerCPUs() = %g, want 0", got)
	}
}
