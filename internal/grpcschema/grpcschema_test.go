package grpcschema

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bufbuild/protocompile"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/reflection"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/coldstart-go/coldstart/internal/echo"
	"github.com/coldstart-go/coldstart/internal/echo/echopb"
)

// countProto is the testserver's server-streaming service, which imports
// a well-known type.
var countProto = filepath.Join("..", "testservers", "testserver", "count.proto")

// WriteProtoset compiles protos (named relative to dir) and writes them,
// with their imports, as a FileDescriptorSet to a file in t's temp dir, as
// protoc --descriptor_set_out --include_imports would.
func writeProtoset(t *testing.T, dir string, protos ...string) string {
	t.Helper()
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{ImportPaths: []string{dir}})}
	files, err := c.Compile(context.Background(), protos...)
	if err != nil {
		t.Fatal(err)
	}
	set := &descriptorpb.FileDescriptorSet{}
	seen := map[string]bool{}
	var add func(fd protoreflect.FileDescriptor)
	add = func(fd protoreflect.FileDescriptor) {
		if seen[fd.Path()] {
			return
		}
		seen[fd.Path()] = true
		for i := 0; i < fd.Imports().Len(); i++ {
			add(fd.Imports().Get(i).FileDescriptor)
		}
		set.File = append(set.File, protodesc.ToFileDescriptorProto(fd))
	}
	for _, fd := range files {
		add(fd)
	}
	b, err := proto.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "set.protoset")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoad(t *testing.T) {
	ctx := context.Background()
	protoset := writeProtoset(t, filepath.Dir(countProto), "count.proto")
	garbage := filepath.Join(t.TempDir(), "garbage.protoset")
	os.WriteFile(garbage, []byte("not a descriptor set \xff\xff"), 0o644)
	badProto := filepath.Join(t.TempDir(), "bad.proto")
	os.WriteFile(badProto, []byte("syntax = \"proto3\";\nmessage M { int32 = 1; }\n"), 0o644)
	// A proto importing another by a path relative to an import path.
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "api", "types"), 0o755)
	os.WriteFile(filepath.Join(dir, "api", "types", "req.proto"), []byte("syntax = \"proto3\";\npackage api.types;\nmessage Req { string name = 1; }\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "api", "svc.proto"), []byte("syntax = \"proto3\";\npackage api;\nimport \"api/types/req.proto\";\nservice Svc { rpc Get(api.types.Req) returns (api.types.Req); }\n"), 0o644)

	for _, tt := range []struct {
		name   string
		src    Source
		method string
		want   string // the input message, or the error's text
	}{
		{"protoset", Source{Protoset: protoset}, "/coldstart.test.v1.Count/Count", "coldstart.test.v1.CountRequest"},
		{"proto", Source{Protos: []string{countProto}}, "coldstart.test.v1.Count/Count", "coldstart.test.v1.CountRequest"},
		{"proto with an import path", Source{Protos: []string{filepath.Join(dir, "api", "svc.proto")}, ImportPaths: []string{dir}}, "/api.Svc/Get", "api.types.Req"},
		{"proto whose import is not found", Source{Protos: []string{filepath.Join(dir, "api", "svc.proto")}}, "/api.Svc/Get", "api/types/req.proto"},
		{"protoset that does not parse", Source{Protoset: garbage}, "/a.B/C", "protoset " + garbage + ": not a FileDescriptorSet"},
		{"protoset missing", Source{Protoset: garbage + ".gone"}, "/a.B/C", "read protoset " + garbage + ".gone"},
		{"proto that does not compile", Source{Protos: []string{badProto}}, "/a.B/C", "compile " + badProto},
		{"service not offered", Source{Protoset: protoset}, "/coldstart.test.v1.Sum/Add", "offers no service coldstart.test.v1.Sum for /coldstart.test.v1.Sum/Add (services: coldstart.test.v1.Count)"},
		{"method not offered", Source{Protoset: protoset}, "/coldstart.test.v1.Count/Sum", "service coldstart.test.v1.Count has no method Sum (methods: Count, Last)"},
		{"not a method", Source{Protoset: protoset}, "Count", `"Count" is not a gRPC method`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			md, err := Resolve(ctx, tt.src, nil, tt.method)
			if err != nil {
				if !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrUnresolvable) {
					t.Errorf("Resolve(%s) = %v, want an ErrUnresolvable containing %q", tt.method, err, tt.want)
				}
				return
			}
			if got := string(md.Input().FullName()); got != tt.want {
				t.Errorf("Resolve(%s) input = %s, want %s", tt.method, got, tt.want)
			}
		})
	}
}

func TestNewRequest(t *testing.T) {
	md, err := Resolve(context.Background(), Source{Protos: []string{countProto}}, nil, "/coldstart.test.v1.Count/Count")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		json, want string
	}{
		{`{"n": 3, "payload": "aGk=", "delay": "0.001s"}`, ""},
		{``, ""},
		{`{"count": 3}`, `unknown field "count"`},
		{`{"n": "three"}`, `n`},
		{`{"n": 3`, `unexpected EOF`},
	} {
		_, err := NewRequest(md, []byte(tt.json))
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("NewRequest(%s) = %v, want no error", tt.json, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) ||
			!strings.Contains(err.Error(), "does not fit coldstart.test.v1.CountRequest (fields: n, payload, failCode, delay)")):
			t.Errorf("NewRequest(%s) = %v, want an error naming the message, its fields and %q", tt.json, err, tt.want)
		}
	}
}

// serve starts a real gRPC server with Echo and health, with reflection
// when reflect is set, and returns a connection to it. A server with
// needKey refuses reflection calls without that metadata key.
func serve(t *testing.T, reflect bool, needKey string) *grpc.ClientConn {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var opts []grpc.ServerOption
	if needKey != "" {
		opts = append(opts, grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			if md, _ := metadata.FromIncomingContext(ss.Context()); len(md.Get(needKey)) == 0 {
				return errors.New("no " + needKey)
			}
			return h(srv, ss)
		}))
	}
	srv := grpc.NewServer(opts...)
	echopb.RegisterEchoServer(srv, echo.Service{})
	healthpb.RegisterHealthServer(srv, health.NewServer())
	if reflect {
		reflection.Register(srv)
	}
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

func TestReflect(t *testing.T) {
	ctx := context.Background()
	withReflection, without := serve(t, true, ""), serve(t, false, "")
	guarded := serve(t, true, "authorization")
	for _, tt := range []struct {
		name   string
		cc     *grpc.ClientConn
		ctx    context.Context
		method string
		want   string // the input message, or the error's text
		final  bool   // the error wraps ErrUnresolvable
	}{
		{"by reflection", withReflection, ctx, "/coldstart.echo.v1.Echo/Echo", "coldstart.echo.v1.EchoRequest", false},
		{"not offered: the services listed", withReflection, ctx, "/fgrpc.PingServer/Ping",
			"the server offers no service fgrpc.PingServer for /fgrpc.PingServer/Ping (services: coldstart.echo.v1.Echo, grpc.health.v1.Health, grpc.reflection.v1.ServerReflection, grpc.reflection.v1alpha.ServerReflection)", true},
		{"no reflection: compiled-in types", without, ctx, "/grpc.health.v1.Health/Check", "grpc.health.v1.HealthCheckRequest", false},
		{"no reflection: which flags to give", without, ctx, "/fgrpc.PingServer/Ping", "give its schema with --protoset FILE, or --proto FILE", true},
		{"reflection with metadata", guarded, metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer x"), "/coldstart.echo.v1.Echo/Echo", "coldstart.echo.v1.EchoRequest", false},
		{"reflection without the metadata it needs", guarded, ctx, "/coldstart.echo.v1.Echo/Echo", "no authorization", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			md, err := Resolve(tt.ctx, Source{}, tt.cc, tt.method)
			if err != nil {
				if !strings.Contains(err.Error(), tt.want) || errors.Is(err, ErrUnresolvable) != tt.final {
					t.Errorf("Resolve(%s) = %v, want an error containing %q (final: %v)", tt.method, err, tt.want, tt.final)
				}
				return
			}
			if got := string(md.Input().FullName()); got != tt.want {
				t.Errorf("Resolve(%s) input = %s, want %s", tt.method, got, tt.want)
			}
		})
	}
}

func TestParseMetadata(t *testing.T) {
	md, err := ParseMetadata([]string{"Authorization=Bearer a=b", "x-id=1", "x-id=2", "empty="})
	if err != nil {
		t.Fatal(err)
	}
	want := metadata.MD{"authorization": {"Bearer a=b"}, "x-id": {"1", "2"}, "empty": {""}}
	if diff := cmp.Diff(want, md); diff != "" {
		t.Errorf("ParseMetadata (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"authorization", "empty", "x-id"}, Keys(md)); diff != "" {
		t.Errorf("Keys (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"authorization: Bearer s3cret", "=v", "grpc-timeout=1S", ":path=/x", "a b=c"} {
		_, err := ParseMetadata([]string{bad})
		if err == nil || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("ParseMetadata(%q) = %v, want an error that does not quote the value", bad, err)
		}
	}
}
