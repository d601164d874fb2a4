package steady

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/proto"

	"github.com/coldstart-go/coldstart/internal/echo/echopb"
	"github.com/coldstart-go/coldstart/internal/leangrpc"
	"github.com/coldstart-go/coldstart/prober"
)

// The gRPC clients.
const (
	// ClientGRPC is grpc-go, what most Go services' clients use.
	ClientGRPC Client = "grpc"
	// ClientLean is internal/leangrpc: gRPC written as HTTP/2 frames
	// directly, as h2load does, so that the generator's own CPU per call
	// stays small.
	ClientLean Client = "lean"
)

// Clients lists the accepted clients, for help text and errors.
var Clients = []Client{ClientGRPC, ClientLean}

const echoStreamMethod = "/coldstart.echo.v1.Echo/EchoStream"

// leanTransport is conns leangrpc connections; worker i uses conn i%conns.
// A connection that fails is dialled again by the next call on it.
type leanTransport struct {
	target    prober.Target
	authority string
	conns     []*leanSlot
	stream    bool
	method    string        // the unary method: Echo, or the health check
	msg       []byte        // its marshalled request
	call      *resolvedCall // the user's method instead (--call), or nil
	opts      []leangrpc.Option
	// tls is the TLS configuration (nil = cleartext); hs counts the TLS
	// handshakes of the connections dialled.
	tls *prober.TLS
	hs  *atomic.Int64
}

// leanSlot is one connection and what replaced it after a failure.
type leanSlot struct {
	mu sync.Mutex
	c  *leangrpc.Conn
}

func authority(t prober.Target) string {
	if t.Network == "unix" {
		return "localhost" // grpc-go's own choice for a socket path
	}
	return t.Address
}

func newLean(ctx context.Context, t prober.Target, auth string, conns int, payload []byte, stream, health bool, call *resolvedCall, tl *prober.TLS, hs *atomic.Int64) (*leanTransport, error) {
	if auth == "" {
		auth = authority(t)
	}
	msg, err := proto.Marshal(&echopb.EchoRequest{Payload: payload})
	if err != nil {
		return nil, fmt.Errorf("marshal request: %w", err)
	}
	l := &leanTransport{target: t, authority: auth, stream: stream, method: echoMethod, msg: msg, tls: tl, hs: hs}
	l.opts = leanOptions(tl, t)
	if health {
		// HealthCheckRequest{} (the whole server) marshals to no bytes.
		l.method, l.msg = healthpb.Health_Check_FullMethodName, nil
	}
	if call != nil {
		l.call, l.method = call, call.method
		if len(call.md) > 0 {
			l.opts = append(l.opts, leangrpc.WithMetadata(call.md))
		}
	}
	for i := 0; i < conns; i++ {
		c, err := l.dial(ctx)
		if err != nil {
			l.close()
			return nil, fmt.Errorf("dial %s: %w", t, err)
		}
		l.conns = append(l.conns, &leanSlot{c: c})
	}
	return l, nil
}

// dial opens one connection, counting its TLS handshake (Dial returns
// once it completed and the server's SETTINGS came); a TLS failure is
// named by tlsFailure.
func (l *leanTransport) dial(ctx context.Context) (*leangrpc.Conn, error) {
	c, err := leangrpc.Dial(ctx, l.target.Network, l.target.Address, l.authority, l.opts...)
	if err != nil {
		return nil, tlsFailure(l.tls, l.target, err)
	}
	if l.tls != nil {
		l.hs.Add(1)
	}
	return c, nil
}

// conn is the slot's connection, dialled again if it failed.
func (l *leanTransport) conn(ctx context.Context, s *leanSlot) (*leangrpc.Conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.c.Err() == nil {
		return s.c, nil
	}
	c, err := l.dial(ctx)
	if err != nil {
		return nil, fmt.Errorf("dial %s again: %w", l.target, err)
	}
	s.c.Close()
	s.c = c
	return c, nil
}

func (l *leanTransport) caller(ctx context.Context, i int) (caller, error) {
	s := l.conns[i%len(l.conns)]
	c, err := l.conn(ctx, s)
	if err != nil {
		return nil, err
	}
	if l.call != nil {
		return newLeanCall(l, s, c, i), nil
	}
	if !l.stream {
		return &leanUnary{l: l, slot: s, c: c, u: c.NewUnary(l.method, l.msg)}, nil
	}
	st, err := c.NewStream(ctx, echoStreamMethod)
	if err != nil {
		return nil, fmt.Errorf("open EchoStream: %w", err)
	}
	return &leanStream{s: st, framed: leangrpc.Encode(l.msg)}, nil
}

func (l *leanTransport) close() {
	for _, s := range l.conns {
		s.mu.Lock()
		s.c.Close()
		s.mu.Unlock()
	}
}

// leanUnary calls Echo with the same request every time, on a new stream
// of its connection.
type leanUnary struct {
	l    *leanTransport
	slot *leanSlot
	c    *leangrpc.Conn
	u    *leangrpc.Unary
}

func (u *leanUnary) call(ctx context.Context) error {
	_, err := u.u.Call(ctx)
	if err != nil && u.c.Err() != nil {
		// The connection broke (this call counts as the error): the next
		// call goes over a new one.
		if c, derr := u.l.conn(ctx, u.slot); derr == nil {
			u.c, u.u = c, c.NewUnary(u.l.method, u.l.msg)
		}
	}
	return err
}

// leanStream sends one message on an open EchoStream and waits for its
// echo, like grpcStream.
type leanStream struct {
	s      *leangrpc.Stream
	framed []byte
}

func (s *leanStream) call(ctx context.Context) error {
	if err := s.s.Send(s.framed); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	_, err := s.s.Recv(ctx)
	if errors.Is(err, io.EOF) {
		return errors.New("EchoStream ended by the server")
	}
	return err
}
