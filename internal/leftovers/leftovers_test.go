package leftovers

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coldstart-go/coldstart/internal/procfs"
)

// TestMain: with LEFTOVERS_CHILD set, the test binary plays a coldstart run
// that records a directory and a server process (a sleep in its own process
// group) in a state file, creates them, says so, and waits to be killed.
func TestMain(m *testing.M) {
	if dir := os.Getenv("LEFTOVERS_CHILD"); dir != "" {
		l, err := Open(dir)
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		work := os.Getenv("LEFTOVERS_WORK")
		if _, err := l.Add(Entry{Kind: Dir, Path: work}); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		os.MkdirAll(filepath.Join(work, "rootfs"), 0o755)
		cmd := exec.Command("sleep", "600")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		start, _ := procfs.Host.StartTime(cmd.Process.Pid)
		l.Add(Entry{Kind: Process, PID: cmd.Process.Pid, Start: start})
		fmt.Println("ready", cmd.Process.Pid)
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestSweepAfterSIGKILL kills a "run" with SIGKILL after it created a
// directory and a server, and checks that Sweep (what the next run and
// coldstart clean do) kills the server and removes the directory and the
// state file, while a live run's file is left alone.
func TestSweepAfterSIGKILL(t *testing.T) {
	state := t.TempDir()
	work := filepath.Join(t.TempDir(), "bundle")
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), "LEFTOVERS_CHILD="+state, "LEFTOVERS_WORK="+work)
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	f := strings.Fields(line)
	if len(f) != 2 || f[0] != "ready" {
		child.Process.Kill()
		child.Wait()
		t.Fatalf("child said %q", line)
	}
	server, _ := strconv.Atoi(f[1])
	t.Cleanup(func() { syscall.Kill(-server, syscall.SIGKILL) })

	// A live run's file: left alone.
	live, err := Open(state)
	if err != nil {
		t.Fatal(err)
	}
	liveDir := t.TempDir()
	k, err := live.Add(Entry{Kind: Dir, Path: liveDir})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Done(k)

	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	child.Wait()
	if !procfs.Host.Alive(server) {
		t.Fatalf("server %d died with its parent; the test shows nothing", server)
	}
	if _, err := os.Stat(work); err != nil {
		t.Fatalf("work dir: %v", err)
	}

	removed, left, err := Clean(state, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 2 || removed[0].Entry.Kind != Process || removed[1].Entry.Kind != Dir {
		t.Errorf("Clean removed %+v, want the process, then the directory", removed)
	}
	for _, r := range removed {
		if r.Err != nil {
			t.Errorf("remove %s: %v", r.Entry, r.Err)
		}
	}
	if len(left) != 1 || left[0].Owner != os.Getpid() {
		t.Errorf("Clean left %+v, want only this test's own live file", left)
	}
	deadline := time.Now().Add(5 * time.Second)
	for procfs.Host.Alive(server) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if procfs.Host.Alive(server) {
		t.Errorf("server %d still runs after the sweep", server)
	}
	if _, err := os.Stat(work); !os.IsNotExist(err) {
		t.Errorf("work dir after the sweep: %v, want it gone", err)
	}
	if _, err := os.Stat(liveDir); err != nil {
		t.Errorf("a live run's directory was touched: %v", err)
	}
	files, _ := filepath.Glob(filepath.Join(state, "run-*.json"))
	if len(files) != 1 || files[0] != live.Path() {
		t.Errorf("state files after the sweep: %v, want only %s", files, live.Path())
	}
	// A second sweep finds nothing.
	if again, _ := Sweep(state, nil); len(again) != 0 {
		t.Errorf("second sweep removed %+v", again)
	}
}

// TestLedgerFile: the file appears with the first entry, lists what is
// recorded, and goes when the last entry is done.
func TestLedgerFile(t *testing.T) {
	l, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(l.Path()); !os.IsNotExist(err) {
		t.Errorf("state file before any entry: %v", err)
	}
	a, _ := l.Add(Entry{Kind: Dir, Path: "/nonexistent/a"})
	b, _ := l.Add(Entry{Kind: Container, ID: "coldstart-1-x"})
	raw, err := os.ReadFile(l.Path())
	if err != nil || !strings.Contains(string(raw), "coldstart-1-x") || !strings.Contains(string(raw), fmt.Sprintf(`"owner_pid": %d`, os.Getpid())) {
		t.Errorf("state file = %s, %v", raw, err)
	}
	l.Done(a)
	l.Done(b)
	if _, err := os.Stat(l.Path()); !os.IsNotExist(err) {
		t.Errorf("state file after every entry is done: %v, want it gone", err)
	}
}

// TestMkdirTemp: the directory is in the run's state file from before it
// exists until forget, so a SIGKILL in between leaves a record to sweep.
func TestMkdirTemp(t *testing.T) {
	state := t.TempDir()
	t.Setenv("COLDSTART_STATE_DIR", state)
	l, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	if l.Path() == "" || filepath.Dir(l.Path()) != state {
		t.Skipf("this test binary's ledger was opened elsewhere (%s)", l.Path())
	}
	parent := t.TempDir()
	dir, forget, err := MkdirTemp(parent, "cs-")
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() || filepath.Dir(dir) != parent || !strings.HasPrefix(filepath.Base(dir), "cs-") {
		t.Fatalf("MkdirTemp = %s (%v), want a new cs-* directory in %s", dir, err, parent)
	}
	b, err := os.ReadFile(l.Path())
	if err != nil || !strings.Contains(string(b), strconv.Quote(dir)) {
		t.Fatalf("state file %s lacks %s (%v):\n%s", l.Path(), dir, err, b)
	}
	os.RemoveAll(dir)
	forget()
	if b, err := os.ReadFile(l.Path()); err == nil && strings.Contains(string(b), strconv.Quote(dir)) {
		t.Errorf("state file still lists %s after forget:\n%s", dir, b)
	}
}
