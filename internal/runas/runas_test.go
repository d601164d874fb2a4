package runas

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestMain(m *testing.M) {
	if os.Getenv("RUNAS_TEST_CHILD") == "1" {
		// What a staged server sees: its ids and groups.
		gs, _ := os.Getgroups()
		fmt.Printf("%d:%d %v", os.Getuid(), os.Getgid(), gs)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (CI runs as root)")
	}
}

func TestParse(t *testing.T) {
	needRoot(t)
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skipf("no user nobody: %v", err)
	}
	var nobodyUID, nobodyGID uint32
	fmt.Sscan(nobody.Uid, &nobodyUID)
	fmt.Sscan(nobody.Gid, &nobodyGID)
	for _, tt := range []struct {
		in      string
		want    User
		wantErr string
	}{
		{"", User{UID: DefaultUID, GID: DefaultGID}, ""},
		{"root", User{UID: 0, GID: 0, Self: true}, ""},
		{"0", User{UID: 0, GID: 0, Self: true}, ""},
		{"65532", User{UID: 65532, GID: 65532}, ""},
		{"1000:2000", User{UID: 1000, GID: 2000}, ""},
		{"nobody", User{UID: nobodyUID, GID: nobodyGID}, ""},
		{"nobody:0", User{UID: nobodyUID, GID: 0}, ""},
		{"no-such-user-here", User{}, `user "no-such-user-here"`},
		{":5", User{}, "has no user"},
		{"5:no-such-group-here", User{}, `group "no-such-group-here"`},
		{"99999999999", User{}, "uid"},
	} {
		t.Run(tt.in, func(t *testing.T) {
			got, err := Parse(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("Parse(%q) = %v, %v; want an error with %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("Parse(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			}
		})
	}
}

// TestStagedBinaryRunsUnprivileged copies this test binary out of wherever
// go test put it, starts it with the default user's credential, and checks
// what it runs as: uid and gid 65532, no supplementary groups.
func TestStagedBinaryRunsUnprivileged(t *testing.T) {
	needRoot(t)
	u, err := Parse("")
	if err != nil {
		t.Fatal(err)
	}
	st := NewStage(u)
	bin, err := st.Binary(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := st.Binary(os.Args[0]); again != bin {
		t.Errorf("second Binary = %s, want the same copy %s", again, bin)
	}
	if filepath.Base(bin) != filepath.Base(os.Args[0]) {
		t.Errorf("copy %s, want the base name %s kept", bin, filepath.Base(os.Args[0]))
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "RUNAS_TEST_CHILD=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: u.Credential()}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("run staged %s as %s: %v\n%s", bin, u, err, out.String())
	}
	if got, want := out.String(), "65532:65532 []"; got != want {
		t.Errorf("child runs as %q, want %q", got, want)
	}
	// Others may traverse the stage but not list it or read the copy.
	fi, _ := os.Stat(filepath.Dir(filepath.Dir(bin)))
	if fi.Mode().Perm() != 0o711 {
		t.Errorf("stage directory mode %v, want 0711", fi.Mode().Perm())
	}
	fi, _ = os.Stat(bin)
	if fi.Mode().Perm() != 0o750 || fi.Sys().(*syscall.Stat_t).Gid != DefaultGID {
		t.Errorf("copy mode %v gid %d, want 0750 and gid %d", fi.Mode().Perm(), fi.Sys().(*syscall.Stat_t).Gid, DefaultGID)
	}
	dir := filepath.Dir(filepath.Dir(bin))
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stage %s remains after Close (stat: %v)", dir, err)
	}
	if _, err := st.Binary(os.Args[0]); err == nil {
		t.Error("Binary after Close succeeded")
	}
}

// TestSelf stages nothing and changes no credential.
func TestSelf(t *testing.T) {
	st := NewStage(Self())
	if p, err := st.Binary("/bin/true"); err != nil || p != "/bin/true" {
		t.Errorf("Binary = %s, %v; want /bin/true itself", p, err)
	}
	if c := Self().Credential(); c != nil {
		t.Errorf("Credential() = %+v, want nil", c)
	}
}

func TestHandOver(t *testing.T) {
	needRoot(t)
	u := User{UID: DefaultUID, GID: DefaultGID}
	dir, err := os.MkdirTemp("", "runas-sock-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	var log bytes.Buffer
	if err := HandOver(dir, u, &log); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(dir)
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != DefaultUID || st.Gid != DefaultGID {
		t.Errorf("socket dir owned by %d:%d, want %d:%d", st.Uid, st.Gid, DefaultUID, DefaultGID)
	}
	if !strings.Contains(log.String(), "chown 65532:65532 "+dir) {
		t.Errorf("log %q does not show the chown", log.String())
	}
	// Somebody else's directory is refused, with what to do.
	other, err := os.MkdirTemp("", "runas-other-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(other)
	os.Chown(other, 1234, 1234)
	os.Chmod(other, 0o755)
	if err := HandOver(other, u, nil); err == nil || !strings.Contains(err.Error(), "--run-as root") {
		t.Errorf("HandOver(dir of uid 1234) = %v, want an error naming --run-as root", err)
	}
}

// TestCanExecute: a binary the user can reach and run is used in place (a
// JDK's java finds its libraries relative to itself); one under a directory
// closed to the user is not.
func TestCanExecute(t *testing.T) {
	u := User{UID: 65532, GID: 65532}
	open, err := os.MkdirTemp("", "canexec-") // t.TempDir's parent is closed to others
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(open) })
	if err := os.Chmod(open, 0o755); err != nil {
		t.Fatal(err)
	}
	for dir := filepath.Dir(open); dir != "/"; dir = filepath.Dir(dir) {
		if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm()&0o001 == 0 {
			t.Skipf("%s is not searchable by others: the temp dir cannot hold a reachable binary", dir)
		}
	}
	bin := filepath.Join(open, "server")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	closed := filepath.Join(open, "closed")
	if err := os.Mkdir(closed, 0o700); err != nil {
		t.Fatal(err)
	}
	hidden := filepath.Join(closed, "server")
	if err := os.WriteFile(hidden, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	private := filepath.Join(open, "private")
	if err := os.WriteFile(private, []byte("#!/bin/sh\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		path string
		want bool
	}{{bin, true}, {hidden, false}, {private, false}, {filepath.Join(open, "missing"), false}, {"relative/server", false}} {
		if got := CanExecute(tt.path, u); got != tt.want {
			t.Errorf("CanExecute(%q, %v) = %v, want %v", tt.path, u, got, tt.want)
		}
	}
}
