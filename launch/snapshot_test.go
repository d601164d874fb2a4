package launch_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coldstart-go/coldstart/internal/require"
	"github.com/coldstart-go/coldstart/internal/testservers"
	"github.com/coldstart-go/coldstart/launch"
	"github.com/coldstart-go/coldstart/prober"
)

// needCRIU skips when the snapshot arm cannot run here, saying why (CI runs
// scripts/test-setup.sh, which builds criu, as root, so it runs there).
func needCRIU(t *testing.T) *launch.Snapshot {
	t.Helper()
	if os.Geteuid() != 0 {
		require.Skipf(t, require.Root, "the snapshot arm needs root (criu dump/restore, tmpfs mounts)")
	}
	sn := &launch.Snapshot{WorkDir: t.TempDir(), Wait: waitOpts}
	if err := sn.Check(context.Background()); err != nil {
		require.Skipf(t, require.CRIU, "criu: %v", err)
	}
	return sn
}

// mounts counts this machine's tmpfs mounts under dir.
func mounts(t *testing.T, dir string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), " "+dir+"/")
}

// running counts processes whose executable is bin.
func running(t *testing.T, bin string) int {
	t.Helper()
	ents, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range ents {
		if exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err == nil && exe == bin {
			n++
		}
	}
	return n
}

// The sample server, checkpointed once, restores again and again (and
// side by side); afterwards no restored process, mount or directory is left.
func TestSnapshotRestoresSampleServer(t *testing.T) {
	sn := needCRIU(t)
	sn.Warmup = 5
	bin := testservers.BuildPackage(t, testservers.Echo)
	tg := freeTCP(t)
	before := running(t, bin)
	ctx := context.Background()
	ck, err := sn.Checkpoint(ctx, launch.Spec{Arm: "snapshot", Path: bin, Args: []string{"--addr", tg.Address}, Target: tg})
	if err != nil {
		t.Fatal(err)
	}
	if got := mounts(t, sn.WorkDir); got != 1 {
		t.Errorf("tmpfs mounts under the work dir after Checkpoint = %d, want 1", got)
	}
	if ck.Bytes <= 0 || ck.Stats["memory_pages_written"] <= 0 || ck.Warmup != 5 {
		t.Errorf("checkpoint = %d bytes, stats %v, warm-up %d; want bytes, pages written and 5 warm-up calls", ck.Bytes, ck.Stats, ck.Warmup)
	}
	if ck.Target != tg {
		t.Errorf("checkpoint target = %v, want %v", ck.Target, tg)
	}
	// The dumped server is gone (criu dump ends it): its address is free.
	if err := prober.WaitFree(ctx, tg, 5*time.Second); err != nil {
		t.Fatalf("after the dump: %v", err)
	}
	var insts []launch.Instance
	for i := 0; i < 3; i++ {
		inst, err := ck.Launch(ctx, launch.Spec{})
		if err != nil {
			t.Fatalf("restore %d: %v", i, err)
		}
		insts = append(insts, inst)
		r := waitReady(t, inst, tg, prober.Health{})
		s := prober.Sample{Phases: append(inst.Phases(), r.Phases...)}
		restoredAt, ok := s.Phase(launch.PhaseProcessRestored)
		if !ok || restoredAt > ms(r.FirstRPC) {
			t.Errorf("restore %d: phases %+v: want process_restored before first_rpc", i, s.Phases)
		}
		st := inst.(interface{ Stats() map[string]float64 }).Stats()
		if st["pages_restored"] <= 0 {
			t.Errorf("restore %d: criu stats %v, want pages_restored", i, st)
		}
		if inst.PID() <= 0 || !strings.HasSuffix(readLink(t, inst.PID()), bin) {
			t.Errorf("restore %d: pid %d is not %s", i, inst.PID(), bin)
		}
		// Restored into a cgroup of its own, though the budget needs none:
		// Stop kills whatever the restored tree has become.
		if c := inst.(interface{ Containment() string }).Containment(); !strings.HasPrefix(c, "cgroup-") {
			t.Errorf("restore %d: containment %q, want a cgroup", i, c)
		}
		if cg, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(inst.PID()), "cgroup")); err != nil || !strings.Contains(string(cg), "/coldstart/") {
			t.Errorf("restore %d: pid %d in cgroups %q (%v), want one under /coldstart", i, inst.PID(), cg, err)
		}
	}
	// Three restored copies run side by side (each pid 1 of its own
	// namespace).
	if got := running(t, bin) - before; got != 3 {
		t.Errorf("restored servers running = %d, want 3", got)
	}
	for _, inst := range insts {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		if err := inst.Stop(sctx); err != nil {
			t.Error(err)
		}
		cancel()
		if !errors.Is(inst.Err(), launch.ErrExited) {
			t.Errorf("Err after Stop = %v, want ErrExited", inst.Err())
		}
	}
	if err := ck.Close(); err != nil {
		t.Fatal(err)
	}
	if got := running(t, bin) - before; got != 0 {
		t.Errorf("restored servers left after Stop = %d, want 0", got)
	}
	if got := mounts(t, sn.WorkDir); got != 0 {
		t.Errorf("tmpfs mounts left after Close = %d, want 0", got)
	}
	if ents, _ := os.ReadDir(sn.WorkDir); len(ents) != 0 {
		t.Errorf("left in the work dir: %v", ents)
	}
}

func readLink(t *testing.T, pid int) string {
	t.Helper()
	l, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "exe"))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// A server criu cannot dump (a Multipath TCP listener) gets
// ErrNotDumpable with criu's own reason; nothing is left mounted.
func TestSnapshotUndumpableServer(t *testing.T) {
	sn := needCRIU(t)
	bin := testservers.Build(t)
	tg := freeTCP(t)
	_, err := sn.Checkpoint(context.Background(), launch.Spec{Arm: "mptcp", Path: bin, Args: []string{"-mptcp"}, Target: tg})
	if !errors.Is(err, launch.ErrNotDumpable) {
		t.Fatalf("Checkpoint = %v, want ErrNotDumpable", err)
	}
	if !strings.Contains(err.Error(), "proto 262") {
		t.Errorf("Checkpoint error = %q, want criu's reason (Unsupported proto 262)", err)
	}
	if got := mounts(t, sn.WorkDir); got != 0 {
		t.Errorf("tmpfs mounts left = %d, want 0", got)
	}
	if got := running(t, bin); got != 0 {
		t.Errorf("servers left = %d, want 0", got)
	}
}

// A missing criu is named, with what to do.
func TestSnapshotNoCRIU(t *testing.T) {
	sn := &launch.Snapshot{CRIU: filepath.Join(t.TempDir(), "criu")}
	err := sn.Check(context.Background())
	if !errors.Is(err, launch.ErrNoCRIU) || !strings.Contains(err.Error(), "setup.sh") {
		t.Fatalf("Check = %v, want ErrNoCRIU saying how to install it", err)
	}
	// A criu that fails `criu check`: the error quotes it.
	fake := filepath.Join(t.TempDir(), "criu")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho 'Error (criu/proc_parse.c:123): Unknown VMA [vvar_vclock]' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	err = (&launch.Snapshot{CRIU: fake}).Check(context.Background())
	if !errors.Is(err, launch.ErrNoCRIU) || !strings.Contains(err.Error(), "Unknown VMA [vvar_vclock]") {
		t.Fatalf("Check with a failing criu = %v, want ErrNoCRIU quoting its output", err)
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// The JVM server (examples/jvm, the JDK alone), compiled here, is
// checkpointed after warm-up calls and restored, probed over HTTP as a
// bring-your-own server.
func TestSnapshotJVM(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles and starts a JVM (seconds)")
	}
	sn := needCRIU(t)
	javac, err1 := exec.LookPath("javac")
	java, err2 := exec.LookPath("java")
	if err1 != nil || err2 != nil {
		require.Skipf(t, require.JDK, "no JDK (sudo scripts/test-setup.sh installs default-jdk-headless)")
	}
	classes := t.TempDir()
	if out, err := exec.Command(javac, "-d", classes, "../examples/jvm/Echo.java").CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	h, err := prober.NewHTTP("http:///healthz")
	if err != nil {
		t.Fatal(err)
	}
	sn.Checker, sn.Warmup = h, 20
	tg := freeTCP(t)
	ctx := context.Background()
	ck, err := sn.Checkpoint(ctx, launch.Spec{Arm: "jvm", Path: java, Args: []string{"-XX:-UsePerfData", "-cp", classes, "Echo"}, Target: tg})
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	inst, err := ck.Launch(ctx, launch.Spec{})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Stop(ctx)
	waitReady(t, inst, tg, h)
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := inst.Stop(sctx); err != nil {
		t.Fatal(err)
	}
	if err := prober.WaitFree(sctx, tg, 5*time.Second); err != nil {
		t.Errorf("after Stop: %v", err)
	}
}
