package steady

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bufbuild/protocompile"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/coldstart-go/coldstart/internal/grpcschema"
	"github.com/coldstart-go/coldstart/internal/testservers"
	"github.com/coldstart-go/coldstart/prober"
)

// countProto is the testserver's server-streaming Count service.
var countProto = filepath.Join("..", "internal", "testservers", "testserver", "count.proto")

// writeProtoset compiles file (with its imports) into a FileDescriptorSet
// file, as protoc --descriptor_set_out --include_imports would write it.
func writeProtoset(t *testing.T, file string) string {
	t.Helper()
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{ImportPaths: []string{filepath.Dir(file)}})}
	files, err := c.Compile(context.Background(), filepath.Base(file))
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
	p := filepath.Join(t.TempDir(), strings.TrimSuffix(filepath.Base(file), ".proto")+".protoset")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// startTestserver starts the testserver by hand on a free port with args
// (grpc mode) and returns its address and process.
func startTestserver(t *testing.T, args ...string) (prober.Target, *exec.Cmd) {
	t.Helper()
	a, err := prober.FreeTCP()
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(a.Address)
	cmd := startByHand(t, a, testservers.Build(t), nil, append([]string{"-mode", "grpc", "-listen-port", port}, args...)...)
	return a, cmd
}

// TestCall loads the user's own methods of a real server started by hand
// (the testserver, which checks the metadata server-side: every call but
// the health check's, reflection included, needs authorization=Bearer
// t0k): the sample's unary Echo and the server-streaming Count, their types
// by reflection, from a .proto and from a protoset, over both clients.
// Every row records the method and the metadata's key, never its value;
// calls refused for want of metadata count as errors by status code.
func TestCall(t *testing.T) {
	sock, ts := startTestserver(t, "-count-service", "-require-metadata", "authorization=Bearer t0k")
	auth := metadata.Pairs("authorization", "Bearer t0k")
	dataFile := filepath.Join(t.TempDir(), "count.jsonl")
	os.WriteFile(dataFile, []byte("{\"n\": 3, \"payload\": \"aGk=\"}\n\n{\"n\": 1}\n"), 0o644)
	protoset := writeProtoset(t, countProto)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	for _, tt := range []struct {
		name     string
		call     Call
		bytes    int              // mean request size
		keys     []string         // metadata keys recorded
		errCodes map[string]int64 // per window of 300 calls (nil = no error)
	}{
		{"Echo by reflection with metadata", Call{Method: "/coldstart.echo.v1.Echo/Echo", Data: [][]byte{[]byte(`{"payload": "aGVsbG8="}`)}, Metadata: auth},
			7, []string{"authorization"}, nil},
		{"Echo without its metadata", Call{Method: "/coldstart.echo.v1.Echo/Echo", Schema: grpcschema.Source{Protos: []string{filepath.Join("..", "internal", "echo", "echopb", "echo.proto")}}},
			0, nil, map[string]int64{"Unauthenticated": 300}},
		{"Count by reflection, a rotating set", Call{Method: "/coldstart.test.v1.Count/Count", DataFile: dataFile, Metadata: auth},
			4, []string{"authorization"}, nil},
		{"Count from a .proto", Call{Method: "/coldstart.test.v1.Count/Count", Data: [][]byte{[]byte(`{"n": 2}`)}, Metadata: auth,
			Schema: grpcschema.Source{Protos: []string{countProto}, ImportPaths: []string{filepath.Dir(countProto)}}},
			2, []string{"authorization"}, nil},
		{"Count from a protoset, failing after its messages", Call{Method: "/coldstart.test.v1.Count/Count", Data: [][]byte{[]byte(`{"n": 2, "failCode": 5}`)}, Metadata: auth,
			Schema: grpcschema.Source{Protoset: protoset}},
			4, []string{"authorization"}, map[string]int64{"NotFound": 300}},
	} {
		for _, client := range Clients {
			t.Run(tt.name+"/"+string(client), func(t *testing.T) {
				var c collect
				call := tt.call
				cfg := Config{Target: &Target{Addr: sock, PID: ts.Process.Pid}, Client: client, Call: &call,
					Scenarios: []Scenario{Sequential, Throughput}, Concurrency: []int{4}, Warmup: 50, Calls: 300, Rounds: 1}
				if err := Run(ctx, cfg, c.record); err != nil {
					t.Fatal(err)
				}
				if len(c.rows) != 2 {
					t.Fatalf("%d rows, want 2 (sequential, throughput)", len(c.rows))
				}
				for _, r := range append(c.rows, c.windows...) {
					if r.Method != tt.call.Method || r.PayloadBytes != tt.bytes || !slices.Equal(r.MetadataKeys, tt.keys) || r.Calls != 300 {
						t.Errorf("%s: method %q, payload %d B, metadata keys %q, %d calls; want %q, %d B, %q, 300 calls",
							r.Scenario, r.Method, r.PayloadBytes, r.MetadataKeys, r.Calls, tt.call.Method, tt.bytes, tt.keys)
					}
					if diff := cmp.Diff(tt.errCodes, r.ErrorCodes); diff != "" || r.Errors != int64(len(tt.errCodes))*300 {
						t.Errorf("%s: %d errors (%s), by code (-want +got):\n%s", r.Scenario, r.Errors, r.FirstError, diff)
					}
					if r.ServerCPUUsPerCall == nil || *r.ServerCPUUsPerCall <= 0 {
						t.Errorf("%s: server CPU %v µs/call, want it known (--server-pid)", r.Scenario, r.ServerCPUUsPerCall)
					}
				}
			})
		}
	}
}

// TestCallErrors: each bad Call fails before any load, naming the setting
// at fault (an OptionError) and what would fit.
func TestCallErrors(t *testing.T) {
	addr, _ := startTestserver(t, "-count-service")
	noRefl, _ := startTestserver(t, "-no-reflection")
	garbage := filepath.Join(t.TempDir(), "bad.protoset")
	os.WriteFile(garbage, []byte("\xff\xff not a protoset"), 0o644)
	badLines := filepath.Join(t.TempDir(), "reqs.jsonl")
	os.WriteFile(badLines, []byte("{\"n\": 1}\n{\"m\": 2}\n"), 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, tt := range []struct {
		name string
		at   prober.Target
		call Call
		cfg  func(*Config)
		want string
	}{
		{"a method the server does not offer", addr, Call{Method: "/fgrpc.PingServer/Ping"}, nil,
			"Call.Method: the server offers no service fgrpc.PingServer for /fgrpc.PingServer/Ping (services: coldstart.echo.v1.Echo, coldstart.test.v1.Count, grpc.health.v1.Health"},
		{"a method its service lacks", addr, Call{Method: "/coldstart.test.v1.Count/Sum"}, nil,
			"Call.Method: the server: service coldstart.test.v1.Count has no method Sum (methods: Count, Last)"},
		{"data that does not fit", addr, Call{Method: "/coldstart.test.v1.Count/Count", Data: [][]byte{[]byte(`{"count": 3}`)}}, nil,
			`Call.Data: does not fit coldstart.test.v1.CountRequest (fields: n, payload, failCode, delay): (line 1:2): unknown field "count"`},
		{"a data file line that does not fit", addr, Call{Method: "/coldstart.test.v1.Count/Count", DataFile: badLines}, nil,
			"Call.DataFile: " + badLines + ` line 2: does not fit coldstart.test.v1.CountRequest`},
		{"a protoset that does not parse", addr, Call{Method: "/coldstart.test.v1.Count/Count", Schema: grpcschema.Source{Protoset: garbage}}, nil,
			"Call.Schema.Protoset: protoset " + garbage + ": not a FileDescriptorSet"},
		{"no reflection and no schema", noRefl, Call{Method: "/coldstart.test.v1.Count/Count"}, nil,
			"give its schema with --protoset FILE, or --proto FILE"},
		{"a bidirectional method", addr, Call{Method: "/coldstart.echo.v1.Echo/EchoStream"}, nil,
			"Call.Method: /coldstart.echo.v1.Echo/EchoStream: a client-streaming method; steady loads unary and server-streaming methods"},
		{"the stream scenario", addr, Call{Method: "/coldstart.echo.v1.Echo/Echo"}, func(c *Config) { c.Scenarios = []Scenario{Stream} },
			"Scenarios: stream is coldstart's EchoStream ping-pong"},
		{"over HTTP", addr, Call{Method: "/coldstart.echo.v1.Echo/Echo"}, func(c *Config) { c.Protocols = []Protocol{HTTP1} },
			"Call.Method: a gRPC method, called over grpc only; protocol http1 loads the HTTP path instead"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			call := tt.call
			cfg := Config{Target: &Target{Addr: tt.at}, Call: &call, Warmup: -1, Calls: 10, Rounds: 1}
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			err := Run(ctx, cfg, func(Row) error {
				t.Error("a row was recorded")
				return nil
			})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Run = %v\nwant an error containing %q", err, tt.want)
			}
		})
	}
}
