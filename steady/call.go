package steady

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/coldstart-go/coldstart/internal/grpcschema"
	"github.com/coldstart-go/coldstart/internal/leangrpc"
	"github.com/coldstart-go/coldstart/prober"
)

// Call is a user's own gRPC method that steady loads instead of
// coldstart's Echo (steady run --call): a unary or server-streaming
// method, whose types come from Schema or, when Schema names no file, from
// the server's reflection service. One call of a server-streaming method
// is the whole stream: the request, then every response message up to the
// status. A call whose status is not OK counts as an error, by its code.
type Call struct {
	// Method is the full method name, "/pkg.Service/Method".
	Method string
	// Data are the request messages in protojson (nil = one empty
	// message). Calls take them in turn, each worker starting at its own
	// (worker i at message i mod len(Data)), so a set of requests rotates.
	Data [][]byte
	// DataFile is a file of protojson requests, one a line (blank lines
	// skipped), read instead of Data ("" = Data).
	DataFile string
	// Metadata is sent with every call and with the reflection requests.
	// Rows record its keys (Row.MetadataKeys), never its values.
	Metadata metadata.MD
	// Schema is where the method's types come from (zero = reflection).
	Schema grpcschema.Source
}

// validate checks what needs no server. Its errors are OptionErrors
// naming the field of Config.Call at fault ("Call.DataFile").
func (c *Call) validate() error {
	if _, _, _, err := grpcschema.ParseMethod(c.Method); err != nil {
		return &OptionError{Option: "Call.Method", Err: err}
	}
	if c.DataFile != "" && len(c.Data) > 0 {
		return &OptionError{Option: "Call.DataFile", Fix: "Call.Data",
			Err: errors.New("a file of requests beside the requests given: give one or the other")}
	}
	if c.Schema.Protoset != "" && len(c.Schema.Protos) > 0 {
		return &OptionError{Option: "Call.Schema.Protoset", Fix: "Call.Schema.Protos",
			Err: errors.New("a descriptor set beside .proto files: give one or the other")}
	}
	if len(c.Schema.ImportPaths) > 0 && len(c.Schema.Protos) == 0 {
		return &OptionError{Option: "Call.Schema.ImportPaths", Fix: "Call.Schema.Protos",
			Err: errors.New("where .proto files find their imports: only with .proto files")}
	}
	if c.Schema.Given() {
		// Schema files need no server: a file that does not parse, a
		// method it lacks or a request that does not fit is reported
		// before any server starts.
		if _, err := resolveCall(context.Background(), c, prober.Target{}, "", nil); err != nil {
			return err
		}
	}
	return nil
}

// resolvedCall is a Call with its types found and its requests built.
type resolvedCall struct {
	method       string
	serverStream bool
	out          protoreflect.MessageDescriptor
	reqs         []*dynamicpb.Message // for grpc-go, which marshals each call
	wire         [][]byte             // the same, marshalled once, for lean
	md           metadata.MD
	bytes        int // mean marshalled request size
}

// resolveCall finds c's types (from its schema files, else by reflection
// from the server at t, over TLS with tl when set) and builds its
// requests. Its errors are OptionErrors naming the field at fault:
// Call.Method for a method the server or the files do not offer (with
// what they offer), Call.Schema.Protoset or Call.Schema.Protos for a file
// that does not parse, Call.Data or Call.DataFile (and its line) for a
// request that does not fit.
func resolveCall(ctx context.Context, c *Call, t prober.Target, authority string, tl *prober.TLS) (*resolvedCall, error) {
	full, _, _, err := grpcschema.ParseMethod(c.Method)
	if err != nil {
		return nil, &OptionError{Option: "Call.Method", Err: err}
	}
	var schema *grpcschema.Schema
	switch {
	case c.Schema.Protoset != "":
		if schema, err = c.Schema.Load(ctx); err != nil {
			return nil, &OptionError{Option: "Call.Schema.Protoset", Err: err}
		}
	case len(c.Schema.Protos) > 0:
		if schema, err = c.Schema.Load(ctx); err != nil {
			return nil, &OptionError{Option: "Call.Schema.Protos", Err: err}
		}
	default:
		opts := grpcDialOptions(tl, nil)
		if authority != "" {
			opts = append(opts, grpc.WithAuthority(authority))
		}
		cc, err := grpc.NewClient(t.GRPCTarget(), opts...)
		if err != nil {
			return nil, fmt.Errorf("dial %s: %w", t, err)
		}
		defer cc.Close()
		rctx := ctx
		if len(c.Metadata) > 0 {
			rctx = metadata.NewOutgoingContext(ctx, c.Metadata)
		}
		if schema, err = grpcschema.Reflect(rctx, cc, full); err != nil {
			return nil, optionf("Call.Method", "%s: types from %s: %w", full, t, err)
		}
	}
	md, err := schema.Method(full)
	if err != nil {
		return nil, &OptionError{Option: "Call.Method", Err: err}
	}
	if md.IsStreamingClient() {
		return nil, optionf("Call.Method", "%s: a client-streaming method; steady loads unary and server-streaming methods", full)
	}
	r := &resolvedCall{method: full, serverStream: md.IsStreamingServer(), out: md.Output(), md: c.Metadata}
	add := func(text []byte) error {
		req, err := grpcschema.NewRequest(md, text)
		if err != nil {
			return err
		}
		b, err := proto.Marshal(req)
		if err != nil {
			return fmt.Errorf("marshal: %w", err)
		}
		r.reqs, r.wire = append(r.reqs, req), append(r.wire, b)
		return nil
	}
	switch {
	case c.DataFile != "":
		f, err := os.Open(c.DataFile)
		if err != nil {
			return nil, &OptionError{Option: "Call.DataFile", Err: err}
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 64<<20)
		for line := 1; sc.Scan(); line++ {
			if len(bytes.TrimSpace(sc.Bytes())) == 0 {
				continue
			}
			if err := add(sc.Bytes()); err != nil {
				return nil, optionf("Call.DataFile", "%s line %d: %w", c.DataFile, line, err)
			}
		}
		if err := sc.Err(); err != nil {
			return nil, optionf("Call.DataFile", "read %s: %w", c.DataFile, err)
		}
		if len(r.reqs) == 0 {
			return nil, optionf("Call.DataFile", "%s holds no request (want one JSON message a line)", c.DataFile)
		}
	case len(c.Data) > 0:
		for _, d := range c.Data {
			if err := add(d); err != nil {
				return nil, &OptionError{Option: "Call.Data", Err: err}
			}
		}
	default:
		if err := add(nil); err != nil {
			return nil, &OptionError{Option: "Call.Data", Err: err}
		}
	}
	n := 0
	for _, b := range r.wire {
		n += len(b)
	}
	r.bytes = n / len(r.wire)
	return r, nil
}

// keys are the metadata keys a row records.
func (r *resolvedCall) keys() []string {
	if len(r.md) == 0 {
		return nil
	}
	return grpcschema.Keys(r.md)
}

// grpcCall calls the user's method over grpc-go with dynamic messages, as
// a grpc-go client with generated types would: each call marshals its
// request and decodes the response.
type grpcCall struct {
	cc   *grpc.ClientConn
	rc   *resolvedCall
	next int
	resp *dynamicpb.Message
	desc grpc.StreamDesc
}

func newGRPCCall(cc *grpc.ClientConn, rc *resolvedCall, worker int) *grpcCall {
	return &grpcCall{cc: cc, rc: rc, next: worker % len(rc.reqs), resp: dynamicpb.NewMessage(rc.out),
		desc: grpc.StreamDesc{ServerStreams: true}}
}

func (g *grpcCall) call(ctx context.Context) error {
	req := g.rc.reqs[g.next]
	g.next = (g.next + 1) % len(g.rc.reqs)
	if len(g.rc.md) > 0 {
		ctx = metadata.NewOutgoingContext(ctx, g.rc.md)
	}
	if !g.rc.serverStream {
		return g.cc.Invoke(ctx, g.rc.method, req, g.resp)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // releases the stream whatever ended it
	s, err := g.cc.NewStream(ctx, &g.desc, g.rc.method)
	if err != nil {
		return err
	}
	if err := s.SendMsg(req); err != nil && !errors.Is(err, io.EOF) {
		return err // io.EOF: the status comes with RecvMsg
	}
	if err := s.CloseSend(); err != nil {
		return err
	}
	for {
		if err := s.RecvMsg(g.resp); err != nil {
			if errors.Is(err, io.EOF) {
				return nil // status OK
			}
			return err
		}
	}
}

// leanCall calls the user's method over leangrpc with the requests
// marshalled once; responses are not decoded (their status decides).
type leanCall struct {
	l       *leanTransport
	slot    *leanSlot
	c       *leangrpc.Conn
	next    int
	unary   []*leangrpc.Unary
	streams []*leangrpc.ServerStream
}

func newLeanCall(l *leanTransport, s *leanSlot, c *leangrpc.Conn, worker int) *leanCall {
	lc := &leanCall{l: l, slot: s, next: worker % len(l.call.wire)}
	lc.bind(c)
	return lc
}

// bind prepares the calls on connection c.
func (lc *leanCall) bind(c *leangrpc.Conn) {
	lc.c, lc.unary, lc.streams = c, nil, nil
	for _, b := range lc.l.call.wire {
		if lc.l.call.serverStream {
			lc.streams = append(lc.streams, c.NewServerStream(lc.l.call.method, b))
		} else {
			lc.unary = append(lc.unary, c.NewUnary(lc.l.call.method, b))
		}
	}
}

func (lc *leanCall) call(ctx context.Context) error {
	i := lc.next
	lc.next = (lc.next + 1) % len(lc.l.call.wire)
	var err error
	if lc.streams != nil {
		_, err = lc.streams[i].Call(ctx, nil)
	} else {
		_, err = lc.unary[i].Call(ctx)
	}
	if err != nil && lc.c.Err() != nil {
		// The connection broke (this call counts as the error): the next
		// call goes over a new one.
		if c, derr := lc.l.conn(ctx, lc.slot); derr == nil {
			lc.bind(c)
		}
	}
	return err
}
