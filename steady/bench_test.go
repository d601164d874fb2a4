package steady

import (
	"context"
	"testing"

	"github.com/coldstart-go/coldstart/budget"
	"github.com/coldstart-go/coldstart/internal/testservers"
)

// benchGenerator runs b.N calls of one scenario against the sample server
// (server on CPU 0, generator on CPU 1) and reports the generator's and the
// server's CPU per call.
func benchGenerator(b *testing.B, proto Protocol, sc Scenario, concurrency int, client ...Client) {
	arm := Arm{Name: "default", Path: testservers.BuildPackage(b, testservers.Echo), Args: SampleArgs}
	var c collect
	cfg := Config{
		Rounds: 1,
		Arms:   []Arm{arm}, Protocols: []Protocol{proto}, Scenarios: []Scenario{sc},
		Concurrency: []int{concurrency}, Warmup: 2000, Calls: max(b.N, 1000),
		Budgets: []budget.Budget{{CPUs: []int{0}}}, GeneratorCPUs: []int{1},
	}
	if len(client) > 0 {
		cfg.Client = client[0]
	}
	if err := Run(context.Background(), cfg, c.record); err != nil {
		b.Fatal(err)
	}
	r := c.rows[len(c.rows)-1]
	b.ReportMetric(r.ClientCPUUsPerCall, "client-cpu-µs/call")
	if r.ServerCPUUsPerCall != nil {
		b.ReportMetric(*r.ServerCPUUsPerCall, "server-cpu-µs/call")
	}
	b.ReportMetric(r.CallsPerS, "calls/s")
	b.ReportMetric(0, "ns/op")
}

func BenchmarkGRPCSequential(b *testing.B)   { benchGenerator(b, GRPC, Sequential, 1) }
func BenchmarkGRPCThroughput32(b *testing.B) { benchGenerator(b, GRPC, Throughput, 32) }
func BenchmarkGRPCStream32(b *testing.B)     { benchGenerator(b, GRPC, Stream, 32) }
func BenchmarkHTTP1Sequential(b *testing.B)  { benchGenerator(b, HTTP1, Sequential, 1) }
func BenchmarkLeanSequential(b *testing.B)   { benchGenerator(b, GRPC, Sequential, 1, ClientLean) }
func BenchmarkLeanThroughput32(b *testing.B) { benchGenerator(b, GRPC, Throughput, 32, ClientLean) }
func BenchmarkLeanStream32(b *testing.B)     { benchGenerator(b, GRPC, Stream, 32, ClientLean) }
