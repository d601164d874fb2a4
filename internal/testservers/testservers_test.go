package testservers_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/coldstart-go/coldstart/internal/testservers"
)

func TestMain(m *testing.M) { os.Exit(testservers.Run(m)) }

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// serve starts the test server with env replacing ours entirely, so no
// stray $PORT reaches it, and stops it at the end of the test.
func serve(t *testing.T, env []string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(testservers.Build(t), args...)
	cmd.Env = env
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd
}

// serving polls grpc.health.v1 at target until SERVING.
func serving(t *testing.T, target string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		cc, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		resp, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
		cancel()
		cc.Close()
		if err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not serving: %v %v", target, resp, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The port flag has another name than --addr and needs no $PORT.
func TestListenPortWithoutPORT(t *testing.T) {
	p := freePort(t)
	serve(t, []string{}, "-listen-port", strconv.Itoa(p))
	serving(t, "passthrough:///127.0.0.1:"+strconv.Itoa(p))
}

// With no flag the server reads $PORT, and nothing else.
func TestPORTOnly(t *testing.T) {
	p := freePort(t)
	serve(t, []string{"PORT=" + strconv.Itoa(p)})
	serving(t, "passthrough:///127.0.0.1:"+strconv.Itoa(p))
}

func TestExitsWithMessage(t *testing.T) {
	for _, tt := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"exit mode", []string{"-mode", "exit", "-message", "no config", "-exit-code", "7"}, 7, "no config"},
		{"no address", nil, 1, "no address: pass -socket, -listen-port or set $PORT"},
		{"unknown mode", []string{"-mode", "ftp"}, 1, `unknown mode "ftp"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(testservers.Build(t), tt.args...)
			cmd.Env = []string{}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != tt.code || !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("testserver %q: %v, stderr %q; want exit %d and %q", tt.args, err, stderr.String(), tt.code, tt.stderr)
			}
		})
	}
}
