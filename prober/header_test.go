package prober_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"

	"github.com/coldstart-go/coldstart/prober"
)

// Headers added with WithHeader reach the server: as metadata over gRPC,
// as request headers over HTTP; a context without them sends none.
func TestWithHeader(t *testing.T) {
	const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

	got := make(chan []string, 4)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		got <- md.Get("traceparent")
		return h(ctx, req)
	}))
	healthpb.RegisterHealthServer(gs, health.NewServer())
	go gs.Serve(lis)
	t.Cleanup(gs.Stop)

	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Values("Traceparent")
	}))
	t.Cleanup(hs.Close)

	httpProbe, err := prober.ParseProbe("http:///", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		c    prober.Checker
		addr string
	}{
		{"grpc", prober.Health{}, lis.Addr().String()},
		{"http", httpProbe, strings.TrimPrefix(hs.URL, "http://")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tg := prober.Target{Network: "tcp", Address: tt.addr}
			a, err := tt.c.Check(prober.WithHeader(context.Background(), "traceparent", tp), tg)
			if err != nil || !a.Ready {
				t.Fatalf("Check = %+v, %v", a, err)
			}
			if v := <-got; len(v) != 1 || v[0] != tp {
				t.Errorf("server saw traceparent %q, want [%q]", v, tp)
			}
			if _, err := tt.c.Check(context.Background(), tg); err != nil {
				t.Fatal(err)
			}
			if v := <-got; len(v) != 0 {
				t.Errorf("without WithHeader the server saw traceparent %q", v)
			}
		})
	}
}
