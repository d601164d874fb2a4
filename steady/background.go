package steady

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/coldstart-go/coldstart/prober"
)

// LoadResult is what Load sent.
type LoadResult struct {
	// Calls answered without error, and calls that failed.
	Calls, Errors int64
	// Elapsed is how long the load ran.
	Elapsed time.Duration
	// Load describes it ("gRPC Echo unary, 64-byte payload, 4 goroutines
	// over one connection").
	Load string
}

// Load keeps the gRPC server at t busy until ctx is done: workers
// goroutines share one connection and call back to back (steady's closed
// loop, nothing measured), unary Echo with a payload of payload bytes, or
// health checks when the server has no coldstart Echo service. It is for
// load that only has to be there, such as while a CPU profile is taken.
func Load(ctx context.Context, t prober.Target, workers, payload int) (LoadResult, error) {
	if workers <= 0 {
		return LoadResult{}, fmt.Errorf("load %s: %d workers, want at least 1", t, workers)
	}
	g, err := newGRPC(ctx, t, 1, bytes.Repeat([]byte("x"), payload), false, grpcDialOptions(nil, nil))
	if err != nil {
		return LoadResult{}, err
	}
	defer g.close()
	var callers []caller
	load := fmt.Sprintf("gRPC Echo unary, %d-byte payload, %d goroutines over one connection", payload, workers)
	first, _ := g.caller(ctx, 0)
	if err := first.call(ctx); err != nil {
		if status.Code(err) != codes.Unimplemented {
			return LoadResult{}, fmt.Errorf("first Echo call to %s: %w", t, err)
		}
		h := &healthCall{cc: g.conns[0], req: &healthpb.HealthCheckRequest{}, resp: &healthpb.HealthCheckResponse{}}
		if err := h.call(ctx); err != nil {
			return LoadResult{}, fmt.Errorf("first health check of %s: %w", t, err)
		}
		load = fmt.Sprintf("gRPC health checks (the server has no coldstart Echo service), %d goroutines over one connection", workers)
		for range workers {
			callers = append(callers, &healthCall{cc: g.conns[0], req: &healthpb.HealthCheckRequest{}, resp: &healthpb.HealthCheckResponse{}})
		}
	} else {
		for i := range workers {
			c, err := g.caller(ctx, i)
			if err != nil {
				return LoadResult{}, err
			}
			callers = append(callers, c)
		}
	}
	o := closedLoop(ctx, callers, math.MaxInt64, 0, false)
	return LoadResult{Calls: o.calls - o.errors, Errors: o.errors, Elapsed: o.elapsed, Load: load}, nil
}

// healthCall calls grpc.health.v1.Health/Check.
type healthCall struct {
	cc   *grpc.ClientConn
	req  *healthpb.HealthCheckRequest
	resp *healthpb.HealthCheckResponse
}

func (h *healthCall) call(ctx context.Context) error {
	return h.cc.Invoke(ctx, healthpb.Health_Check_FullMethodName, h.req, h.resp)
}

// LoadCall is Load calling the user's method c instead of Echo: workers
// goroutines over one connection call it back to back until ctx is done.
// c's errors are OptionErrors naming its field as in Config ("Call.Method"
// for a method the server does not offer, with the ones it does).
func LoadCall(ctx context.Context, t prober.Target, workers int, c *Call) (LoadResult, error) {
	if workers <= 0 {
		return LoadResult{}, fmt.Errorf("load %s: %d workers, want at least 1", t, workers)
	}
	if err := c.validate(); err != nil {
		return LoadResult{}, err
	}
	rc, err := resolveCall(ctx, c, t, "", nil)
	if err != nil {
		return LoadResult{}, err
	}
	g, err := newGRPC(ctx, t, 1, nil, false, grpcDialOptions(nil, nil))
	if err != nil {
		return LoadResult{}, err
	}
	defer g.close()
	g.call = rc
	callers := make([]caller, workers)
	for i := range callers {
		if callers[i], err = g.caller(ctx, i); err != nil {
			return LoadResult{}, err
		}
	}
	if err := callers[0].call(ctx); err != nil {
		return LoadResult{}, fmt.Errorf("first call of %s at %s: %w", rc.method, t, err)
	}
	kind := "unary"
	if rc.serverStream {
		kind = "server-streaming"
	}
	load := fmt.Sprintf("gRPC %s %s, %d request(s) in turn, %d goroutines over one connection", kind, rc.method, len(rc.reqs), workers)
	o := closedLoop(ctx, callers, math.MaxInt64, 0, false)
	return LoadResult{Calls: o.calls - o.errors, Errors: o.errors, Elapsed: o.elapsed, Load: load}, nil
}
