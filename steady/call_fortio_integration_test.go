//go:build integration

package steady

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coldstart-go/coldstart/internal/grpcschema"
	"github.com/coldstart-go/coldstart/internal/require"
)

// fortioPingProto is fortio's own ping.proto in the module cache, where go
// install put fortio v1.68.2's source.
func fortioPingProto(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err == nil {
		p := filepath.Join(strings.TrimSpace(string(out)), "fortio.org", "fortio@v1.68.2", "fgrpc", "ping.proto")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	require.Skipf(t, require.Fortio, "fortio v1.68.2's source (fgrpc/ping.proto) is not in the module cache: scripts/test-setup.sh installs it with go install")
	return ""
}

// TestCallFortio loads fortio's own gRPC ping service, a server coldstart
// did not write, with a request of its own message: the types by
// reflection (fortio serves it) and from a protoset compiled from fortio's
// ping.proto, over both clients, metered through --server-pid.
func TestCallFortio(t *testing.T) {
	bin := fortioBin(t)
	protoset := writeProtoset(t, fortioPingProto(t))
	grpcAddr, httpAddr := mustFreeTCP(t), mustFreeTCP(t)
	cmd := startByHand(t, grpcAddr, bin, nil, "server", "-loglevel", "warning",
		"-grpc-port", grpcAddr.Address, "-http-port", httpAddr.Address,
		"-redirect-port", "disabled", "-tcp-port", "disabled", "-udp-port", "disabled", "-data-dir", t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, schema := range []struct {
		name string
		src  grpcschema.Source
	}{{"reflection", grpcschema.Source{}}, {"protoset", grpcschema.Source{Protoset: protoset}}} {
		for _, client := range Clients {
			t.Run(schema.name+"/"+string(client), func(t *testing.T) {
				var c collect
				call := Call{Method: "/fgrpc.PingServer/Ping", Data: [][]byte{[]byte(`{"seq": 7, "payload": "hello"}`)}, Schema: schema.src}
				cfg := Config{Target: &Target{Addr: grpcAddr, PID: cmd.Process.Pid}, Client: client, Call: &call,
					Scenarios: []Scenario{Sequential, Throughput}, Concurrency: []int{4}, Warmup: 200, Calls: 2000, Rounds: 2}
				if err := Run(ctx, cfg, c.record); err != nil {
					t.Fatal(err)
				}
				checkMetered(t, &c, 2, call.Method)
				for _, r := range c.rows {
					if r.PayloadBytes != 9 || r.MetadataKeys != nil {
						t.Errorf("%s: payload %d B, metadata keys %q; want 9 B ({seq: 7, payload: hello}), none", r.Scenario, r.PayloadBytes, r.MetadataKeys)
					}
				}
			})
		}
	}
	t.Run("a method fortio does not offer", func(t *testing.T) {
		call := Call{Method: "/fgrpc.PingServer/Pong"}
		err := Run(ctx, Config{Target: &Target{Addr: grpcAddr}, Call: &call, Warmup: -1, Calls: 10, Rounds: 1}, func(Row) error { return nil })
		if want := "service fgrpc.PingServer has no method Pong (methods: Ping)"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Run = %v, want an error containing %q", err, want)
		}
	})
}
