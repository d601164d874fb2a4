// Package grpcschema finds a gRPC method's types, for the probes and loads
// that call a user's own methods: in a protoset (a FileDescriptorSet, as
// protoc --descriptor_set_out writes), in .proto files compiled in process
// (github.com/bufbuild/protocompile, no protoc needed), or from a running
// server's reflection service (grpc.reflection.v1). It also builds the
// requests (protojson) and reads metadata given as key=value.
package grpcschema

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bufbuild/protocompile"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// ErrUnresolvable marks an error that retrying against the same server
// does not cure: a method the server or the schema files do not offer, a
// schema file that does not parse, a server without reflection when no
// schema file was given. Other errors from Resolve (the server is not up
// yet) may pass on a later attempt.
var ErrUnresolvable = errors.New("method cannot be resolved")

// final is an error that wraps ErrUnresolvable without saying so in its
// text.
type final struct{ error }

func (f final) Is(target error) bool { return target == ErrUnresolvable }
func (f final) Unwrap() error        { return f.error }

func finalf(format string, args ...any) error { return final{fmt.Errorf(format, args...)} }

// Source says where a method's types come from: Protoset, else Protos
// compiled with ImportPaths, else (the zero Source) the server's
// reflection service.
type Source struct {
	// Protoset is a FileDescriptorSet file, binary protobuf ("" = none).
	// It should hold the method's file with its imports (protoc
	// --include_imports); well-known types may be left out.
	Protoset string
	// Protos are .proto files, compiled in process.
	Protos []string
	// ImportPaths are the directories imports are looked up in. Each
	// proto's own directory is searched after them, and the well-known
	// types (google/protobuf/*.proto) are always there.
	ImportPaths []string
}

// Given reports whether s names schema files (else types come from
// reflection).
func (s Source) Given() bool { return s.Protoset != "" || len(s.Protos) > 0 }

// ParseMethod checks a full method name, "/pkg.Service/Method" or
// "pkg.Service/Method", and returns it with its leading slash, its service
// and its method name.
func ParseMethod(method string) (full, service, name string, err error) {
	m := strings.TrimPrefix(method, "/")
	svc, name, ok := strings.Cut(m, "/")
	if !ok || svc == "" || name == "" || strings.Contains(name, "/") {
		return "", "", "", fmt.Errorf("%q is not a gRPC method (want /package.Service/Method)", method)
	}
	return "/" + m, svc, name, nil
}

// Schema is the types a Source or a server offers: its files and the
// services they define, sorted.
type Schema struct {
	Files    *protoregistry.Files
	Services []string
	// from says where they came from, for errors: "server X's
	// reflection", "protoset F", "F.proto".
	from string
}

// Load reads the protoset or compiles the protos. It needs no server; a
// zero Source is an error.
func (s Source) Load(ctx context.Context) (*Schema, error) {
	switch {
	case s.Protoset != "" && len(s.Protos) > 0:
		return nil, finalf("give a protoset or .proto files, not both")
	case s.Protoset != "":
		return loadProtoset(s.Protoset)
	case len(s.Protos) > 0:
		return s.compile(ctx)
	}
	return nil, finalf("no schema given")
}

func loadProtoset(path string) (*Schema, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, finalf("read protoset %s: %w", path, err)
	}
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(b, &set); err != nil {
		return nil, finalf("protoset %s: not a FileDescriptorSet (binary protobuf, as protoc --descriptor_set_out --include_imports writes): %v", path, err)
	}
	if len(set.GetFile()) == 0 {
		return nil, finalf("protoset %s: holds no files", path)
	}
	fdps := map[string]*descriptorpb.FileDescriptorProto{}
	for _, f := range set.GetFile() {
		fdps[f.GetName()] = f
	}
	files, err := buildFiles(fdps)
	if err != nil {
		return nil, finalf("protoset %s: %w", path, err)
	}
	return &Schema{Files: files, Services: services(files), from: "protoset " + path}, nil
}

// compile compiles the protos. Each is named to the compiler relative to
// the first import path holding it (its own directory when none does), so
// its imports resolve as protoc would resolve them with -I.
func (s Source) compile(ctx context.Context) (*Schema, error) {
	paths := append([]string(nil), s.ImportPaths...)
	var names []string
	for _, p := range s.Protos {
		if _, err := os.Stat(p); err != nil {
			return nil, finalf("proto %s: %w", p, err)
		}
		name := ""
		for _, dir := range paths {
			if rel, err := filepath.Rel(dir, p); err == nil && !strings.HasPrefix(rel, "..") && !filepath.IsAbs(rel) {
				name = filepath.ToSlash(rel)
				break
			}
		}
		if name == "" {
			paths = append(paths, filepath.Dir(p))
			name = filepath.Base(p)
		}
		names = append(names, name)
	}
	c := protocompile.Compiler{
		Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{ImportPaths: paths}),
	}
	compiled, err := c.Compile(ctx, names...)
	if err != nil {
		return nil, finalf("compile %s: %w", strings.Join(s.Protos, ", "), err)
	}
	files := new(protoregistry.Files)
	var register func(fd protoreflect.FileDescriptor) error
	register = func(fd protoreflect.FileDescriptor) error {
		if _, err := files.FindFileByPath(fd.Path()); err == nil {
			return nil
		}
		imports := fd.Imports()
		for i := 0; i < imports.Len(); i++ {
			if err := register(imports.Get(i).FileDescriptor); err != nil {
				return err
			}
		}
		return files.RegisterFile(fd)
	}
	for _, fd := range compiled {
		if err := register(fd); err != nil {
			return nil, finalf("compile %s: %w", strings.Join(s.Protos, ", "), err)
		}
	}
	return &Schema{Files: files, Services: services(files), from: strings.Join(s.Protos, ", ")}, nil
}

// services lists the services files define, sorted.
func services(files *protoregistry.Files) []string {
	var out []string
	files.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		for i := 0; i < fd.Services().Len(); i++ {
			out = append(out, string(fd.Services().Get(i).FullName()))
		}
		return true
	})
	slices.Sort(out)
	return out
}

// Method finds method ("/pkg.Service/Method") in the schema. An error
// names what the schema offers instead: its services, or the service's
// methods.
func (s *Schema) Method(method string) (protoreflect.MethodDescriptor, error) {
	full, svc, name, err := ParseMethod(method)
	if err != nil {
		return nil, final{err}
	}
	d, err := s.Files.FindDescriptorByName(protoreflect.FullName(svc))
	if err != nil {
		return nil, finalf("%s offers no service %s for %s (services: %s)", s.from, svc, full, listOrNone(s.Services))
	}
	sd, ok := d.(protoreflect.ServiceDescriptor)
	if !ok {
		return nil, finalf("%s: %s is not a service (services: %s)", s.from, svc, listOrNone(s.Services))
	}
	md := sd.Methods().ByName(protoreflect.Name(name))
	if md == nil {
		var names []string
		for i := 0; i < sd.Methods().Len(); i++ {
			names = append(names, string(sd.Methods().Get(i).Name()))
		}
		return nil, finalf("%s: service %s has no method %s (methods: %s)", s.from, svc, name, listOrNone(names))
	}
	return md, nil
}

// Resolve finds method's types: in the Source's files when it names any
// (no server call), else by reflection from the server cc reaches (ctx
// carries any metadata the server wants on its reflection calls). A
// server without reflection falls back to the types compiled into this
// program (the health service, coldstart's Echo); any other method then
// fails with an error saying to give --proto or --protoset.
func Resolve(ctx context.Context, src Source, cc grpc.ClientConnInterface, method string) (protoreflect.MethodDescriptor, error) {
	if _, _, _, err := ParseMethod(method); err != nil {
		return nil, final{err}
	}
	var (
		s   *Schema
		err error
	)
	if src.Given() {
		s, err = src.Load(ctx)
	} else {
		s, err = Reflect(ctx, cc, method)
	}
	if err != nil {
		return nil, err
	}
	return s.Method(method)
}

// NewRequest builds a request of md's input type from protojson (empty =
// the empty message). An error names the message type, its fields and
// the field that does not fit.
func NewRequest(md protoreflect.MethodDescriptor, jsonText []byte) (*dynamicpb.Message, error) {
	req := dynamicpb.NewMessage(md.Input())
	if len(strings.TrimSpace(string(jsonText))) == 0 {
		return req, nil
	}
	if err := protojson.Unmarshal(jsonText, req); err != nil {
		return nil, fmt.Errorf("does not fit %s (fields: %s): %s", md.Input().FullName(),
			listOrNone(FieldNames(md.Input())), protoText(err))
	}
	return req, nil
}

// FieldNames are a message's fields by their JSON names.
func FieldNames(md protoreflect.MessageDescriptor) []string {
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

// protoText is a protobuf error's text without its "proto:" prefix (the
// library writes a space or, at random, a no-break space after it).
func protoText(err error) string {
	t := strings.TrimPrefix(err.Error(), "proto:")
	return strings.TrimLeft(t, " \u00a0")
}
