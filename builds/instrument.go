package builds

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// HookFile is the name the debug hook takes inside the main package's
// directory; it exists only in the build's overlay, never on disk there.
const HookFile = "zz_coldstart_debughook.go"

// HookSource is the debug hook added to a main package by Options.Instrument:
// with $COLDSTART_DEBUG_ADDR set, the server serves /debug/pprof/profile and
// /debug/runtime (rtmetrics.Snapshot JSON) there on its own mux. It is
// self-contained (standard library only).
//
//go:embed debughook.go.txt
var HookSource []byte

// writeOverlay writes the hook and a `go build -overlay` file adding it to
// pkgDir into tmp, and returns the overlay file's path.
func writeOverlay(tmp, pkgDir string) (string, error) {
	hook := filepath.Join(tmp, HookFile)
	if err := os.WriteFile(hook, HookSource, 0o644); err != nil {
		return "", fmt.Errorf("write debug hook: %w", err)
	}
	b, err := json.Marshal(struct{ Replace map[string]string }{
		Replace: map[string]string{filepath.Join(pkgDir, HookFile): hook},
	})
	if err != nil {
		return "", err
	}
	overlay := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(overlay, b, 0o644); err != nil {
		return "", fmt.Errorf("write build overlay: %w", err)
	}
	return overlay, nil
}
