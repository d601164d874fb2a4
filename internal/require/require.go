// Package require decides whether a test may skip for a missing real thing
// (root, upx, runc, a Kubernetes test environment). Locally a missing thing
// is a skip with the reason; where $COLDSTART_REQUIRE names it (CI sets
// COLDSTART_REQUIRE=root,upx,runc,kube in .ci/run), the same condition is
// a failure, so CI cannot pass by skipping what it installed.
package require

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// Env is the variable listing the required things, comma-separated.
const Env = "COLDSTART_REQUIRE"

// Things a test may require.
const (
	Root = "root"
	UPX  = "upx"
	Runc = "runc"
	// Crun is Debian's crun, the image arm's other runtime
	// (scripts/test-setup.sh installs it).
	Crun = "crun"
	// Podman is Debian's podman, a real engine for --runtime podman
	// (scripts/test-setup.sh installs it).
	Podman = "podman"
	Kube   = "kube"
	// CRIU is criu ≥ 4.2 passing `criu check` (the snapshot arm); JDK is
	// javac and java (the JVM server of the snapshot tests).
	CRIU = "criu"
	JDK  = "jdk"
	// VM is qemu and the guest kernels for the pure cgroup v2 tests
	// (internal/vmtest; scripts/test-setup.sh, scripts/vm-kernel.sh).
	VM = "vm"
	// Fortio is fortio v1.68.2 on $PATH or in $(go env GOPATH)/bin, a
	// server coldstart did not write (scripts/test-setup.sh installs it).
	Fortio = "fortio"
	// Chromium is Debian's headless chromium, which opens the HTML report
	// (scripts/test-setup.sh installs it).
	Chromium = "chromium"
	// RSVG is rsvg-convert (Debian's librsvg2-bin), which renders every
	// generated plot (scripts/test-setup.sh installs it).
	RSVG = "rsvg"
	// Tmux is tmux, the terminal the live progress bar is tested in
	// (scripts/test-setup.sh installs it).
	Tmux = "tmux"
	// Postgres is Debian's postgresql (initdb and pg_ctl under
	// /usr/lib/postgresql/*/bin), the database examples/withdb dials
	// (scripts/test-setup.sh installs it).
	Postgres = "postgres"
)

// Required reports whether $COLDSTART_REQUIRE names what (or "all").
func Required(what string) bool {
	for _, w := range strings.Split(os.Getenv(Env), ",") {
		if w = strings.TrimSpace(w); w == what || w == "all" {
			return true
		}
	}
	return false
}

// Skipf skips t for the missing thing what, or fails it when it is
// required.
func Skipf(t testing.TB, what, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if Required(what) {
		t.Fatalf("%s (%s=%s requires %s, so this is a failure, not a skip)", msg, Env, os.Getenv(Env), what)
	}
	t.Skip(msg)
}
