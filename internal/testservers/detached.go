package testservers

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// NewDetachMarker is a unique sleep length, 3601.<random>, for the test
// server's -detach-child: it names one test's detached children, which
// Detached finds.
func NewDetachMarker() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("3601.%d", binary.BigEndian.Uint32(b[:])%1000000)
}

// Detached lists the processes whose command line is exactly
// "sleep <marker>": the children -detach-child started with that marker
// that are still running.
func Detached(t *testing.T, marker string) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.TrimRight(string(b), "\x00") == "sleep\x00"+marker {
			out = append(out, pid)
		}
	}
	return out
}
