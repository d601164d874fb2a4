// Command hotserver is a server shaped as a user's: it starts only as its
// user does (-listen ADDR and $HOT_KEY set, or it exits 2) and spends its
// calls in one deliberately hot function, spinHot, behind its own method
// hot.v1.Hot/Spin (served by reflection), beside the health service. A
// profile taken under its own traffic shows spinHot; one taken under
// health checks does not.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/bufbuild/protocompile"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"
)

const hotProto = `syntax = "proto3";
package hot.v1;
service Hot {
  // Spin runs spinHot for n rounds and answers with its sum.
  rpc Spin(SpinRequest) returns (SpinReply);
}
message SpinRequest { int32 n = 1; }
message SpinReply { uint64 sum = 1; }
`

func main() {
	listen := flag.String("listen", "", "address to listen on (required)")
	flag.Parse()
	if *listen == "" || os.Getenv("HOT_KEY") == "" {
		fmt.Fprintln(os.Stderr, "hotserver: want -listen ADDR and $HOT_KEY")
		os.Exit(2)
	}
	lis, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "hotserver:", err)
		os.Exit(1)
	}
	srv := grpc.NewServer()
	if err := registerHot(srv); err != nil {
		fmt.Fprintln(os.Stderr, "hotserver:", err)
		os.Exit(1)
	}
	healthpb.RegisterHealthServer(srv, health.NewServer())
	reflection.Register(srv)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	go func() { <-sig; srv.Stop() }()
	if err := srv.Serve(lis); err != nil {
		fmt.Fprintln(os.Stderr, "hotserver:", err)
		os.Exit(1)
	}
}

// spinHot is the hot path: n rounds of an xorshift mix.
//
//go:noinline
func spinHot(n int) uint64 {
	x := uint64(88172645463325252)
	for i := 0; i < n; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	return x
}

func registerHot(srv *grpc.Server) error {
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
		Accessor: protocompile.SourceAccessorFromMap(map[string]string{"hot.proto": hotProto}),
	})}
	files, err := c.Compile(context.Background(), "hot.proto")
	if err != nil {
		return err
	}
	fd := files[0]
	if err := protoregistry.GlobalFiles.RegisterFile(fd); err != nil {
		return err
	}
	sd := fd.Services().ByName("Hot")
	in, out := sd.Methods().ByName("Spin").Input(), sd.Methods().ByName("Spin").Output()
	srv.RegisterService(&grpc.ServiceDesc{
		ServiceName: string(sd.FullName()),
		HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{{
			MethodName: "Spin",
			Handler: func(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
				req := dynamicpb.NewMessage(in)
				if err := dec(req); err != nil {
					return nil, err
				}
				n := int(req.Get(in.Fields().ByName("n")).Int())
				resp := dynamicpb.NewMessage(out)
				resp.Set(out.Fields().ByName("sum"), protoreflect.ValueOfUint64(spinHot(n)))
				return resp, nil
			},
		}},
		Metadata: "hot.proto",
	}, struct{}{})
	return nil
}
