package launch_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coldstart-go/coldstart/internal/runas"
	"github.com/coldstart-go/coldstart/launch"
	"github.com/coldstart-go/coldstart/prober"
)

func TestSocketTarget(t *testing.T) {
	tg, remove, err := launch.SocketTarget("cs-")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(tg.Address)
	if tg.Network != "unix" || tg.Address != prober.SocketPath(dir) ||
		filepath.Dir(dir) != filepath.Clean(runas.TempDir()) || !strings.HasPrefix(filepath.Base(dir), "cs-") {
		t.Errorf("SocketTarget = %s, want unix %s in a cs-* directory under %s", tg, prober.SocketPath(dir), runas.TempDir())
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("socket dir: %v, %v", fi, err)
	}
	remove()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("after remove, %s: %v, want gone", dir, err)
	}
}
