package steady

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/coldstart-go/coldstart/internal/testservers"
	"github.com/coldstart-go/coldstart/prober"
)

func TestMain(m *testing.M) { os.Exit(testservers.Run(m)) }

func sampleArm(t *testing.T) Arm {
	t.Helper()
	return Arm{Name: "default", Path: testservers.BuildPackage(t, testservers.Echo), Args: SampleArgs}
}

// collect records rows.
type collect struct {
	mu   sync.Mutex
	rows []Row
}

func (c *collect) record(r Row) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rows = append(c.rows, r)
	return nil
}

// spy is a Launcher that remembers the instances it started.
type spy struct {
	prober.Launcher
	mu    sync.Mutex
	insts []prober.Instance
}

func (s *spy) Launch(ctx context.Context, sp prober.Spec) (prober.Instance, error) {
	inst, err := s.Launcher.Launch(ctx, sp)
	if err == nil {
		s.mu.Lock()
		s.insts = append(s.insts, inst)
		s.mu.Unlock()
	}
	return inst, err
}

func (s *spy) last() prober.Instance {
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
	var want []shape
	for _, size := range []int{8, 1024} {
		want = append(want,
			shape{GRPC, Sequential, size, 1, 1, 1},
			shape{GRPC, Throughput, size, 4, 1, 4},
			shape{GRPC, Throughput, size, 4, 2, 2},
			shape{GRPC, Stream, size, 4, 1, 4},
			shape{GRPC, Stream, size, 4, 2, 2},
		)
	}
	for _, size := range []int{8, 1024} {
		want = append(want,
			shape{HTTP1, Sequential, size, 1, 1, 1},
			shape{HTTP1, Throughput, size, 4, 4, 1},
			shape{HTTP1, Throughput, size, 4, 1, 4},
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
		if r.ServerCPUUsPerCall <= 0 || r.ClientCPUUsPerCall <= 0 || r.CallsPerS <= 0 {
			t.Errorf("%s %s: server CPU %g, client CPU %g µs/call, %g calls/s, want all > 0", r.Protocol, r.Scenario, r.ServerCPUUsPerCall, r.ClientCPUUsPerCall, r.CallsPerS)
		}
		if r.AllocBytesPerCall == nil || *r.AllocBytesPerCall <= 0 || r.GCCycles == nil || r.GoMaxProcs < 1 {
			t.Errorf("%s %s: runtime metrics missing: alloc %v gc %v gomaxprocs %d", r.Protocol, r.Scenario, r.AllocBytesPerCall, r.GCCycles, r.GoMaxProcs)
		}
		if r.PeakRSSBytes < r.RSSBytes || r.RSSBytes <= 0 || r.PSSBytes <= 0 {
			t.Errorf("%s %s: memory peak %d rss %d pss %d", r.Protocol, r.Scenario, r.PeakRSSBytes, r.RSSBytes, r.PSSBytes)
		}
		t.Logf("%s %s %dB c=%d conns=%d depth=%d: %.0f calls/s p50 %.0f p99 %.0f µs server %.1f client %.1f µs/call alloc %.0f B/call",
			r.Protocol, r.Scenario, r.PayloadBytes, r.Concurrency, r.Conns, r.Depth, r.CallsPerS, r.P50Us, r.P99Us, r.ServerCPUUsPerCall, r.ClientCPUUsPerCall, *r.AllocBytesPerCall)
	}
	// A 1 KiB payload allocates more per call on the server than 8 B.
	if a, b := c.rows[0], c.rows[5]; *b.AllocBytesPerCall <= *a.AllocBytesPerCall {
		t.Errorf("alloc per call: %dB %.0f, %dB %.0f: want the larger payload to allocate more", a.PayloadBytes, *a.AllocBytesPerCall, b.PayloadBytes, *b.AllocBytesPerCall)
	}
}

var _ = errors.Is
var _ = syscall.SIGSTOP
var _ = time.Second
