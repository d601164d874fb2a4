package grpcschema

import (
	"context"
	"fmt"
	"slices"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	rpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
)

// Reflect asks the server cc reaches, by reflection (grpc.reflection.v1),
// for the services it offers and the file defining method's service, with
// its imports. Without a reflection service on the server, the types
// compiled into this program stand in when they define the service (the
// health service, coldstart's Echo); otherwise the error says to give the
// schema as --proto or --protoset and wraps ErrUnresolvable. Errors from
// the connection itself (status Unavailable: the server is not up yet)
// are returned as they are.
func Reflect(ctx context.Context, cc grpc.ClientConnInterface, method string) (*Schema, error) {
	_, svc, _, err := ParseMethod(method)
	if err != nil {
		return nil, final{err}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := rpb.NewServerReflectionClient(cc).ServerReflectionInfo(ctx)
	if err != nil {
		return nil, err
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
		return nil, err
	}
	from := "the server"
	var services []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		services = append(services, s.GetName())
	}
	slices.Sort(services)
	if !slices.Contains(services, svc) {
		return &Schema{Files: new(protoregistry.Files), Services: services, from: from}, nil
	}

	fdps := map[string]*descriptorpb.FileDescriptorProto{}
	add := func(resp *rpb.ServerReflectionResponse) error {
		if e := resp.GetErrorResponse(); e != nil {
			return finalf("reflection: %s (code %d)", e.GetErrorMessage(), e.GetErrorCode())
		}
		for _, b := range resp.GetFileDescriptorResponse().GetFileDescriptorProto() {
			fdp := new(descriptorpb.FileDescriptorProto)
			if err := proto.Unmarshal(b, fdp); err != nil {
				return finalf("reflection: decode file descriptor: %w", err)
			}
			fdps[fdp.GetName()] = fdp
		}
		return nil
	}
	resp, err = ask(&rpb.ServerReflectionRequest{MessageRequest: &rpb.ServerReflectionRequest_FileContainingSymbol{FileContainingSymbol: svc}})
	if err != nil {
		return nil, err
	}
	if err := add(resp); err != nil {
		return nil, err
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
				return nil, err
			}
			if err := add(resp); err != nil {
				return nil, err
			}
			if _, ok := fdps[dep]; !ok {
				return nil, finalf("reflection: the server did not send %s", dep)
			}
		}
	}
	files, err := buildFiles(fdps)
	if err != nil {
		return nil, finalf("reflection: %w", err)
	}
	return &Schema{Files: files, Services: services, from: from}, nil
}

// buildFiles links file descriptors into a registry, dependencies first;
// a dependency that is not among them comes from this program's own types
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
func compiledIn(svc string) (*Schema, error) {
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(svc))
	if _, ok := d.(protoreflect.ServiceDescriptor); err != nil || !ok {
		return nil, finalf("the server offers no reflection service (grpc.reflection.v1), so its types are unknown, and %s is not a service coldstart knows: give its schema with --protoset FILE, or --proto FILE (with --import-paths DIR for its imports)", svc)
	}
	files := new(protoregistry.Files)
	if err := files.RegisterFile(d.ParentFile()); err != nil {
		return nil, err
	}
	return &Schema{Files: files, Services: []string{svc + " (no reflection; compiled-in types)"}, from: "the server (no reflection; coldstart's compiled-in types)"}, nil
}
