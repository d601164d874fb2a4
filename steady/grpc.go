package steady

import (
	"context"
	"errors"
	"fmt"
	"io"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/coldstart-go/coldstart/internal/echo/echopb"
	"github.com/coldstart-go/coldstart/prober"
)

// grpcTransport is conns grpc-go ClientConns; worker i uses conn i%conns.
type grpcTransport struct {
	conns   []*grpc.ClientConn
	stream  bool
	payload []byte
	// health: call grpc.health.v1.Health/Check instead of Echo (a target
	// without coldstart's Echo service).
	health bool
	// call: the user's method instead (--call), or nil.
	call *resolvedCall
}

// newGRPC makes conns ClientConns to t with opts (grpcDialOptions and
// any others).
func newGRPC(ctx context.Context, t prober.Target, conns int, payload []byte, stream bool, opts []grpc.DialOption) (*grpcTransport, error) {
	g := &grpcTransport{stream: stream, payload: payload}
	for i := 0; i < conns; i++ {
		// Each ClientConn is its own HTTP/2 connection.
		cc, err := grpc.NewClient(t.GRPCTarget(), opts...)
		if err != nil {
			g.close()
			return nil, fmt.Errorf("dial %s: %w", t, err)
		}
		cc.Connect()
		g.conns = append(g.conns, cc)
	}
	return g, nil
}

func (g *grpcTransport) caller(ctx context.Context, i int) (caller, error) {
	cc := g.conns[i%len(g.conns)]
	if g.call != nil {
		return newGRPCCall(cc, g.call, i), nil
	}
	if g.health && !g.stream {
		return &healthCall{cc: cc, req: &healthpb.HealthCheckRequest{}, resp: &healthpb.HealthCheckResponse{}}, nil
	}
	req := &echopb.EchoRequest{Payload: g.payload}
	if !g.stream {
		return &grpcUnary{cc: cc, req: req, resp: new(echopb.EchoResponse)}, nil
	}
	s, err := echopb.NewEchoClient(cc).EchoStream(ctx)
	if err != nil {
		return nil, fmt.Errorf("open EchoStream: %w", err)
	}
	return &grpcStream{s: s, req: req, resp: new(echopb.EchoResponse)}, nil
}

func (g *grpcTransport) close() {
	for _, cc := range g.conns {
		cc.Close()
	}
}

const echoMethod = "/coldstart.echo.v1.Echo/Echo"

// grpcUnary calls Echo with the same request message every time.
type grpcUnary struct {
	cc   *grpc.ClientConn
	req  *echopb.EchoRequest
	resp *echopb.EchoResponse
}

func (u *grpcUnary) call(ctx context.Context) error {
	return u.cc.Invoke(ctx, echoMethod, u.req, u.resp)
}

// grpcStream sends one message on an open EchoStream and waits for its
// echo: one call is one round trip on the stream.
type grpcStream struct {
	s    echopb.Echo_EchoStreamClient
	req  *echopb.EchoRequest
	resp *echopb.EchoResponse
}

func (s *grpcStream) call(context.Context) error {
	if err := s.s.Send(s.req); err != nil {
		if errors.Is(err, io.EOF) {
			// The real status arrives on Recv.
			return s.s.RecvMsg(s.resp)
		}
		return err
	}
	return s.s.RecvMsg(s.resp)
}
