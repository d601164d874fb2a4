package launch_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coldstart-go/coldstart/budget"
	"github.com/coldstart-go/coldstart/builds"
	"github.com/coldstart-go/coldstart/internal/procfs"
	"github.com/coldstart-go/coldstart/launch"
	"github.com/coldstart-go/coldstart/prober"

	"github.com/coldstart-go/coldstart/internal/require"
)

// echoImage builds examples/echo statically (the static arm's flags) and
// wraps it with the image arm, in a temp dir of t.
func echoImage(t *testing.T) builds.ImageResult {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "echo")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "./examples/echo")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build echo: %v\n%s", err, out)
	}
	r, err := builds.BuildImage(context.Background(), builds.Artifact{Arm: "static", Path: bin}, builds.ImageOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func needRunc(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("runc"); err != nil {
		require.Skipf(t, require.Runc, "runc not installed (sudo scripts/setup.sh installs it)")
	}
	if os.Geteuid() != 0 {
		require.Skipf(t, require.Root, "runc containers need root")
	}
}

// runcIDs is what `runc list` shows.
func runcIDs(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("runc", "list", "-q").Output()
	if err != nil {
		t.Fatalf("runc list: %v", err)
	}
	return strings.Fields(string(out))
}

// checkGone fails t when container id is still listed or its bundle remains.
func checkGone(t *testing.T, id, workDir string) {
	t.Helper()
	for _, got := range runcIDs(t) {
		if got == id {
			t.Errorf("runc list still shows %s", id)
			exec.Command("runc", "delete", "--force", id).Run()
		}
	}
	if _, err := os.Stat(filepath.Join(workDir, id)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("bundle %s remains (stat: %v)", filepath.Join(workDir, id), err)
	}
}

func newRunc(t *testing.T) (*launch.Runc, string) {
	t.Helper()
	work := t.TempDir()
	r := &launch.Runc{WorkDir: work, Grace: time.Second}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Error(err)
		}
	})
	return r, work
}

func runServesHealth(t *testing.T, img builds.ImageResult) {
	r, work := newRunc(t)
	ctx := context.Background()
	// The layout, then the tarball; the second and third runs reuse the
	// unpacked rootfs.
	for i, path := range []string{img.Layout, img.Layout, img.Tarball} {
		target, err := prober.FreeTCP()
		if err != nil {
			t.Fatal(err)
		}
		id := budget.NewID()
		inst, err := r.Launch(ctx, launch.Spec{Arm: "image", Path: path, Target: target, ID: id})
		if err != nil {
			t.Fatal(err)
		}
		rd, err := prober.WaitReady(ctx, inst, target, prober.Health{}, prober.WaitOptions{Timeout: 20 * time.Second})
		if err != nil {
			inst.Stop(ctx)
			t.Fatalf("WaitReady: %v", err)
		}
		phases := append(inst.Phases(), rd.Phases...)
		t.Logf("run %d (%s): %v", i, filepath.Base(path), phases)
		var names []string
		last := 0.0
		for _, p := range phases {
			names = append(names, p.Name)
			if p.Ms < last {
				t.Errorf("phase %s at %.2f ms, before the one before it (%.2f ms)", p.Name, p.Ms, last)
			}
			last = p.Ms
		}
		if got := strings.Join(names, ","); got != "bundle_ready,created,process_started,accepting,first_answer,first_rpc" {
			t.Errorf("phases = %s", got)
		}
		// PID is the server itself: /proc figures are its own.
		cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(inst.PID()) + "/cmdline")
		if err != nil || !strings.HasPrefix(string(cmdline), "/server\x00") {
			t.Errorf("/proc/%d/cmdline = %q (%v), want /server", inst.PID(), cmdline, err)
		}
		// Not in our process group: a Ctrl-C at the terminal reaches
		// coldstart, which stops the container in order.
		if stat, err := os.ReadFile("/proc/" + strconv.Itoa(inst.PID()) + "/stat"); err == nil {
			f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
			if len(f) > 2 && f[2] == strconv.Itoa(syscall.Getpgrp()) {
				t.Errorf("container init %d is in our process group %s", inst.PID(), f[2])
			}
		}
		if _, err := procfs.Host.Mem(inst.PID()); err != nil {
			t.Errorf("Mem(%d): %v", inst.PID(), err)
		}
		u, err := inst.Usage()
		if err != nil || u.CPUSeconds <= 0 || u.MemPeakBytes <= 0 {
			t.Errorf("Usage() = %+v, %v; want CPU and memory from the container's cgroup", u, err)
		}
		stop := time.Now()
		if err := inst.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
		t.Logf("run %d: stop and delete took %v", i, time.Since(stop).Round(time.Millisecond))
		select {
		case <-inst.Done():
		default:
			t.Error("Done not closed after Stop")
		}
		checkGone(t, id, work)
		if err := prober.WaitFree(ctx, target, 5*time.Second); err != nil {
			t.Error(err)
		}
	}
	fs, err := r.Prepare(ctx, img.Layout)
	if err != nil {
		t.Fatal(err)
	}
	if fs.Digest != img.Artifact.Digest {
		t.Errorf("rootfs digest = %s, want %s", fs.Digest, img.Artifact.Digest)
	}
	t.Logf("unpack: %.1f ms, %d bytes", fs.UnpackMs, fs.Bytes)
}

func runBudget(t *testing.T, img builds.ImageResult) {
	r, work := newRunc(t)
	ctx := context.Background()
	target, err := prober.FreeTCP()
	if err != nil {
		t.Fatal(err)
	}
	id := budget.NewID()
	b := budget.Budget{CPUs: []int{0}, Cores: 0.5, MemBytes: 64 << 20}
	inst, err := r.Launch(ctx, launch.Spec{Arm: "image", Path: img.Layout, Target: target, ID: id, Budget: b})
	if err != nil {
		t.Fatal(err)
	}
	defer checkGone(t, id, work)
	defer inst.Stop(ctx)
	if _, err := prober.WaitReady(ctx, inst, target, prober.Health{}, prober.WaitOptions{Timeout: 20 * time.Second}); err != nil {
		t.Fatal(err)
	}
	// The container's own cgroup files say what runc wrote.
	paths := map[string]string{}
	cg, err := os.ReadFile("/proc/" + strconv.Itoa(inst.PID()) + "/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(cg), "\n") {
		f := strings.SplitN(l, ":", 3)
		if len(f) == 3 {
			for _, c := range strings.Split(f[1], ",") {
				paths[c] = f[2]
			}
		}
	}
	if !strings.HasSuffix(paths["memory"], id) {
		t.Skipf("container not in a v1 memory cgroup named for it (%q): not cgroup v1", paths["memory"])
	}
	for _, tt := range []struct{ ctrl, file, want string }{
		{"cpu", "cpu.cfs_quota_us", "50000"},
		{"cpu", "cpu.cfs_period_us", "100000"},
		{"cpuset", "cpuset.cpus", "0"},
		{"memory", "memory.limit_in_bytes", strconv.Itoa(64 << 20)},
	} {
		p := filepath.Join("/sys/fs/cgroup", tt.ctrl, paths[tt.ctrl], tt.file)
		got, err := os.ReadFile(p)
		if err != nil || strings.TrimSpace(string(got)) != tt.want {
			t.Errorf("%s = %q (%v), want %s", p, got, err, tt.want)
		}
	}
}

func runServerCrash(t *testing.T, img builds.ImageResult) {
	r, work := newRunc(t)
	ctx := context.Background()
	target, err := prober.FreeTCP()
	if err != nil {
		t.Fatal(err)
	}
	id := budget.NewID()
	// An address it cannot listen on: the server exits at once.
	inst, err := r.Launch(ctx, launch.Spec{Arm: "image", Path: img.Layout, Target: target, ID: id, Args: []string{"--addr", "256.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = prober.WaitReady(ctx, inst, target, prober.Health{}, prober.WaitOptions{Timeout: 20 * time.Second})
	if !errors.Is(err, launch.ErrExited) || !strings.Contains(err.Error(), "stderr:") || !strings.Contains(err.Error(), "256.0.0.1") {
		t.Errorf("WaitReady = %v, want ErrExited with the server's stderr", err)
	}
	// It cleans up after itself once init has exited, and Stop is still
	// fine to call.
	if err := inst.Stop(ctx); err != nil {
		t.Errorf("Stop: %v", err)
	}
	checkGone(t, id, work)
}

func runStopCancelled(t *testing.T, img builds.ImageResult) {
	r, work := newRunc(t)
	target, err := prober.FreeTCP()
	if err != nil {
		t.Fatal(err)
	}
	id := budget.NewID()
	ctx, cancel := context.WithCancel(context.Background())
	inst, err := r.Launch(ctx, launch.Spec{Arm: "image", Path: img.Layout, Target: target, ID: id})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prober.WaitReady(ctx, inst, target, prober.Health{}, prober.WaitOptions{Timeout: 20 * time.Second}); err != nil {
		inst.Stop(ctx)
		t.Fatal(err)
	}
	cancel() // Ctrl-C: Stop kills at once, and still deletes everything
	if err := inst.Stop(ctx); err != nil {
		t.Errorf("Stop: %v", err)
	}
	checkGone(t, id, work)

	// A launch with a cancelled context leaves nothing either.
	id2 := budget.NewID()
	if _, err := r.Launch(ctx, launch.Spec{Arm: "image", Path: img.Layout, Target: target, ID: id2}); !errors.Is(err, context.Canceled) {
		t.Errorf("Launch(cancelled) = %v, want context.Canceled", err)
	}
	checkGone(t, id2, work)
}

func runUnixSocket(t *testing.T, img builds.ImageResult) {
	r, work := newRunc(t)
	ctx := context.Background()
	// A 0700 root-owned dir, as campaign makes them: the launcher hands it
	// to the image's user (65532), who creates the socket.
	dir, err := os.MkdirTemp("", "coldstart-sock-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "echo.sock")
	target := prober.Target{Network: "unix", Address: sock}
	id := budget.NewID()
	inst, err := r.Launch(ctx, launch.Spec{Arm: "image", Path: img.Layout, Target: target, ID: id, Args: []string{"--unix", sock}})
	if err != nil {
		t.Fatal(err)
	}
	defer checkGone(t, id, work)
	defer inst.Stop(ctx)
	if _, err := prober.WaitReady(ctx, inst, target, prober.Health{}, prober.WaitOptions{Timeout: 20 * time.Second}); err != nil {
		t.Fatal(err)
	}
}

// TestRunc runs the image arm's container in several ways; the subtests
// share one image (building it takes ~2 s).
func TestRunc(t *testing.T) {
	needRunc(t)
	img := echoImage(t)
	t.Run("ServesHealth", func(t *testing.T) { runServesHealth(t, img) })
	t.Run("Budget", func(t *testing.T) { runBudget(t, img) })
	t.Run("ServerCrash", func(t *testing.T) { runServerCrash(t, img) })
	t.Run("StopCancelled", func(t *testing.T) { runStopCancelled(t, img) })
	t.Run("UnixSocket", func(t *testing.T) { runUnixSocket(t, img) })
}

func TestRuncBadInput(t *testing.T) {
	notImage := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(notImage, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	emptyPath := t.TempDir()
	tests := []struct {
		name  string
		bin   string // Runc.Binary
		path  string
		noBin bool // PATH without runc
		want  []string
		is    error
	}{
		{name: "runc binary missing", bin: "/nonexistent/runc", path: notImage,
			want: []string{"/nonexistent/runc", "apt-get install runc", "scripts/setup.sh"}, is: launch.ErrNoRuntime},
		{name: "runc not in PATH", path: notImage, noBin: true,
			want: []string{"runc", "apt-get install runc"}, is: launch.ErrNoRuntime},
		{name: "not an image", path: notImage, want: []string{notImage, "not an image (want an OCI image layout"}},
		{name: "dir without index.json", path: emptyPath, want: []string{emptyPath, "index.json"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.noBin {
				t.Setenv("PATH", t.TempDir())
			} else if tt.is == nil {
				needRunc(t)
			}
			r := &launch.Runc{Binary: tt.bin, WorkDir: t.TempDir()}
			defer r.Close()
			_, err := r.Launch(context.Background(), launch.Spec{Arm: "image", Path: tt.path})
			if err == nil {
				t.Fatal("Launch succeeded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Launch = %v, want it to mention %q", err, w)
				}
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("Launch = %v, want errors.Is %v", err, tt.is)
			}
			if tt.is != nil && !errors.Is(r.Check(), tt.is) {
				t.Errorf("Check() = %v, want %v", r.Check(), tt.is)
			}
		})
	}
}

func TestEngineUnavailable(t *testing.T) {
	if _, err := launch.NewEngine("lxc"); err == nil || !strings.Contains(err.Error(), "docker or podman") {
		t.Errorf("NewEngine(lxc) = %v, want the accepted names", err)
	}
	t.Run("no binary", func(t *testing.T) {
		e := &launch.Engine{Name: "podman", Binary: "/nonexistent/podman"}
		_, err := e.Launch(context.Background(), launch.Spec{Arm: "image", Path: "unused"})
		if !errors.Is(err, launch.ErrNoRuntime) || !strings.Contains(err.Error(), "/nonexistent/podman not found") || !strings.Contains(err.Error(), "runc") {
			t.Errorf("Launch = %v, want ErrNoRuntime naming the binary and the runc alternative", err)
		}
	})
	t.Run("docker without daemon", func(t *testing.T) {
		if _, err := exec.LookPath("docker"); err != nil {
			t.Skip("docker CLI not installed")
		}
		if exec.Command("docker", "info").Run() == nil {
			t.Skip("a docker daemon answers here")
		}
		e, err := launch.NewEngine("docker")
		if err != nil {
			t.Fatal(err)
		}
		err = e.Check(context.Background())
		t.Logf("Check: %v", err)
		for _, want := range []string{"docker", "no working engine", "`docker info` failed", "start its daemon", "runc runtime"} {
			if !errors.Is(err, launch.ErrNoRuntime) || !strings.Contains(err.Error(), want) {
				t.Errorf("Check() = %v, want ErrNoRuntime mentioning %q", err, want)
			}
		}
		if _, err := e.Launch(context.Background(), launch.Spec{Arm: "image", Path: "unused"}); !errors.Is(err, launch.ErrNoRuntime) {
			t.Errorf("Launch = %v, want ErrNoRuntime", err)
		}
	})
}
