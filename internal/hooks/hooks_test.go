package hooks

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestCheckAndExpand(t *testing.T) {
	if err := Check(Setup, "pg.sh start {tmpdir} ${HOME} {a,b}"); err != nil {
		t.Errorf("Check: %v", err)
	}
	err := Check(Setup, "echo {addr}")
	if err == nil || !strings.Contains(err.Error(), "--setup: unknown placeholder {addr} (known: {tmpdir})") {
		t.Errorf("Check {addr} in --setup: %v", err)
	}
	if err := Check(Prepare, "echo {arm} {addr} {host}:{port} {tmpdir}"); err != nil {
		t.Errorf("Check --prepare: %v", err)
	}
	got, err := Expand(Prepare, "echo {arm} {addr} ${HOME} {tmpdir}/x", map[string]string{"arm": "upx", "addr": "127.0.0.1:9", "tmpdir": "/tmp/d"})
	if want := "echo upx 127.0.0.1:9 ${HOME} /tmp/d/x"; err != nil || got != want {
		t.Errorf("Expand = %q, %v; want %q", got, err, want)
	}
	if _, err := Expand(Prepare, "echo {socket}", map[string]string{"addr": "127.0.0.1:9"}); err == nil || !strings.Contains(err.Error(), "--prepare: no value for {socket}") {
		t.Errorf("Expand {socket} for a tcp start: %v", err)
	}
}

func TestRunFailureQuotesOutputTail(t *testing.T) {
	res, err := Run(context.Background(), Setup, `for i in $(seq 40); do echo "line $i" >&2; done; exit 3`, time.Minute, nil)
	if err == nil {
		t.Fatal("a setup that exits 3 succeeded")
	}
	msg := err.Error()
	for _, want := range []string{"--setup: exit status 3", "its output ends:", "line 40"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
	if strings.Contains(msg, "line 1\n") {
		t.Errorf("error quotes the whole output, not its tail: %q", msg)
	}
	if res.Exit != 3 || res.Error != msg || res.Hook != Setup {
		t.Errorf("result = %+v, want exit 3 and the error", res)
	}
}

// alive reports whether pid is a running process (a zombie is not).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && len(s) > i+2 && s[i+2] != 'Z'
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// A prepare that hangs is killed at the timeout with all it started, and
// the error names the timeout's flag.
func TestRunTimeoutKillsGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	// The child ignores SIGTERM: only the group's SIGKILL ends it.
	res, err := Run(context.Background(), Prepare, `sh -c 'trap "" TERM; echo $$ >`+pidFile+`; while :; do sleep 1; done' & wait`, 300*time.Millisecond, nil)
	if err == nil {
		t.Fatal("a hanging prepare returned no error")
	}
	if !strings.Contains(err.Error(), "--prepare: killed after 300ms (--hook-timeout)") {
		t.Errorf("error %q does not name the hook and --hook-timeout", err)
	}
	if res.Exit != -1 {
		t.Errorf("exit = %d, want -1 (killed)", res.Exit)
	}
	pid := readPID(t, pidFile)
	for range 100 {
		if !alive(pid) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	syscall.Kill(pid, syscall.SIGKILL)
	t.Errorf("the prepare's child %d outlived its timeout", pid)
}

// A daemon the setup leaves running does not hold the setup up: its
// output goes to a file, not a pipe Run would wait for.
func TestRunLeavesDaemon(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	_, err := Run(context.Background(), Setup, `sleep 60 & echo $! >`+pidFile, time.Minute, nil)
	pid := readPID(t, pidFile)
	defer syscall.Kill(pid, syscall.SIGKILL)
	if err != nil {
		t.Fatalf("setup that starts a daemon: %v", err)
	}
	if !alive(pid) {
		t.Errorf("the daemon the setup started (%d) was killed", pid)
	}
}

func TestCampaign(t *testing.T) {
	marks := t.TempDir()
	var recs []Result
	cfg := Config{
		Setup:   "echo setup >>" + marks + "/log; touch {tmpdir}/made",
		Prepare: "echo prepare {arm} {port} >>" + marks + "/log; test -f {tmpdir}/made",
		Cleanup: "echo cleanup >>" + marks + "/log",
		Timeout: time.Minute,
		Record:  func(r Result) error { recs = append(recs, r); return nil },
	}
	c, err := Begin(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	dir := c.TmpDir()
	for _, port := range []string{"1", "2"} {
		if err := c.Prepare(context.Background(), "default", map[string]string{"addr": "127.0.0.1:" + port, "host": "127.0.0.1", "port": port}); err != nil {
			t.Fatal(err)
		}
	}
	// The campaign is interrupted in the middle of a prepare: the prepare
	// is killed, and End still runs the cleanup.
	ctx, cancel := context.WithCancel(context.Background())
	started := filepath.Join(marks, "hang-started")
	hang := Config{Prepare: "touch " + started + "; sleep 60", Cleanup: cfg.Cleanup, Record: cfg.Record}
	c2, err := Begin(context.Background(), hang)
	if err != nil {
		t.Fatal(err)
	}
	dir2 := c2.TmpDir()
	go func() {
		// Cancelled once the prepare runs: in its middle, not before it.
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if _, err := os.Stat(started); err == nil {
				break
			}
		}
		cancel()
	}()
	if err := c2.Prepare(ctx, "upx", map[string]string{"port": "3"}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled prepare: %v, want context.Canceled", err)
	}
	for _, c := range []*Campaign{c, c2} {
		if err := c.End(); err != nil {
			t.Error(err)
		}
		if err := c.End(); err != nil { // once only
			t.Error(err)
		}
	}
	b, err := os.ReadFile(marks + "/log")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), "setup\nprepare default 1\nprepare default 2\ncleanup\ncleanup\n"; got != want {
		t.Errorf("hooks ran:\n%s\nwant:\n%s", got, want)
	}
	for _, d := range []string{dir, dir2} {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("{tmpdir} %s left behind: %v", d, err)
		}
	}
	var kinds []string
	for _, r := range recs {
		kinds = append(kinds, r.Hook+":"+r.Arm+":"+strconv.Itoa(r.Exit))
	}
	if got, want := strings.Join(kinds, " "), "setup::0 prepare:default:0 prepare:default:0 prepare:upx:-1 cleanup::0 cleanup::0"; got != want {
		t.Errorf("records = %s, want %s", got, want)
	}
}

// A setup that fails: Begin runs the cleanup (for what the setup started
// before it failed), removes {tmpdir}, and returns the setup's error.
func TestBeginSetupFails(t *testing.T) {
	marks := t.TempDir()
	_, err := Begin(context.Background(), Config{
		Setup:   "echo {tmpdir} >" + marks + "/dir; echo 'initdb: no space' >&2; exit 1",
		Cleanup: "echo cleanup >" + marks + "/cleanup",
	})
	if err == nil || !strings.Contains(err.Error(), "--setup: exit status 1; its output ends:\ninitdb: no space") {
		t.Fatalf("failing setup: %v", err)
	}
	if _, err := os.Stat(marks + "/cleanup"); err != nil {
		t.Errorf("cleanup did not run after the failed setup: %v", err)
	}
	b, _ := os.ReadFile(marks + "/dir")
	if d := strings.TrimSpace(string(b)); d == "" {
		t.Error("setup got no {tmpdir}")
	} else if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("{tmpdir} %s left behind: %v", d, err)
	}
}
