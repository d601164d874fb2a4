package steady

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/coldstart-go/coldstart/budget"
	"github.com/coldstart-go/coldstart/internal/testservers"
)

// TestLoadBound: the same closed loop (throughput, 8 in flight) against
// two real servers. One waits 2 ms in each call without using CPU: the
// loop cannot keep it busy, its CPU share stays far below
// record.LoadBoundShare and the row is load-bound. The other answers at
// once but is held to a tenth of a core by a CPU quota: the loop keeps it
// at its limit, and the row is not. Each row's limit is its budget's,
// lowered to the server's GOMAXPROCS where the server reports it (this
// one does not).
func TestLoadBound(t *testing.T) {
	if testing.Short() {
		t.Skip("two 1-second windows of load")
	}
	bin := testservers.Build(t)
	for _, tc := range []struct {
		name string
		args []string
		b    budget.Budget
		want bool
	}{
		{"waits", []string{"-echo-delay", "2ms"}, budget.Budget{}, true},
		{"quota", nil, budget.Budget{Cores: 0.1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.b.Check(); errors.Is(err, budget.ErrNoCgroup) {
				t.Skipf("budget %s: %v (a CPU quota needs root or a delegated cgroup)", tc.b, err)
			} else if err != nil {
				t.Fatal(err)
			}
			arm := Arm{Name: tc.name, Path: bin, Args: append([]string{"-mode", "grpc", "-listen-port", "{port}"}, tc.args...)}
			var c collect
			cfg := Config{Arms: []Arm{arm}, Budgets: []budget.Budget{tc.b}, Rounds: 1, Scenarios: []Scenario{Throughput},
				Concurrency: []int{8}, Duration: time.Second, Warmup: 200}
			if err := Run(context.Background(), cfg, c.record); err != nil {
				t.Fatal(err)
			}
			if len(c.rows) != 1 || len(c.windows) != 1 {
				t.Fatalf("%d rows, %d windows; want 1 and 1", len(c.rows), len(c.windows))
			}
			r := c.rows[0]
			if r.ServerCPUShare == nil {
				t.Fatalf("row has no server CPU share (server CPU %v, limit %g)", r.ServerCPUUsPerCall, r.ServerCPULimit)
			}
			t.Logf("%.0f calls/s, server %.1f µs/call, share %.3f of %g (GOMAXPROCS %d); %s", r.CallsPerS, *r.ServerCPUUsPerCall,
				*r.ServerCPUShare, r.ServerCPULimit, r.GoMaxProcs, r.LoadBoundText())
			want := tc.b.CPULimit()
			if r.GoMaxProcs > 0 { // a server that serves runtime metrics
				want = min(want, float64(r.GoMaxProcs))
			}
			if r.ServerCPULimit != want {
				t.Errorf("limit %g with GOMAXPROCS %d, want %g", r.ServerCPULimit, r.GoMaxProcs, want)
			}
			// The share is the server's CPU time over the window's wall
			// time, both from this run: recompute it from the row.
			if got, want := *r.ServerCPUShare, *r.ServerCPUUsPerCall*float64(r.Calls)/1e6/r.Seconds/r.ServerCPULimit; got < want*0.999 || got > want*1.001 {
				t.Errorf("share %g, want %g from the row's own CPU per call, calls and seconds", got, want)
			}
			if r.LoadBound() != tc.want || (r.LoadBoundText() != "") != tc.want {
				t.Errorf("LoadBound() = %v (%q), want %v", r.LoadBound(), r.LoadBoundText(), tc.want)
			}
		})
	}
}
