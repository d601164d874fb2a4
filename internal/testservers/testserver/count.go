package main

import (
	"context"
	_ "embed"
	"fmt"
	"strings"
	"time"

	"github.com/bufbuild/protocompile"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/durationpb"
)

// countProto is the Count service's schema, also the file tests give as
// --proto.
//
//go:embed count.proto
var countProto string

// registerCount compiles count.proto, registers it where the reflection
// service looks (protoregistry.GlobalFiles) and serves Count/Count and
// Count/Last with dynamic messages: a server-streaming and a unary method
// no generated code is needed for.
func registerCount(srv *grpc.Server) error {
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
		Accessor: protocompile.SourceAccessorFromMap(map[string]string{"count.proto": countProto}),
	})}
	files, err := c.Compile(context.Background(), "count.proto")
	if err != nil {
		return fmt.Errorf("compile count.proto: %w", err)
	}
	fd := files[0]
	if err := protoregistry.GlobalFiles.RegisterFile(fd); err != nil {
		return fmt.Errorf("register count.proto: %w", err)
	}
	sd := fd.Services().ByName("Count")
	in, out := sd.Methods().ByName("Count").Input(), sd.Methods().ByName("Count").Output()
	field := func(md protoreflect.MessageDescriptor, name string) protoreflect.FieldDescriptor {
		return md.Fields().ByName(protoreflect.Name(name))
	}
	srv.RegisterService(&grpc.ServiceDesc{
		ServiceName: string(sd.FullName()),
		HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{{
			MethodName: "Last",
			Handler: func(_ any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
				req := dynamicpb.NewMessage(in)
				if err := dec(req); err != nil {
					return nil, err
				}
				last := func(_ context.Context, _ any) (any, error) {
					if code := req.Get(field(in, "fail_code")).Int(); code != 0 {
						return nil, status.Errorf(codes.Code(code), "asked to fail with code %d", code)
					}
					resp := dynamicpb.NewMessage(out)
					resp.Set(field(out, "index"), protoreflect.ValueOfInt32(int32(req.Get(field(in, "n")).Int()-1)))
					resp.Set(field(out, "payload"), req.Get(field(in, "payload")))
					return resp, nil
				}
				if icpt == nil {
					return last(ctx, req)
				}
				return icpt(ctx, req, &grpc.UnaryServerInfo{FullMethod: "/" + string(sd.FullName()) + "/Last"}, last)
			},
		}},
		Streams: []grpc.StreamDesc{{
			StreamName:    "Count",
			ServerStreams: true,
			Handler: func(_ any, st grpc.ServerStream) error {
				req := dynamicpb.NewMessage(in)
				if err := st.RecvMsg(req); err != nil {
					return err
				}
				n := req.Get(field(in, "n")).Int()
				payload := req.Get(field(in, "payload")).Bytes()
				var delay time.Duration
				if d := req.Get(field(in, "delay")).Message(); d.IsValid() {
					delay = (&durationpb.Duration{
						Seconds: d.Get(d.Descriptor().Fields().ByName("seconds")).Int(),
						Nanos:   int32(d.Get(d.Descriptor().Fields().ByName("nanos")).Int()),
					}).AsDuration()
				}
				for i := int64(0); i < n; i++ {
					if delay > 0 {
						time.Sleep(delay)
					}
					resp := dynamicpb.NewMessage(out)
					resp.Set(field(out, "index"), protoreflect.ValueOfInt32(int32(i)))
					resp.Set(field(out, "payload"), protoreflect.ValueOfBytes(payload))
					if err := st.SendMsg(resp); err != nil {
						return err
					}
				}
				if code := req.Get(field(in, "fail_code")).Int(); code != 0 {
					return status.Errorf(codes.Code(code), "asked to fail with code %d", code)
				}
				return nil
			},
		}},
		Metadata: "count.proto",
	}, struct{}{})
	return nil
}

// requireMetadata makes every call but the health service's fail with
// Unauthenticated unless its metadata has key with value (reflection
// included, so a client must send its metadata there too).
func requireMetadata(kv string) ([]grpc.ServerOption, error) {
	key, value, ok := strings.Cut(kv, "=")
	if !ok || key == "" {
		return nil, fmt.Errorf("-require-metadata: %q, want key=value", kv)
	}
	key = strings.ToLower(key)
	check := func(ctx context.Context, method string) error {
		if strings.HasPrefix(method, "/grpc.health.v1.Health/") {
			return nil // readiness probes carry no metadata
		}
		md, _ := metadata.FromIncomingContext(ctx)
		for _, v := range md.Get(key) {
			if v == value {
				return nil
			}
		}
		if len(md.Get(key)) > 0 {
			return status.Errorf(codes.PermissionDenied, "metadata %s has the wrong value", key)
		}
		return status.Errorf(codes.Unauthenticated, "metadata %s missing", key)
	}
	return []grpc.ServerOption{
		grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if err := check(ctx, info.FullMethod); err != nil {
				return nil, err
			}
			return h(ctx, req)
		}),
		grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			if err := check(ss.Context(), info.FullMethod); err != nil {
				return err
			}
			return h(srv, ss)
		}),
	}, nil
}
