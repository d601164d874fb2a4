package launch_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coldstart-go/coldstart/budget"
	"github.com/coldstart-go/coldstart/internal/runas"
	"github.com/coldstart-go/coldstart/internal/testservers"
	"github.com/coldstart-go/coldstart/launch"
	"github.com/coldstart-go/coldstart/prober"
)

// status reads the named lines of /proc/PID/status ("Uid", "Gid",
// "Groups"), fields joined by spaces.
func status(t *testing.T, pid int) map[string]string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok {
			m[k] = strings.Join(strings.Fields(v), " ")
		}
	}
	return m
}

// TestAsUser starts the multi-mode test server with coldstart's default
// user, over TCP and a Unix socket, inside a CPU-set and CPU-quota budget:
// the server's real, effective, saved and filesystem uids and gids are
// 65532 (from /proc/PID/status), it has no supplementary groups, it sits in
// the budget's cgroup (placed by the root parent), it answers, and -v shows
// the user and no secret.
func TestAsUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("dropping to another user needs root (CI runs as root)")
	}
	u, err := runas.Parse("")
	if err != nil {
		t.Fatal(err)
	}
	ts := testservers.Build(t) // in a directory only root enters: AsUser stages a copy
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) {
			stage := runas.NewStage(u)
			defer stage.Close()
			l := launch.AsUser{Stage: stage}
			var target prober.Target
			args := []string{"-mode", "grpc"}
			if network == "tcp" {
				if target, err = prober.FreeTCP(); err != nil {
					t.Fatal(err)
				}
			} else {
				dir, err := os.MkdirTemp("", "cs-")
				if err != nil {
					t.Fatal(err)
				}
				defer os.RemoveAll(dir)
				target = prober.Target{Network: "unix", Address: prober.SocketPath(dir)}
				args = append(args, "-socket", target.Address)
			}
			b := budget.Budget{CPUs: []int{0}, Cores: 0.5}
			if err := b.Check(); err != nil {
				t.Logf("budget %s unavailable (%v): CPU set only", b, err)
				b = budget.Budget{CPUs: []int{0}}
			}
			var log bytes.Buffer
			ctx := context.Background()
			inst, err := l.Launch(ctx, launch.Spec{
				Arm: "ts", Path: ts, Args: args, Target: target, Budget: b, ID: budget.NewID(), Log: &log,
				Env: []string{"COLDSTART_NOTE=kept", "API_TOKEN=hunter2-s3cret"},
			})
			if err != nil {
				t.Fatal(err)
			}
			defer inst.Stop(ctx)
			if _, err := prober.WaitReady(ctx, inst, target, prober.Health{}, prober.WaitOptions{Timeout: 20 * time.Second}); err != nil {
				t.Fatalf("WaitReady: %v\n-v output:\n%s", err, log.String())
			}
			st := status(t, inst.PID())
			want := map[string]string{"Uid": "65532 65532 65532 65532", "Gid": "65532 65532 65532 65532", "Groups": ""}
			for k, v := range want {
				if st[k] != v {
					t.Errorf("/proc/%d/status %s: %q, want %q", inst.PID(), k, st[k], v)
				}
			}
			t.Logf("server pid %d: Uid %s, Gid %s, Cpus_allowed_list %s", inst.PID(), st["Uid"], st["Gid"], st["Cpus_allowed_list"])
			if st["Cpus_allowed_list"] != "0" {
				t.Errorf("Cpus_allowed_list = %q, want 0 (the budget's CPU set)", st["Cpus_allowed_list"])
			}
			if b.Cores > 0 {
				cg, _ := os.ReadFile("/proc/" + strconv.Itoa(inst.PID()) + "/cgroup")
				if !strings.Contains(string(cg), "coldstart") {
					t.Errorf("server not in its budget's cgroup:\n%s", cg)
				}
			}
			out := log.String()
			for _, w := range []string{"as uid:gid 65532:65532", "API_TOKEN=<redacted>", "COLDSTART_NOTE=kept"} {
				if !strings.Contains(out, w) {
					t.Errorf("-v output lacks %q:\n%s", w, out)
				}
			}
			if strings.Contains(out, "s3cret") {
				t.Errorf("-v output shows the secret:\n%s", out)
			}
			if network == "unix" {
				fi, err := os.Stat(filepath.Dir(target.Address))
				if err != nil {
					t.Fatal(err)
				}
				if fi.Mode().Perm()&0o077 != 0 {
					t.Errorf("socket dir mode %v: handed over, it must still be closed to others", fi.Mode().Perm())
				}
			}
		})
	}
}

// TestPreboundAsUser: the prebound arm drops to the --run-as user like
// every process arm (the socket is bound by root and inherited, so the user
// needs no access to its address).
func TestPreboundAsUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("dropping to another user needs root (CI runs as root)")
	}
	u, err := runas.Parse("")
	if err != nil {
		t.Fatal(err)
	}
	stage := runas.NewStage(u)
	defer stage.Close()
	bin := testservers.BuildPackage(t, testservers.Echo)
	target, err := prober.FreeTCP()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	inst, err := launch.Prebound{Stage: stage}.Launch(ctx, launch.Spec{Arm: "prebound", Path: bin, Target: target})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Stop(ctx)
	if _, err := prober.WaitReady(ctx, inst, target, prober.Health{}, prober.WaitOptions{Timeout: 20 * time.Second}); err != nil {
		t.Fatalf("WaitReady: %v", err)
	}
	st := status(t, inst.PID())
	if st["Uid"] != "65532 65532 65532 65532" || st["Gid"] != "65532 65532 65532 65532" {
		t.Errorf("prebound server runs as Uid %q Gid %q, want 65532 (the --run-as default)", st["Uid"], st["Gid"])
	}
}
