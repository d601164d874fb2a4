package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/coldstart-go/coldstart/internal/testservers"
	"github.com/coldstart-go/coldstart/internal/testservers/testcerts"
	"github.com/coldstart-go/coldstart/steady"
)

// TestMain removes the servers tests built, and lets testscript run this
// binary as the steady command.
func TestMain(m *testing.M) {
	os.Exit(testscript.RunMain(buildsRemoved{m}, map[string]func() int{"steady": steadyMain}))
}

type buildsRemoved struct{ m *testing.M }

func (b buildsRemoved) Run() int { return testservers.Run(b.m) }

// TestScripts runs testdata/script/*.txtar with $ECHO set to the sample
// server and $CERTS to TLS test certificates (testcerts.WriteSet), made
// now, outside $WORK and readable by all, keys too: the servers run as
// another user when the tests run as root. $FORTIO is fortio where go
// install puts it (scripts/test-setup.sh), that directory also on $PATH.
func TestScripts(t *testing.T) {
	bin := testservers.BuildPackage(t, testservers.Echo)
	ts := testservers.Build(t)
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(e *testscript.Env) error {
			e.Setenv("ECHO", bin)
			e.Setenv("TESTSERVER", ts)
			root, err := filepath.Abs("../..")
			if err != nil {
				return err
			}
			e.Setenv("MODROOT", root)
			certs, err := os.MkdirTemp("", "steady-certs")
			if err != nil {
				return err
			}
			e.Defer(func() { os.RemoveAll(certs) })
			if err := testcerts.WriteSet(certs); err != nil {
				return err
			}
			if err := chmodAll(certs); err != nil {
				return err
			}
			e.Setenv("CERTS", certs)
			// Each script keeps its own run state: no other run's leftovers
			// are swept (and reported on stderr) in the middle of it.
			e.Setenv("COLDSTART_STATE_DIR", filepath.Join(e.WorkDir, ".coldstart-state"))
			for _, k := range []string{"HOME", "XDG_CACHE_HOME", "GOPATH", "GOMODCACHE", "GOCACHE", "GOFLAGS", "GOPROXY", "PATH"} {
				if v, ok := os.LookupEnv(k); ok {
					e.Setenv(k, v)
				}
			}
			e.Setenv("PATH", e.Getenv("PATH")+string(os.PathListSeparator)+testservers.GoBin())
			e.Setenv("FORTIO", filepath.Join(testservers.GoBin(), "fortio"))
			return nil
		},
	})
}

// TestRunEndToEnd runs the command on the sample server and checks stdout
// (JSON rows) and the results file (provenance, then one step per row).
func TestRunEndToEnd(t *testing.T) {
	bin := testservers.BuildPackage(t, testservers.Echo)
	dir := t.TempDir()
	cmd := newRootCmd()
	var out, errw bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errw)
	cmd.SetArgs([]string{"run", "--bin", "default=" + bin, "--protocol", "grpc,http1", "--concurrency", "1,4",
		"--warmup", "50", "--calls", "300", "-o", "json", "--results-dir", dir,
		"--", "--addr={addr}", "--http-addr={http_addr}"})
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Progress goes to the command's own error writer, not os.Stderr.
	for _, want := range []string{"steady: default ready at", "round 5/5 done", "steady: results in " + dir} {
		if !strings.Contains(errw.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errw.String())
		}
	}
	var rows []steady.Row
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
		t.Fatalf("stdout is not JSON rows: %v\n%s", err, out.String())
	}
	if len(rows) != 4 {
		t.Fatalf("got %d rows, want 4 (grpc and http1, sequential and 4-way)", len(rows))
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*_steady.jsonl"))
	if len(files) != 1 {
		t.Fatalf("results files %v, want one *_steady.jsonl", files)
	}
	f, err := os.Open(files[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var kinds []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var rec struct {
			Kind  string `json:"kind"`
			Calls int64  `json:"calls"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("results line %q: %v", sc.Text(), err)
		}
		kinds = append(kinds, rec.Kind)
		if rec.Kind == "step" && rec.Calls != 300 {
			t.Errorf("step record with %d calls, want 300", rec.Calls)
		}
	}
	// The binary is recorded as an artifact (its sha256, size, Go version)
	// before anything is measured, as coldstart run records its arms.
	// grpc and http1 share each step's rounds: two windows per round,
	// then the two rows of medians.
	want := []string{"provenance", "artifact"}
	for step := 0; step < 2; step++ {
		for round := 0; round < 2*steady.DefaultRounds; round++ {
			want = append(want, "step_round") // each window as it ends
		}
		want = append(want, "step", "step") // then the medians over the rounds
	}
	if !equal(kinds, want) {
		t.Errorf("results kinds %v, want %v", kinds, want)
	}
}

// chmodAll makes dir and its files readable by every user.
func chmodAll(dir string) error {
	if err := os.Chmod(dir, 0o755); err != nil {
		return err
	}
	files, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := os.Chmod(filepath.Join(dir, f.Name()), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
