// Package rtmetrics serves and reads a Go process's runtime metrics
// (allocated bytes, GC cycles, heap, GOMAXPROCS) as JSON, so a load
// generator can report allocation per call from outside the server.
package rtmetrics

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"runtime/metrics"
	"strings"
	"time"
)

// Path is where Handler is mounted on the server's debug listener.
const Path = "/debug/runtime"

// EnvAddr names the environment variable that tells a server built with the
// opt-in hook where to serve Path ("host:port"; unset = off).
const EnvAddr = "COLDSTART_DEBUG_ADDR"

// Snapshot is one reading of the runtime metrics. Counters are cumulative
// since the process started.
type Snapshot struct {
	AllocBytes   uint64 `json:"alloc_bytes"`   // /gc/heap/allocs:bytes
	AllocObjects uint64 `json:"alloc_objects"` // /gc/heap/allocs:objects
	GCCycles     uint64 `json:"gc_cycles"`     // /gc/cycles/total:gc-cycles
	HeapBytes    uint64 `json:"heap_bytes"`    // /memory/classes/heap/objects:bytes
	GoMaxProcs   int    `json:"gomaxprocs"`
	Goroutines   int    `json:"goroutines"`
	// GCCPUSeconds is the CPU the garbage collector has used, estimated
	// by the runtime (/cpu/classes/gc/total:cpu-seconds; 0 from a server
	// that does not serve it).
	GCCPUSeconds float64 `json:"gc_cpu_seconds"`
}

var names = []string{
	"/gc/heap/allocs:bytes",
	"/gc/heap/allocs:objects",
	"/gc/cycles/total:gc-cycles",
	"/memory/classes/heap/objects:bytes",
	"/cpu/classes/gc/total:cpu-seconds",
}

// Read takes a Snapshot of this process.
func Read() Snapshot {
	samples := make([]metrics.Sample, len(names))
	for i, n := range names {
		samples[i].Name = n
	}
	metrics.Read(samples)
	u := func(i int) uint64 {
		if samples[i].Value.Kind() == metrics.KindUint64 {
			return samples[i].Value.Uint64()
		}
		return 0
	}
	f := func(i int) float64 {
		if samples[i].Value.Kind() == metrics.KindFloat64 {
			return samples[i].Value.Float64()
		}
		return 0
	}
	return Snapshot{
		AllocBytes:   u(0),
		AllocObjects: u(1),
		GCCycles:     u(2),
		HeapBytes:    u(3),
		GoMaxProcs:   runtime.GOMAXPROCS(0),
		Goroutines:   runtime.NumGoroutine(),
		GCCPUSeconds: f(4),
	}
}

// Handler serves Read() as JSON.
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(Read())
	})
}

// Fetch reads a Snapshot from a server's debug address ("host:port" or a
// Unix socket path).
func Fetch(ctx context.Context, addr string) (Snapshot, error) {
	client := http.DefaultClient
	url := "http://" + addr + Path
	if strings.HasPrefix(addr, "/") {
		var d net.Dialer
		client = &http.Client{Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return d.DialContext(ctx, "unix", addr) },
		}}
		url = "http://unix" + Path
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Snapshot{}, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return Snapshot{}, fmt.Errorf("fetch runtime metrics from %s: %w", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Snapshot{}, fmt.Errorf("fetch runtime metrics from %s: %s", addr, resp.Status)
	}
	var s Snapshot
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return Snapshot{}, fmt.Errorf("decode runtime metrics from %s: %w", addr, err)
	}
	return s, nil
}
