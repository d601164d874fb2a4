package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/coldstart-go/coldstart/internal/require"
	"github.com/coldstart-go/coldstart/internal/testservers"
	"github.com/coldstart-go/coldstart/internal/testservers/testcerts"
	"github.com/coldstart-go/coldstart/launch"
)

// testMain runs the tests inside testservers.Run, so the servers it builds
// are removed at the end.
type testMain struct{ m *testing.M }

func (t testMain) Run() int { return testservers.Run(t.m) }

func TestMain(m *testing.M) {
	os.Exit(testscript.RunMain(testMain{m}, map[string]func() int{"coldstart": run}))
}

// TestScripts runs testdata/script/*.txtar: the coldstart command end to
// end against real servers, checking exit status, stdout and stderr.
// $TESTSERVER is internal/testservers' multi-mode server; $MODROOT is this
// checkout, so the bundled sample server builds (and is cached) as usual;
// $CERTS holds TLS test certificates (testcerts.WriteSet).

func TestScripts(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end scripts build and start real servers; skipped in -short mode")
	}
	ts := testservers.Build(t)
	slowinit := testservers.BuildPackage(t, "internal/testservers/slowinit")
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			env.Setenv("TESTSERVER", ts)
			env.Setenv("MODROOT", root)
			env.Setenv("SLOWINIT", slowinit)
			// TLS certificates made now, nothing secret committed: $CERTS
			// holds testcerts.WriteSet's files (ECDSA P-256 only), outside
			// $WORK and readable by all, keys too: the servers run as
			// another user when the tests run as root.
			certs, err := os.MkdirTemp("", "coldstart-certs")
			if err != nil {
				return err
			}
			env.Defer(func() { os.RemoveAll(certs) })
			if err := testcerts.WriteSet(certs); err != nil {
				return err
			}
			if err := chmodAll(certs); err != nil {
				return err
			}
			env.Setenv("CERTS", certs)
			// Each script keeps its own run state: no other run's leftovers
			// are swept (and reported on stderr) in the middle of it.
			env.Setenv("COLDSTART_STATE_DIR", filepath.Join(env.WorkDir, ".coldstart-state"))
			for _, k := range []string{"HOME", "XDG_CACHE_HOME", "GOPATH", "GOMODCACHE", "GOCACHE", "GOFLAGS", "GOPROXY", "PATH"} {
				if v, ok := os.LookupEnv(k); ok {
					env.Setenv(k, v)
				}
			}
			// Tools go install put here (fortio, by scripts/test-setup.sh).
			env.Setenv("PATH", env.Getenv("PATH")+string(os.PathListSeparator)+testservers.GoBin())
			env.Setenv("FORTIO", filepath.Join(testservers.GoBin(), "fortio"))
			return nil
		},
		Condition: func(cond string) (bool, error) {
			switch cond {
			case "root":
				return os.Geteuid() == 0, nil
			case "criu":
				// The snapshot arm's own check: criu found and `criu check` passing.
				return (&launch.Snapshot{}).Check(context.Background()) == nil, nil
			case "postgres":
				// Debian's postgresql: the withdb example's --setup runs its
				// initdb and pg_ctl. Where CI requires it, missing is a failure.
				found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
				if len(found) == 0 && require.Required(require.Postgres) {
					return false, fmt.Errorf("no /usr/lib/postgresql/*/bin/initdb (%s=%s requires %s)", require.Env, os.Getenv(require.Env), require.Postgres)
				}
				return len(found) > 0, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
	})
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
