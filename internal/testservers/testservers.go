// Package testservers builds small real servers for tests across coldstart:
// the multi-mode testserver (see its package comment for the modes) and any
// other main package of this module, such as the sample echo server.
//
// A test package that builds servers wraps its tests so the binaries are
// removed at the end:
//
//	func TestMain(m *testing.M) { os.Exit(testservers.Run(m)) }
//
// and a test asks for a binary with testservers.Build(t), which compiles it
// once per test binary.
package testservers

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// Module is this module's path; packages given to BuildPackage are relative
// to it.
const Module = "github.com/coldstart-go/coldstart"

// TestServer is the multi-mode test server's package, relative to Module.
const TestServer = "internal/testservers/testserver"

// Echo is the sample echo server's main package, relative to Module.
const Echo = "examples/echo"

var (
	mu     sync.Mutex
	dir    string // removed by Run; "" until the first build
	inRun  bool
	builds = map[string]*build{}
)

type build struct {
	once sync.Once
	path string
	err  error
}

// Run runs the tests and then removes every binary built for them. It
// returns m.Run's exit code, for os.Exit in TestMain.
func Run(m *testing.M) int {
	mu.Lock()
	inRun = true
	mu.Unlock()
	code := m.Run()
	mu.Lock()
	defer mu.Unlock()
	if dir != "" {
		if err := os.RemoveAll(dir); err != nil {
			fmt.Fprintln(os.Stderr, "testservers: remove", dir+":", err)
		}
		dir = ""
	}
	return code
}

// Build returns the path of the testserver binary, compiled once per test
// binary.
func Build(t testing.TB) string {
	t.Helper()
	return BuildPackage(t, TestServer)
}

// BuildPackage compiles the module's main package pkg (relative to Module,
// e.g. "examples/echo") once per test binary and returns the binary's path.
// The test package's TestMain must call Run, which removes the binaries.
func BuildPackage(t testing.TB, pkg string) string {
	t.Helper()
	mu.Lock()
	if !inRun {
		mu.Unlock()
		t.Fatalf("testservers.BuildPackage(%q): the test package needs func TestMain(m *testing.M) { os.Exit(testservers.Run(m)) } so the built binaries are removed", pkg)
	}
	if dir == "" {
		d, err := os.MkdirTemp("", "coldstart-testservers-")
		if err != nil {
			mu.Unlock()
			t.Fatalf("create build dir: %v", err)
		}
		dir = d
	}
	b := builds[pkg]
	if b == nil {
		b = &build{}
		builds[pkg] = b
	}
	out := dir
	mu.Unlock()
	b.once.Do(func() {
		b.path = filepath.Join(out, path.Base(pkg))
		if _, err := os.Stat(b.path); err == nil {
			b.path = filepath.Join(out, pkg) // two packages with one base name
		}
		b.err = goBuild(b.path, path.Join(Module, pkg))
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

func goBuild(out, pkg string) error {
	gobin, err := exec.LookPath("go")
	if err != nil {
		gobin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	cmd := exec.Command(gobin, "build", "-o", out, pkg)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", pkg, err, stderr.Bytes())
	}
	return nil
}

// GoBin is where go install puts commands: $GOBIN, else the first
// GOPATH's bin.
func GoBin() string {
	if b, err := exec.Command("go", "env", "GOBIN").Output(); err == nil && len(bytes.TrimSpace(b)) > 0 {
		return string(bytes.TrimSpace(b))
	}
	b, _ := exec.Command("go", "env", "GOPATH").Output()
	gp, _, _ := strings.Cut(string(bytes.TrimSpace(b)), string(os.PathListSeparator))
	return filepath.Join(gp, "bin")
}
