package prober_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/coldstart-go/coldstart/internal/echo/echopb"
	"github.com/coldstart-go/coldstart/internal/grpcschema"
	"github.com/coldstart-go/coldstart/internal/testservers"
	"github.com/coldstart-go/coldstart/launch"
	"github.com/coldstart-go/coldstart/prober"
)

func TestHTTPOnlyServerReady(t *testing.T) {
	bin := testservers.Build(t)
	tg := freeTCP(t)
	inst := start(t, bin, tg, "-mode", "http")
	c, err := prober.ParseProbe("http:///healthz", "")
	if err != nil {
		t.Fatal(err)
	}
	waitReady(t, inst, tg, c)
	a, err := c.Check(context.Background(), tg)
	if err != nil || !a.Ready || a.Detail != "HTTP/1.1" {
		t.Errorf("Check(%s) = %+v, %v; want ready over HTTP/1.1", c.Name(), a, err)
	}
}

// A server that says "not ready" for its first 200 ms: the first answer
// comes before the first ready answer, and both are recorded.
func TestNotReadyAtFirst(t *testing.T) {
	bin := testservers.Build(t)
	for _, tt := range []struct {
		name, mode, probe, note string
	}{
		{"grpc-health", "grpc", "health", "NOT_SERVING"},
		{"http", "http", "http://127.0.0.1:{port}/ready", "503 Service Unavailable"},
		{"h2c", "http", "h2c:///ready", "503 Service Unavailable"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tg := freeTCP(t)
			inst := start(t, bin, tg, "-mode", tt.mode, "-h2c", "-not-ready-for", "200ms")
			c, err := prober.ParseProbe(tt.probe, "")
			if err != nil {
				t.Fatal(err)
			}
			r := waitReady(t, inst, tg, c)
			s := prober.Sample{Phases: r.Phases}
			ans, _ := s.Phase(prober.PhaseFirstReply)
			rpc, _ := s.Phase(prober.PhaseFirstRPC)
			if ans >= rpc {
				t.Errorf("first_answer %.1f ms, first_rpc %.1f ms: want the not-ready answer first", ans, rpc)
			}
			// The server cannot be ready before 200 ms after its own start,
			// which is after T0.
			if rpc < 200 {
				t.Errorf("first_rpc %.1f ms, before the server's 200 ms not-ready window ended", rpc)
			}
			if r.LastNote != tt.note {
				t.Errorf("LastNote = %q, want %q", r.LastNote, tt.note)
			}
		})
	}
}

func TestH2C(t *testing.T) {
	bin := testservers.Build(t)
	tg := freeTCP(t)
	inst := start(t, bin, tg, "-mode", "http", "-h2c")
	c, err := prober.ParseProbe("h2c://localhost/x?y=1", "")
	if err != nil {
		t.Fatal(err)
	}
	waitReady(t, inst, tg, c)
	for _, tt := range []struct{ probe, proto string }{
		{"h2c:///x", "HTTP/2.0"},
		{"http:///x", "HTTP/1.1"},
	} {
		c, err := prober.ParseProbe(tt.probe, "")
		if err != nil {
			t.Fatal(err)
		}
		a, err := c.Check(context.Background(), tg)
		if err != nil || !a.Ready || a.Detail != tt.proto {
			t.Errorf("Check(%s) = %+v, %v; want ready over %s", tt.probe, a, err, tt.proto)
		}
	}
	// An HTTP/1.1-only server does not answer an h2c probe.
	tg1 := freeTCP(t)
	inst1 := start(t, bin, tg1, "-mode", "http")
	waitReady(t, inst1, tg1, &prober.HTTP{Path: "/"})
	if a, err := c.Check(context.Background(), tg1); err == nil && a.Ready {
		t.Errorf("h2c Check against an HTTP/1.1-only server = %+v, want not ready", a)
	}
}

func TestTCPIsLowerBound(t *testing.T) {
	bin := testservers.Build(t)
	c, err := prober.ParseProbe("tcp", "")
	if err != nil {
		t.Fatal(err)
	}
	if !prober.IsLowerBound(c) || !strings.Contains(c.Name(), "lower bound") {
		t.Errorf("tcp probe: IsLowerBound = %v, Name = %q; want labelled a lower bound", prober.IsLowerBound(c), c.Name())
	}
	if prober.IsLowerBound(prober.Health{}) {
		t.Error("IsLowerBound(Health) = true")
	}
	tg := freeTCP(t)
	// It listens but never says SERVING: TCP counts it "ready" anyway,
	// which is why it is only a lower bound.
	inst := start(t, bin, tg, "-mode", "grpc", "-not-ready-for", "-1s")
	waitReady(t, inst, tg, c)
	if _, err := c.Check(context.Background(), freeTCP(t)); err == nil {
		t.Error("tcp Check of a closed port: no error")
	}
}

func TestPortConventions(t *testing.T) {
	bin := testservers.Build(t)
	for _, tt := range []struct {
		name           string
		tmpl           []string
		probe, request string
	}{
		{"PORT only", []string{"-mode", "grpc"}, "health", ""},
		{"-listen-port flag", []string{"-mode", "grpc", "-listen-port", "{port}"}, "health", ""},
		{"unix socket grpc", []string{"-mode", "grpc", "-socket={socket}"}, "health", ""},
		{"unix socket http", []string{"-mode", "http", "-socket", "{socket}"}, "http:///healthz", ""},
		{"unix socket method", []string{"-mode", "grpc", "-socket", "{socket}"}, "/coldstart.echo.v1.Echo/Echo", `{"payload":"aGk="}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := prober.ParseTemplate(tt.tmpl)
			if err != nil {
				t.Fatal(err)
			}
			tg := tmpl.Target(freeTCP(t), socketDir(t))
			if want := tmpl.UsesSocket(); (tg.Network == "unix") != want {
				t.Fatalf("Target = %s, want a unix socket: %v", tg, want)
			}
			args, err := tmpl.Expand(prober.VarsFor(tg))
			if err != nil {
				t.Fatal(err)
			}
			inst := start(t, bin, tg, args...)
			c, err := prober.ParseProbe(tt.probe, tt.request)
			if err != nil {
				t.Fatal(err)
			}
			if err := prober.Prepare(context.Background(), inst, tg, c, waitOpts); err != nil {
				t.Fatal(err)
			}
			waitReady(t, inst, tg, c)
		})
	}
}

// The sample echo server's Echo method, resolved once by reflection against
// a warm-up instance, then measured on a fresh instance.
func TestGRPCMethodEcho(t *testing.T) {
	bin := testservers.BuildPackage(t, testservers.Echo)
	binReq, err := proto.Marshal(&echopb.EchoRequest{Payload: []byte("hi")})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, b := range map[string][]byte{"req.bin": binReq, "req.json": []byte(`{"payload":"aGk="}`)} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, request := range []string{`{"payload":"aGk="}`, "@" + filepath.Join(dir, "req.bin"), "@" + filepath.Join(dir, "req.json"), ""} {
		t.Run(request, func(t *testing.T) {
			c, err := prober.ParseProbe("/coldstart.echo.v1.Echo/Echo", request)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Check(context.Background(), freeTCP(t)); !errors.Is(err, prober.ErrUnresolved) {
				t.Errorf("Check before Prepare: %v, want ErrUnresolved", err)
			}
			warm := freeTCP(t)
			if err := prober.Prepare(context.Background(), start(t, bin, warm), warm, c, waitOpts); err != nil {
				t.Fatal(err)
			}
			tg := freeTCP(t)
			waitReady(t, start(t, bin, tg), tg, c)
		})
	}
}

func TestGRPCMethodBadInput(t *testing.T) {
	bin := testservers.BuildPackage(t, testservers.Echo)
	tg := freeTCP(t)
	inst := start(t, bin, tg)
	waitReady(t, inst, tg, prober.Health{})
	for _, tt := range []struct {
		name, method, request string
		want                  []string
	}{
		{"unknown service", "/coldstart.echo.v1.Nope/Echo", "",
			[]string{"no service coldstart.echo.v1.Nope", "services: coldstart.echo.v1.Echo, grpc.health.v1.Health, grpc.reflection.v1.ServerReflection"}},
		{"unknown method", "/coldstart.echo.v1.Echo/Shout", "",
			[]string{"has no method Shout", "methods: Echo, EchoStream"}},
		{"streaming method", "/coldstart.echo.v1.Echo/EchoStream", "", []string{"streaming"}},
		{"unknown field", "/coldstart.echo.v1.Echo/Echo", `{"paylod":"aGk="}`,
			[]string{"bad probe: request: ", "coldstart.echo.v1.EchoRequest", `"paylod"`, "fields: payload"}},
		{"wrong type", "/coldstart.echo.v1.Echo/Echo", `{"payload":5}`,
			[]string{"coldstart.echo.v1.EchoRequest", "payload"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := prober.ResolveMethod(context.Background(), tg, tt.method, []byte(tt.request))
			if !errors.Is(err, prober.ErrBadProbe) {
				t.Fatalf("ResolveMethod(%s, %s) = %v, want ErrBadProbe", tt.method, tt.request, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("ResolveMethod(%s, %s) = %q, want it to mention %q", tt.method, tt.request, err, w)
				}
			}
		})
	}
	// Prepare stops at a bad probe at once instead of retrying to the timeout.
	c, err := prober.ParseProbe("/coldstart.echo.v1.Echo/Shout", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := prober.Prepare(context.Background(), inst, tg, c, prober.WaitOptions{Timeout: time.Hour}); !errors.Is(err, prober.ErrBadProbe) {
		t.Errorf("Prepare(unknown method) = %v, want ErrBadProbe", err)
	}
}

func TestMisbehavingServers(t *testing.T) {
	bin := testservers.Build(t)
	short := prober.WaitOptions{Timeout: 1500 * time.Millisecond}
	for _, tt := range []struct {
		name  string
		args  []string
		probe string
		want  error
		msg   string
	}{
		{"exits at once", []string{"-mode", "exit", "-message", "boom: no config"}, "health", launch.ErrExited, "boom: no config"},
		{"never listens", []string{"-mode", "silent"}, "health", prober.ErrNotReady, "dial tcp"},
		{"NOT_SERVING forever", []string{"-mode", "grpc", "-not-ready-for", "-1s"}, "health", prober.ErrNotReady, "answered NOT_SERVING"},
		{"503 forever", []string{"-mode", "http", "-not-ready-for", "-1s"}, "http:///", prober.ErrNotReady, "answered 503"},
		{"method prepare, exits", []string{"-mode", "exit"}, "/a.B/C", launch.ErrExited, "configuration missing"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tg := freeTCP(t)
			inst := start(t, bin, tg, tt.args...)
			c, err := prober.ParseProbe(tt.probe, "")
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := c.(prober.Preparer); ok {
				err = prober.Prepare(context.Background(), inst, tg, c, short)
			} else {
				_, err = prober.WaitReady(context.Background(), inst, tg, c, short)
			}
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("got %v, want %v mentioning %q", err, tt.want, tt.msg)
			}
		})
	}
}

// A fixed-port server: the stale-server check refuses while anything
// answers at the address, and passes once it is gone.
func TestFixedAddrStaleServer(t *testing.T) {
	bin := testservers.Build(t)
	free := freeTCP(t)
	tg, err := prober.ParseAddr("localhost:" + free.Port())
	if err != nil {
		t.Fatal(err)
	}
	if err := prober.EnsureFree(context.Background(), tg); err != nil {
		t.Fatalf("EnsureFree(%s) before any server: %v", tg, err)
	}
	inst := start(t, bin, tg, "-mode", "http", "-listen-port", tg.Port())
	waitReady(t, inst, tg, &prober.HTTP{Path: "/"})
	if err := prober.EnsureFree(context.Background(), tg); !errors.Is(err, prober.ErrInUse) {
		t.Errorf("EnsureFree(%s) with a server there = %v, want ErrInUse", tg, err)
	}
	if err := inst.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := prober.WaitFree(context.Background(), tg, 5*time.Second); err != nil {
		t.Errorf("WaitFree after Stop: %v", err)
	}

	// The same for a fixed Unix socket.
	stg, err := prober.ParseAddr("unix:" + prober.SocketPath(socketDir(t)))
	if err != nil {
		t.Fatal(err)
	}
	sinst := start(t, bin, stg, "-mode", "grpc", "-socket", stg.Address)
	waitReady(t, sinst, stg, prober.Health{})
	if err := prober.EnsureFree(context.Background(), stg); !errors.Is(err, prober.ErrInUse) {
		t.Errorf("EnsureFree(%s) with a server there = %v, want ErrInUse", stg, err)
	}
}

// A method probe of a server without reflection that wants metadata (the
// testserver's Count/Last, which no coldstart code knows): without a
// schema it says which flags to give; with count.proto and the metadata
// it measures; without the metadata the server answers Unauthenticated,
// not ready.
func TestGRPCMethodSchemaAndMetadata(t *testing.T) {
	bin := testservers.Build(t)
	args := []string{"-mode", "grpc", "-no-reflection", "-count-service", "-require-metadata", "authorization=Bearer p"}
	tg := freeTCP(t)
	inst := start(t, bin, tg, args...)
	waitReady(t, inst, tg, prober.Health{})
	const method = "/coldstart.test.v1.Count/Last"
	schema := grpcschema.Source{Protos: []string{filepath.Join("..", "internal", "testservers", "testserver", "count.proto")}}
	auth := metadata.Pairs("authorization", "Bearer p")

	probe := func(t *testing.T, src grpcschema.Source, md metadata.MD) *prober.GRPCMethod {
		t.Helper()
		g, err := prober.NewGRPCMethod(method, []byte(`{"n": 3}`))
		if err != nil {
			t.Fatal(err)
		}
		g.Schema, g.Metadata = src, md
		return g
	}
	t.Run("no schema", func(t *testing.T) {
		err := probe(t, grpcschema.Source{}, auth).Prepare(context.Background(), tg)
		if want := "give its schema with --protoset FILE, or --proto FILE"; !errors.Is(err, prober.ErrBadProbe) || !strings.Contains(err.Error(), want) {
			t.Errorf("Prepare = %v, want ErrBadProbe saying %q", err, want)
		}
	})
	t.Run("schema and metadata", func(t *testing.T) {
		g := probe(t, schema, auth)
		if err := g.Prepare(context.Background(), tg); err != nil {
			t.Fatal(err)
		}
		fresh := freeTCP(t)
		waitReady(t, start(t, bin, fresh, args...), fresh, g)
	})
	t.Run("schema without metadata", func(t *testing.T) {
		g := probe(t, schema, nil)
		if err := g.Prepare(context.Background(), tg); err != nil {
			t.Fatal(err)
		}
		a, err := g.Check(context.Background(), tg)
		if err != nil || !a.Answered || a.Ready || a.Detail != "Unauthenticated" {
			t.Errorf("Check = %+v, %v; want answered, not ready: Unauthenticated", a, err)
		}
	})
}
