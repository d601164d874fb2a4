package prober

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	rpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// GRPCMethod calls one unary gRPC method on a fresh channel per attempt,
// fail-fast. Any OK reply means ready; a status other than Unavailable,
// DeadlineExceeded or Canceled means the server answered but is not ready.
//
// Its request and reply types come from the server's reflection service, so
// a GRPCMethod must be resolved against a running server (Resolve, or
// Prepare on a warm-up instance) before it measures anything: an unresolved
// one fails every Check with ErrUnresolved.
type GRPCMethod struct {
	// Method is the full method name, "/pkg.Service/Method".
	Method string
	// Authority overrides the :authority header.
	Authority string

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
	m := strings.TrimPrefix(method, "/")
	svc, name, ok := strings.Cut(m, "/")
	if !ok || svc == "" || name == "" || strings.Contains(name, "/") {
		return "", fmt.Errorf("--probe: %q is not a gRPC method (want /package.Service/Method)", method)
	}
	return "/" + m, nil
}

// Name labels the probe in results: "grpc-method /pkg.Service/Method".
func (g *GRPCMethod) Name() string { return "grpc-method " + g.Method }

// Check calls the method once on a new channel and closes it.
func (g *GRPCMethod) Check(ctx context.Context, t Target) (Answer, error) {
	if !g.resolved {
		return Answer{}, ErrUnresolved
	}
	cc, err := grpc.NewClient(t.GRPCTarget(), g.dialOptions()...)
	if err != nil {
		return Answer{}, fmt.Errorf("dial %s: %w", t, err)
	}
	defer cc.Close()
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

func (g *GRPCMethod) dialOptions() []grpc.DialOption {
	opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	if g.Authority != "" {
		opts = append(opts, grpc.WithAuthority(g.Authority))
	}
	return opts
}

// Prepare makes one attempt to resolve the method's types from the server
// at t by reflection (grpc.reflection.v1) and to build the request. When the
// server does not offer reflection, types compiled into coldstart (the
// health service) are used. Errors wrap ErrBadProbe when the server answered
// and the probe is wrong; other errors (the server is not up yet) may pass
// on a later attempt.
func (g *GRPCMethod) Prepare(ctx context.Context, t Target) error {
	svcName, methodName, _ := strings.Cut(strings.TrimPrefix(g.Method, "/"), "/")
	cc, err := grpc.NewClient(t.GRPCTarget(), g.dialOptions()...)
	if err != nil {
		return fmt.Errorf("dial %s: %w", t, err)
	}
	defer cc.Close()
	files, services, err := reflectService(ctx, cc, svcName)
	if err != nil {
		return fmt.Errorf("resolve %s at %s: %w", g.Method, t, err)
	}
	d, err := files.FindDescriptorByName(protoreflect.FullName(svcName))
	if err != nil {
		return fmt.Errorf("%w: resolve %s at %s: the server offers no service %s (services: %s)",
			ErrBadProbe, g.Method, t, svcName, listOrNone(services))
	}
	sd, ok := d.(protoreflect.ServiceDescriptor)
	if !ok {
		return fmt.Errorf("%w: resolve %s at %s: %s is a %T, not a service (services: %s)",
			ErrBadProbe, g.Method, t, svcName, d, listOrNone(services))
	}
	md := sd.Methods().ByName(protoreflect.Name(methodName))
	if md == nil {
		var names []string
		for i := 0; i < sd.Methods().Len(); i++ {
			names = append(names, string(sd.Methods().Get(i).Name()))
		}
		return fmt.Errorf("%w: resolve %s at %s: service %s has no method %s (methods: %s)",
			ErrBadProbe, g.Method, t, svcName, methodName, listOrNone(names))
	}
	if md.IsStreamingClient() || md.IsStreamingServer() {
		return fmt.Errorf("%w: resolve %s at %s: a streaming method; only unary methods can be probed",
			ErrBadProbe, g.Method, t)
	}
	req := dynamicpb.NewMessage(md.Input())
	if g.binary {
		if err := proto.Unmarshal(g.request, req); err != nil {
			return fmt.Errorf("%w: --probe-request: not a binary %s (a file ending in .json is read as JSON): %v", ErrBadProbe, md.Input().FullName(), err)
		}
	} else if len(strings.TrimSpace(string(g.request))) > 0 {
		if err := protojson.Unmarshal(g.request, req); err != nil {
			return fmt.Errorf("%w: --probe-request: does not match %s (fields: %s): %v",
				ErrBadProbe, md.Input().FullName(), listOrNone(fieldNames(md.Input())), err)
		}
	}
	g.req, g.out, g.resolved = req, md.Output(), true
	return nil
}

func fieldNames(md protoreflect.MessageDescriptor) []string {
	var names []string
	for i := 0; i < md.Fields().Len(); i++ {
		names = append(names, md.Fields().Get(i).JSONName())
	}
	return names
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// reflectService fetches the file defining service svc, with its
// dependencies, and the list of services the server offers. Without a
// reflection service on the server, it falls back to the types compiled
// into this program.
func reflectService(ctx context.Context, cc *grpc.ClientConn, svc string) (*protoregistry.Files, []string, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := rpb.NewServerReflectionClient(cc).ServerReflectionInfo(ctx)
	if err != nil {
		return nil, nil, err
	}
	ask := func(r *rpb.ServerReflectionRequest) (*rpb.ServerReflectionResponse, error) {
		if err := stream.Send(r); err != nil {
			_, err = stream.Recv() // the stream's real error
			return nil, err
		}
		return stream.Recv()
	}
	resp, err := ask(&rpb.ServerReflectionRequest{MessageRequest: &rpb.ServerReflectionRequest_ListServices{}})
	if status.Code(err) == codes.Unimplemented {
		return compiledIn(svc)
	}
	if err != nil {
		return nil, nil, err
	}
	var services []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		services = append(services, s.GetName())
	}
	slices.Sort(services)
	if !slices.Contains(services, svc) {
		return new(protoregistry.Files), services, nil
	}

	fdps := map[string]*descriptorpb.FileDescriptorProto{}
	add := func(resp *rpb.ServerReflectionResponse) error {
		if e := resp.GetErrorResponse(); e != nil {
			return fmt.Errorf("reflection: %s (code %d)", e.GetErrorMessage(), e.GetErrorCode())
		}
		for _, b := range resp.GetFileDescriptorResponse().GetFileDescriptorProto() {
			fdp := new(descriptorpb.FileDescriptorProto)
			if err := proto.Unmarshal(b, fdp); err != nil {
				return fmt.Errorf("reflection: decode file descriptor: %w", err)
			}
			fdps[fdp.GetName()] = fdp
		}
		return nil
	}
	resp, err = ask(&rpb.ServerReflectionRequest{MessageRequest: &rpb.ServerReflectionRequest_FileContainingSymbol{FileContainingSymbol: svc}})
	if err != nil {
		return nil, services, err
	}
	if err := add(resp); err != nil {
		return nil, services, err
	}
	// The server sends the file's dependencies with it; fetch any it left
	// out (some servers send only the one file).
	for {
		var missing []string
		for _, fdp := range fdps {
			for _, dep := range fdp.GetDependency() {
				if _, ok := fdps[dep]; !ok {
					if _, err := protoregistry.GlobalFiles.FindFileByPath(dep); err != nil {
						missing = append(missing, dep)
					}
				}
			}
		}
		if len(missing) == 0 {
			break
		}
		for _, dep := range missing {
			resp, err := ask(&rpb.ServerReflectionRequest{MessageRequest: &rpb.ServerReflectionRequest_FileByFilename{FileByFilename: dep}})
			if err != nil {
				return nil, services, err
			}
			if err := add(resp); err != nil {
				return nil, services, err
			}
			if _, ok := fdps[dep]; !ok {
				return nil, services, fmt.Errorf("reflection: the server did not send %s", dep)
			}
		}
	}
	files, err := buildFiles(fdps)
	if err != nil {
		return nil, services, fmt.Errorf("reflection: %w", err)
	}
	return files, services, nil
}

// buildFiles links file descriptors into a registry, dependencies first;
// a dependency the server did not send comes from this program's own types
// (well-known types).
func buildFiles(fdps map[string]*descriptorpb.FileDescriptorProto) (*protoregistry.Files, error) {
	files := new(protoregistry.Files)
	var resolver multiResolver = []protodesc.Resolver{files, protoregistry.GlobalFiles}
	var visit func(name string, seen map[string]bool) error
	visit = func(name string, seen map[string]bool) error {
		if _, err := files.FindFileByPath(name); err == nil {
			return nil
		}
		fdp, ok := fdps[name]
		if !ok {
			return nil // from GlobalFiles
		}
		if seen[name] {
			return fmt.Errorf("import cycle at %s", name)
		}
		seen[name] = true
		for _, dep := range fdp.GetDependency() {
			if err := visit(dep, seen); err != nil {
				return err
			}
		}
		fd, err := protodesc.NewFile(fdp, resolver)
		if err != nil {
			return fmt.Errorf("link %s: %w", name, err)
		}
		return files.RegisterFile(fd)
	}
	names := make([]string, 0, len(fdps))
	for n := range fdps {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if err := visit(n, map[string]bool{}); err != nil {
			return nil, err
		}
	}
	return files, nil
}

type multiResolver []protodesc.Resolver

func (m multiResolver) FindFileByPath(p string) (protoreflect.FileDescriptor, error) {
	for _, r := range m {
		if fd, err := r.FindFileByPath(p); err == nil {
			return fd, nil
		}
	}
	return nil, protoregistry.NotFound
}

func (m multiResolver) FindDescriptorByName(n protoreflect.FullName) (protoreflect.Descriptor, error) {
	for _, r := range m {
		if d, err := r.FindDescriptorByName(n); err == nil {
			return d, nil
		}
	}
	return nil, protoregistry.NotFound
}

// compiledIn resolves svc from the types linked into this program, for
// servers without reflection.
func compiledIn(svc string) (*protoregistry.Files, []string, error) {
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(svc))
	if err != nil {
		return nil, nil, fmt.Errorf("%w: the server offers no reflection service (grpc.reflection.v1), so its services are unknown, and %s is not a service coldstart knows", ErrBadProbe, svc)
	}
	files := new(protoregistry.Files)
	if err := files.RegisterFile(d.ParentFile()); err != nil {
		return nil, nil, err
	}
	return files, []string{svc + " (no reflection; compiled-in types)"}, nil
}
