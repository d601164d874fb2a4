package pgocollect_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coldstart-go/coldstart/builds"
	"github.com/coldstart-go/coldstart/pgocollect"
	"github.com/coldstart-go/coldstart/steady"
)

// hotServer builds testdata/hotserver, a server shaped as a user's (it
// needs -listen ADDR and $HOT_KEY), as the default arm with the debug
// hook, and testdata/hotclient, its own load generator.
func hotServer(t *testing.T) (server builds.Artifact, client string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds a server and runs it under load; skipped in -short mode")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	arts, errs := builds.BuildAll(context.Background(), builds.Source{Pkg: "./pgocollect/testdata/hotserver", Dir: root}, []string{"default"},
		builds.Options{CacheDir: t.TempDir(), Instrument: true})
	if errs[0] != nil {
		t.Fatal(errs[0])
	}
	client = filepath.Join(t.TempDir(), "hotclient")
	if out, err := exec.Command("go", "build", "-o", client, "./testdata/hotclient").CombinedOutput(); err != nil {
		t.Fatalf("build hotclient: %v\n%s", err, out)
	}
	return arts[0], client
}

// topFuncs is `go tool pprof -top` of prof: the functions by flat CPU.
func topFuncs(t *testing.T, bin string, prof []byte) string {
	t.Helper()
	pf := filepath.Join(t.TempDir(), "cpu.pprof")
	if err := os.WriteFile(pf, prof, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("go", "tool", "pprof", "-top", "-nodecount=8", bin, pf).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof: %v\n%s", err, out)
	}
	return string(out)
}

// TestCollectUserLoad collects a 2 s profile of the user-shaped server
// started with its own arguments and environment, under its own method
// (Call) and under its own client (Command): both show its hot function
// on top, where coldstart's default load (health checks: it has no Echo)
// does not.
func TestCollectUserLoad(t *testing.T) {
	bin, client := hotServer(t)
	user := pgocollect.Config{Args: []string{"-listen", "{addr}"}, Env: []string{"HOT_KEY=k"}}
	call, command := user, user
	call.Call = &steady.Call{Method: "/hot.v1.Hot/Spin", Data: [][]byte{[]byte(`{"n": 20000}`)}}
	command.Command = client + " -addr {addr}"
	tests := []struct {
		name     string
		c        pgocollect.Config
		kind     string
		wantLoad string
		hot      bool
	}{
		{"call", call, "call", "gRPC unary /hot.v1.Hot/Spin", true},
		{"command", command, "command", "the command " + client, true},
		{"default", user, "health", "gRPC health checks", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prof, note, err := tt.c.Collector()(context.Background(), bin, 2, nil)
			if err != nil {
				t.Fatal(err)
			}
			top := topFuncs(t, bin.Path, prof)
			t.Logf("top functions under %s:\n%s", note.Load, top)
			if note.LoadKind != tt.kind || !strings.HasPrefix(note.Load, tt.wantLoad) || strings.Join(note.ServerArgs, " ") != "-listen {addr}" {
				t.Errorf("note = %+v, want load kind %s, load %q, server args -listen {addr}", note, tt.kind, tt.wantLoad)
			}
			if got := topLines(top, 3); strings.Contains(got, "main.spinHot") != tt.hot {
				t.Errorf("main.spinHot among the top 3 = %v, want %v:\n%s", !tt.hot, tt.hot, top)
			}
			if tt.hot && strings.Contains(topLines(top, 8), "health") {
				t.Errorf("health checks among the top functions under %s:\n%s", note.Load, top)
			}
		})
	}
}

// topLines is the first n function rows of `pprof -top` output.
func topLines(top string, n int) string {
	_, rows, _ := strings.Cut(top, "flat%")
	lines := strings.Split(strings.TrimSpace(rows), "\n")
	if len(lines) > n+1 {
		lines = lines[:n+1] // the header's tail, then n rows
	}
	return strings.Join(lines, "\n")
}

// TestCollectUserLoadErrors: a load command that fails at once fails the
// collection at once, with its output, naming the Command setting; a
// method the server does not offer names Call.Method and what it offers;
// a server started without the arguments it needs fails with its stderr.
func TestCollectUserLoadErrors(t *testing.T) {
	bin, _ := hotServer(t)
	user := pgocollect.Config{Args: []string{"-listen", "{addr}"}, Env: []string{"HOT_KEY=k"}}
	failing, missing := user, user
	failing.Command = "echo cannot reach {addr} >&2; exit 1"
	missing.Call = &steady.Call{Method: "/hot.v1.Hot/Nope"}
	tests := []struct {
		name   string
		c      pgocollect.Config
		option string
		want   []string
	}{
		{"command exits 1", failing, "Command", []string{"exit status 1", "cannot reach 127.0.0.1:"}},
		{"method not offered", missing, "Call.Method", []string{"Nope", "Spin"}},
		{"no arguments", pgocollect.Config{Env: user.Env}, "", []string{"want -listen ADDR"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			_, _, err := tt.c.Collector()(context.Background(), bin, 10, nil)
			if err == nil {
				t.Fatal("collected, want an error")
			}
			t.Logf("error: %v", err)
			if d := time.Since(start); d > 8*time.Second {
				t.Errorf("failed after %v, want before the profile's 10 s", d)
			}
			var oe *steady.OptionError
			if tt.option != "" && (!errors.As(err, &oe) || oe.Option != tt.option) {
				t.Errorf("error %v: want a steady.OptionError for %s", err, tt.option)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestLoadDescribes: the load's words differ where the load does, and
// name no secret.
func TestLoadDescribes(t *testing.T) {
	a := pgocollect.Config{Args: []string{"-listen", "{addr}", "--token=s3cret"}, Env: []string{"K=envsecret1"}}
	b := a
	b.Env = []string{"K=envsecret2"}
	c := a
	c.Command = "hey --metadata authorization=Bearer-s3cret {addr}"
	d := a
	d.Call = &steady.Call{Method: "/hot.v1.Hot/Spin", Data: [][]byte{[]byte(`{"n":1}`)}}
	seen := map[string]bool{}
	for _, cfg := range []pgocollect.Config{a, b, c, d} {
		l := cfg.Load()
		if seen[l] || strings.Contains(l, "s3cret") || strings.Contains(l, "envsecret") {
			t.Errorf("Load() = %q: repeated, or names a secret", l)
		}
		seen[l] = true
	}
	if err := (pgocollect.Config{Command: "x", Call: d.Call}).Check(); err == nil || !bytes.Contains([]byte(err.Error()), []byte("Command")) {
		t.Errorf("Check(Command and Call) = %v, want an error naming both", err)
	}
}
