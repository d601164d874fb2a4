package launch_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coldstart-go/coldstart/internal/leftovers"
	"github.com/coldstart-go/coldstart/internal/procfs"
	"github.com/coldstart-go/coldstart/launch"
	"github.com/coldstart-go/coldstart/prober"
)

// fakeEngine is a docker CLI for tests where no engine daemon runs (none
// does on the machines these tests were written on): its "containers" are
// sleep processes, one file per container name in $FAKE_ENGINE_STATE
// holding the process's PID. With $FAKE_ENGINE_REQUIRE_RECORD set, `run`
// refuses a name that no coldstart state file in $COLDSTART_STATE_DIR
// lists yet: the record must come before the container.
const fakeEngine = `#!/bin/sh
state=${FAKE_ENGINE_STATE:?}
cmd=$1; shift
last() { eval "echo \${$#}"; }
case $cmd in
info) echo "fake engine"; exit 0 ;;
load) echo "Loaded image: coldstart/fake:latest"; exit 0 ;;
run)
	name=
	while [ $# -gt 0 ]; do
		case $1 in --name) name=$2; shift 2 ;; *) shift ;; esac
	done
	if [ -n "$FAKE_ENGINE_REQUIRE_RECORD" ] && ! grep -qs "\"$name\"" "$COLDSTART_STATE_DIR"/run-*.json; then
		echo "fake engine: container $name is in no state file in $COLDSTART_STATE_DIR" >&2
		exit 125
	fi
	if [ -e "$state/$name" ]; then echo "name $name in use" >&2; exit 125; fi
	sleep 600 </dev/null >/dev/null 2>&1 &
	echo $! >"$state/$name"
	echo "fake-$name"
	;;
inspect|wait|stop|rm|logs)
	name=$(last "$@")
	if ! pid=$(cat "$state/$name" 2>/dev/null); then
		echo "Error response from daemon: No such container: $name" >&2
		exit 1
	fi
	case $cmd in
	inspect) echo "$pid" ;;
	wait) while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done; echo 137 ;;
	stop) kill -TERM "$pid" 2>/dev/null; exit 0 ;;
	rm) kill -KILL "$pid" 2>/dev/null; rm -f "$state/$name"; echo "$name" ;;
	logs) exit 0 ;;
	esac
	;;
*) echo "fake engine: unknown command $cmd" >&2; exit 2 ;;
esac
`

// The child mode of this test binary (see TestMain): a coldstart run that
// launches one container through the fake engine named in engineChildEnv,
// prints "ready PID", and then stops it (engineStopEnv set) or waits to be
// killed.
const (
	engineChildEnv = "LAUNCH_TEST_ENGINE"
	engineIDEnv    = "LAUNCH_TEST_ENGINE_ID"
	engineImageEnv = "LAUNCH_TEST_ENGINE_IMAGE"
	engineStopEnv  = "LAUNCH_TEST_ENGINE_STOP"
)

func engineChild(fake string) int {
	ctx := context.Background()
	e := &launch.Engine{Name: "docker", Binary: fake}
	inst, err := e.Launch(ctx, launch.Spec{
		Arm: "image", Path: os.Getenv(engineImageEnv), ID: os.Getenv(engineIDEnv),
		Target: prober.Target{Network: "tcp", Address: "127.0.0.1:1"},
	})
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	fmt.Println("ready", inst.PID())
	if os.Getenv(engineStopEnv) != "" {
		fmt.Println("stopped", inst.Stop(ctx))
		return 0
	}
	time.Sleep(time.Minute)
	return 0
}

// fakeEngineEnv writes the fake engine as .../bin/docker and returns its
// path, its containers' directory and the state directory for coldstart's
// records.
func fakeEngineEnv(t *testing.T) (bin, containers, state string) {
	t.Helper()
	dir := t.TempDir()
	bin = filepath.Join(dir, "bin", "docker")
	containers, state = filepath.Join(dir, "containers"), filepath.Join(dir, "state")
	for _, d := range []string{filepath.Dir(bin), containers} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(bin, []byte(fakeEngine), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // whatever a failed test left running
		ents, _ := os.ReadDir(containers)
		for _, e := range ents {
			if b, err := os.ReadFile(filepath.Join(containers, e.Name())); err == nil {
				if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
	})
	return bin, containers, state
}

// startEngineChild runs the child mode with the fake engine and returns it
// with the container's PID once it says it is ready.
func startEngineChild(t *testing.T, bin, containers, state, id string, stop bool) (*exec.Cmd, int, *bufio.Reader) {
	t.Helper()
	image := filepath.Join(t.TempDir(), "image.tar") // the fake engine loads anything
	if err := os.WriteFile(image, []byte("not really a tarball"), 0o644); err != nil {
		t.Fatal(err)
	}
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), engineChildEnv+"="+bin, engineIDEnv+"="+id, engineImageEnv+"="+image,
		"FAKE_ENGINE_STATE="+containers, "FAKE_ENGINE_REQUIRE_RECORD=1", "COLDSTART_STATE_DIR="+state)
	if stop {
		child.Env = append(child.Env, engineStopEnv+"=1")
	}
	var stderr bytes.Buffer
	child.Stderr = &stderr
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = child.Process.Kill()
		_ = child.Wait()
	})
	r := bufio.NewReader(out)
	line, _ := r.ReadString('\n')
	f := strings.Fields(line)
	if len(f) != 2 || f[0] != "ready" {
		t.Fatalf("child said %q (stderr %q)", line, stderr.String())
	}
	pid, err := strconv.Atoi(f[1])
	if err != nil {
		t.Fatal(err)
	}
	return child, pid, r
}

// TestEngineContainerRecordedAndForgotten: the container is in the run's
// state file, by the name coldstart chose, before `docker run` (the fake
// engine refuses it otherwise), and Stop removes it and its record.
func TestEngineContainerRecordedAndForgotten(t *testing.T) {
	bin, containers, state := fakeEngineEnv(t)
	id := "coldstart-test-" + strconv.Itoa(os.Getpid()) + "-stop"
	_, pid, r := startEngineChild(t, bin, containers, state, id, true)
	line, _ := r.ReadString('\n')
	if strings.TrimSpace(line) != "stopped <nil>" {
		t.Fatalf("Stop: child said %q, want \"stopped <nil>\"", line)
	}
	if procfs.Host.Alive(pid) {
		t.Errorf("container process %d still runs after Stop", pid)
	}
	if _, err := os.Stat(filepath.Join(containers, id)); !os.IsNotExist(err) {
		t.Errorf("container %s after Stop: %v, want it removed", id, err)
	}
	if files, _ := filepath.Glob(filepath.Join(state, "run-*.json")); len(files) != 0 {
		b, _ := os.ReadFile(files[0])
		t.Errorf("state files after Stop: %v (%s), want none: the record is dropped once the container is removed", files, b)
	}
}

// TestEngineContainerSweptAfterSIGKILL kills the run with SIGKILL while its
// container runs: the container survives its parent, and a sweep (what the
// next run and `coldstart clean` do) removes it by its exact name, leaving
// another container whose name only looks like it.
func TestEngineContainerSweptAfterSIGKILL(t *testing.T) {
	bin, containers, state := fakeEngineEnv(t)
	id := "coldstart-test-" + strconv.Itoa(os.Getpid()) + "-kill"
	// A container coldstart did not start, named like its own.
	decoy := id + "-decoy"
	run := exec.Command(bin, "run", "--detach", "--name", decoy, "img")
	run.Env = append(os.Environ(), "FAKE_ENGINE_STATE="+containers)
	if out, err := run.CombinedOutput(); err != nil {
		t.Fatalf("fake engine run %s: %v: %s", decoy, err, out)
	}
	child, pid, _ := startEngineChild(t, bin, containers, state, id, false)
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	if !procfs.Host.Alive(pid) {
		t.Fatalf("container process %d died with its parent; the test shows nothing", pid)
	}

	var log bytes.Buffer
	t.Setenv("FAKE_ENGINE_STATE", containers) // for the engine the sweep runs
	removed, left, err := leftovers.Clean(state, &log)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("clean: %s", strings.TrimSpace(log.String()))
	var engines []leftovers.Removed
	for _, r := range removed {
		if r.Err != nil {
			t.Errorf("remove %s: %v", r.Entry, r.Err)
		}
		if r.Entry.Kind == leftovers.EngineContainer {
			engines = append(engines, r)
		}
	}
	if len(engines) != 1 || engines[0].Entry.ID != id || engines[0].Entry.Engine != bin {
		t.Errorf("swept engine containers %+v, want only %s by %s", engines, id, bin)
	}
	if len(left) != 0 {
		t.Errorf("clean left %+v, want nothing (the owner is dead)", left)
	}
	if !strings.Contains(log.String(), "removed docker container "+id) {
		t.Errorf("clean's log %q does not list the container it removed", log.String())
	}
	deadline := time.Now().Add(5 * time.Second)
	for procfs.Host.Alive(pid) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if procfs.Host.Alive(pid) {
		t.Errorf("container process %d still runs after the sweep", pid)
	}
	if _, err := os.Stat(filepath.Join(containers, id)); !os.IsNotExist(err) {
		t.Errorf("container %s after the sweep: %v, want it removed", id, err)
	}
	if _, err := os.Stat(filepath.Join(containers, decoy)); err != nil {
		t.Errorf("container %s, which coldstart did not start, was touched: %v", decoy, err)
	}
	if files, _ := filepath.Glob(filepath.Join(state, "run-*.json")); len(files) != 0 {
		t.Errorf("state files after the sweep: %v, want none", files)
	}
}
