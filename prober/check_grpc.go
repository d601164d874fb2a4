package prober

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/coldstart-go/coldstart/internal/grpcschema"
)

// GRPCMethod calls one unary gRPC method on a fresh channel per attempt,
// fail-fast. Any OK reply means ready; a status other than Unavailable,
// DeadlineExceeded or Canceled means the server answered but is not ready.
//
// Its request and reply types come from Schema's files or else the server's
// reflection service, so a GRPCMethod must be resolved (Resolve, or
// Prepare on a warm-up instance) before it measures anything: an unresolved
// one fails every Check with ErrUnresolved.
type GRPCMethod struct {
	// Method is the full method name, "/pkg.Service/Method".
	Method string
	// Authority overrides the :authority header.
	Authority string
	// Schema is where the method's types come from: a protoset or .proto
	// files (--protoset, --proto); the zero Source = the server's
	// reflection service.
	Schema grpcschema.Source
	// Metadata is sent with every call and with the reflection requests
	// (--probe-metadata).
	Metadata metadata.MD
	// TLS, when set, makes each attempt a new TLS client (grpcs://,
	// --tls); TLSName is the server name from a grpcs:// URL's host.
	TLS     *TLS
	TLSName string

	request []byte // as given: JSON, or binary protobuf when binary is set
	binary  bool

	req      proto.Message // resolved request, marshalled by each Check
	out      protoreflect.MessageDescriptor
	resolved bool
}

var (
	_ Checker  = (*GRPCMethod)(nil)
	_ Preparer = (*GRPCMethod)(nil)
)

// ErrUnresolved is returned by a GRPCMethod's Check before its types were
// resolved from the server.
var ErrUnresolved = errors.New("gRPC method not resolved (call Prepare or Resolve on a running server first)")

// ErrBadProbe marks a probe that cannot work against this server: a method
// it does not offer, a request that does not match the method's input type.
// Retrying does not help.
var ErrBadProbe = errors.New("bad probe")

// NewGRPCMethod returns an unresolved probe of method ("/pkg.Service/Method"
// or "pkg.Service/Method") with a JSON request (protojson; nil or empty = the
// empty message).
func NewGRPCMethod(method string, jsonRequest []byte) (*GRPCMethod, error) {
	m, err := cleanMethod(method)
	if err != nil {
		return nil, err
	}
	return &GRPCMethod{Method: m, request: jsonRequest}, nil
}

// NewGRPCMethodBinary is NewGRPCMethod with a request in the protobuf binary
// wire format.
func NewGRPCMethodBinary(method string, request []byte) (*GRPCMethod, error) {
	g, err := NewGRPCMethod(method, request)
	if err != nil {
		return nil, err
	}
	g.binary = true
	return g, nil
}

// ResolveMethod asks the server at t, by reflection, for method's types,
// checks the JSON request against the input type, and returns a probe ready
// to measure. Errors wrap ErrBadProbe when the server answered but the
// method or the request is wrong.
func ResolveMethod(ctx context.Context, t Target, method string, jsonRequest []byte) (*GRPCMethod, error) {
	g, err := NewGRPCMethod(method, jsonRequest)
	if err != nil {
		return nil, err
	}
	if err := g.Prepare(ctx, t); err != nil {
		return nil, err
	}
	return g, nil
}

func cleanMethod(method string) (string, error) {
	m, _, _, err := grpcschema.ParseMethod(method)
	if err != nil {
		return "", err
	}
	return m, nil
}

// Name labels the probe in results: "grpc-method /pkg.Service/Method",
// "grpcs-method ..." over TLS.
func (g *GRPCMethod) Name() string {
	return scheme("grpc", "grpcs", g.TLS) + "-method " + g.Method + unverified(g.TLS)
}

// Check calls the method once on a new channel and closes it.
func (g *GRPCMethod) Check(ctx context.Context, t Target) (Answer, error) {
	if !g.resolved {
		return Answer{}, ErrUnresolved
	}
	opts, at := g.dialOptions(t)
	cc, err := grpc.NewClient(t.GRPCTarget(), opts...)
	if err != nil {
		return Answer{}, fmt.Errorf("dial %s: %w", t, err)
	}
	defer cc.Close()
	return at.finish(g.TLS, func() (Answer, error) { return g.check(ctx, cc) })
}

func (g *GRPCMethod) check(ctx context.Context, cc *grpc.ClientConn) (Answer, error) {
	if len(g.Metadata) > 0 {
		ctx = metadata.NewOutgoingContext(ctx, g.Metadata)
	}
	resp := dynamicpb.NewMessage(g.out)
	if err := cc.Invoke(ctx, g.Method, g.req, resp); err != nil {
		switch status.Code(err) {
		case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled:
			return Answer{}, err
		}
		return Answer{Answered: true, Detail: status.Code(err).String()}, nil
	}
	return Answer{Answered: true, Ready: true}, nil
}

func (g *GRPCMethod) dialOptions(t Target) ([]grpc.DialOption, *attemptTLS) {
	return grpcTransport(g.TLS, g.TLSName, g.Authority, t)
}

// Prepare makes one attempt to resolve the method's types, from Schema's
// files or else from the server at t by reflection (grpc.reflection.v1),
// and to build the request. A server without reflection is probed with the
// types compiled into coldstart (the health service, Echo) when they are
// the method's; for any other method the error says to give --proto or
// --protoset. Errors wrap ErrBadProbe when the probe is wrong (a method not
// offered, a schema file that does not parse, a request that does not
// fit); other errors (the server is not up yet) may pass on a later
// attempt.
func (g *GRPCMethod) Prepare(ctx context.Context, t Target) error {
	opts, at := g.dialOptions(t)
	cc, err := grpc.NewClient(t.GRPCTarget(), opts...)
	if err != nil {
		return fmt.Errorf("dial %s: %w", t, err)
	}
	defer cc.Close()
	if len(g.Metadata) > 0 {
		ctx = metadata.NewOutgoingContext(ctx, g.Metadata)
	}
	md, err := grpcschema.Resolve(ctx, g.Schema, cc, g.Method)
	if _, ferr := at.finish(g.TLS, func() (Answer, error) { return Answer{}, err }); ferr != err {
		return ferr // a final TLS failure
	}
	if errors.Is(err, grpcschema.ErrUnresolvable) {
		return fmt.Errorf("%w: resolve %s at %s: %v", ErrBadProbe, g.Method, t, err)
	}
	if err != nil {
		return fmt.Errorf("resolve %s at %s: %w", g.Method, t, err)
	}
	if md.IsStreamingClient() || md.IsStreamingServer() {
		return fmt.Errorf("%w: resolve %s at %s: a streaming method; only unary methods can be probed",
			ErrBadProbe, g.Method, t)
	}
	req := dynamicpb.NewMessage(md.Input())
	if g.binary {
		if err := proto.Unmarshal(g.request, req); err != nil {
			return fmt.Errorf("%w: %w", ErrBadProbe, optionf("request", "not a binary %s (a file ending in .json is read as JSON): %v", md.Input().FullName(), err))
		}
	} else if req, err = grpcschema.NewRequest(md, g.request); err != nil {
		return fmt.Errorf("%w: %w", ErrBadProbe, &OptionError{Option: "request", Err: err})
	}
	g.req, g.out, g.resolved = req, md.Output(), true
	return nil
}
