package knative

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/pkg/apis"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/coldstart-go/coldstart/internal/echo"
	"github.com/coldstart-go/coldstart/internal/echo/echopb"
	"github.com/coldstart-go/coldstart/steady"
)

// TestSteadyTarget loads a Knative Service through the address and
// :authority coldstart run --on knative probes (here a loopback gRPC
// server standing in for the ingress, the Service and its pods in fake
// clientsets), with both steady clients: every call carries the Service's
// host as :authority, and each row records the running pods.
func TestSteadyTarget(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	authorities := map[string]int{}
	srv := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		mu.Lock()
		authorities[md.Get(":authority")[0]]++
		mu.Unlock()
		return h(ctx, req)
	}))
	echopb.RegisterEchoServer(srv, echo.Service{})
	go srv.Serve(lis)
	defer srv.Stop()

	svc := &servingv1.Service{ObjectMeta: metav1.ObjectMeta{Name: "coldstart-default", Namespace: "bench"}}
	svc.Status.URL = apis.HTTP("coldstart-default.bench.example.com")
	c := fakeCluster(t, "bench", true, svc)
	for _, p := range []*corev1.Pod{pod("p1", corev1.PodRunning, false), pod("p2", corev1.PodRunning, true), pod("p3", corev1.PodPending, false)} {
		if _, err := c.Kube.Resource(podsResource).Namespace("bench").Create(context.Background(), unstructuredOf(p), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	for _, client := range steady.Clients {
		t.Run(string(client), func(t *testing.T) {
			tg, err := SteadyTarget(context.Background(), c, "bench", "coldstart-default", "default", lis.Addr().String(), "", false)
			if err != nil {
				t.Fatal(err)
			}
			if tg.Authority != "coldstart-default.bench.example.com" || tg.Name != "default" {
				t.Fatalf("target %+v", tg)
			}
			mu.Lock()
			clear(authorities)
			mu.Unlock()
			var rows []steady.Row
			cfg := steady.Config{Target: &tg, Client: client, Scenarios: []steady.Scenario{steady.Sequential}, Warmup: 10, Calls: 200, Rounds: 1}
			if err := steady.Run(context.Background(), cfg, func(r steady.Row) error {
				if r.Round == 0 {
					rows = append(rows, r)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if len(rows) != 1 || rows[0].Errors != 0 || rows[0].Arm != "default" {
				t.Fatalf("rows %+v", rows)
			}
			if rows[0].Pods == nil || *rows[0].Pods != 1 || rows[0].ScaleEvent {
				t.Errorf("pods %v, scale event %v; want 1 running pod (one terminating, one pending), no event", rows[0].Pods, rows[0].ScaleEvent)
			}
			mu.Lock()
			defer mu.Unlock()
			// 10 warm-up and 200 measured calls, after steady's one check of
			// what the target serves.
			if len(authorities) != 1 || authorities["coldstart-default.bench.example.com"] != 211 {
				t.Errorf("authorities seen %v, want the Service's host on all 211 calls", authorities)
			}
		})
	}
}

func TestSteadyTargetErrors(t *testing.T) {
	c := fakeCluster(t, "bench", true)
	if _, err := SteadyTarget(context.Background(), c, "bench", "nope", "default", "127.0.0.1:80", "", false); err == nil {
		t.Error("SteadyTarget of a missing Service = nil error")
	}
	svc := &servingv1.Service{ObjectMeta: metav1.ObjectMeta{Name: "coldstart-default", Namespace: "bench"}}
	c = fakeCluster(t, "bench", true, svc)
	if _, err := SteadyTarget(context.Background(), c, "bench", "coldstart-default", "default", "", "", false); err == nil {
		t.Error("SteadyTarget without an ingress or a status address = nil error")
	}
	// Through the activator: no ready revision yet is named, one is routed
	// to by its host.
	if _, err := SteadyTarget(context.Background(), c, "bench", "coldstart-default", "default", "127.0.0.1:81", "", true); !errors.Is(err, ErrNoTarget) {
		t.Errorf("SteadyTarget via the activator without a ready revision = %v, want ErrNoTarget", err)
	}
	svc.Status.LatestReadyRevisionName = "coldstart-default-00002"
	c = fakeCluster(t, "bench", true, svc)
	tg, err := SteadyTarget(context.Background(), c, "bench", "coldstart-default", "default", "127.0.0.1:81", "", true)
	if err != nil || tg.Authority != "coldstart-default-00002.bench.svc.cluster.local" || tg.Addr.Address != "127.0.0.1:81" {
		t.Errorf("SteadyTarget via the activator = %+v, %v; want the revision's host at 127.0.0.1:81", tg, err)
	}
}
