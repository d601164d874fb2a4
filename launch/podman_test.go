package launch_test

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coldstart-go/coldstart/budget"
	"github.com/coldstart-go/coldstart/internal/require"
	"github.com/coldstart-go/coldstart/launch"
	"github.com/coldstart-go/coldstart/prober"
)

// TestPodman starts the image arm's container with Debian's real podman,
// under a quota and a memory limit, and checks that podman ran it with
// them and that no container is left once it stopped: the engine path
// the fake engine's tests cannot show works against a real engine.
func TestPodman(t *testing.T) {
	if _, err := exec.LookPath("podman"); err != nil {
		require.Skipf(t, require.Podman, "podman not installed (sudo scripts/test-setup.sh installs it)")
	}
	if os.Geteuid() != 0 {
		require.Skipf(t, require.Root, "the engine runs as root here")
	}
	ctx := context.Background()
	e := &launch.Engine{Name: "podman", Grace: time.Second}
	if err := e.Check(ctx); err != nil {
		t.Fatalf("podman is installed but does not work: %v", err)
	}
	img := echoImage(t)
	target, err := prober.FreeTCP()
	if err != nil {
		t.Fatal(err)
	}
	id := budget.NewID()
	b := budget.Budget{Cores: 0.5, MemBytes: 64 << 20}
	inst, err := e.Launch(ctx, launch.Spec{Arm: "image", Path: img.Tarball, Target: target, ID: id, Budget: b})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			inst.Stop(ctx)
		}
	}()
	if _, err := prober.WaitReady(ctx, inst, target, prober.Health{}, prober.WaitOptions{Timeout: 30 * time.Second}); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("podman", "inspect", "--format", "{{.HostConfig.NanoCpus}} {{.HostConfig.Memory}}", id).Output()
	if err != nil {
		t.Fatalf("podman inspect %s: %v", id, err)
	}
	if got, want := strings.TrimSpace(string(out)), "500000000 "+strconv.Itoa(64<<20); got != want {
		t.Errorf("podman inspect %s: NanoCpus and Memory %q, want %q", id, got, want)
	}
	stopped = true
	if err := inst.Stop(ctx); err != nil {
		t.Errorf("Stop: %v", err)
	}
	out, err = exec.Command("podman", "ps", "--all", "--format", "{{.Names}}").Output()
	if err != nil {
		t.Fatalf("podman ps: %v", err)
	}
	if strings.Contains(string(out), id) {
		t.Errorf("podman ps --all still lists %s", id)
		exec.Command("podman", "rm", "--force", id).Run()
	}
}
