package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.txt")
	if err := WriteFile(path, []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, []byte("two\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "two\n" {
		t.Fatalf("read back %q, %v; want %q", b, err, "two\n")
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640", fi.Mode().Perm())
	}

	// A failing writer leaves the old content and no temp file.
	boom := errors.New("boom")
	err = Write(path, 0o644, func(w io.Writer) error {
		io.WriteString(w, "half")
		return boom
	})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), path) {
		t.Errorf("Write with a failing writer = %v, want boom naming %s", err, path)
	}
	if b, _ := os.ReadFile(path); string(b) != "two\n" {
		t.Errorf("after a failed write: %q, want the old content", b)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("directory holds %d entries, want only out.txt (temp files removed)", len(ents))
	}

	// A directory that does not exist is named.
	missing := filepath.Join(dir, "nope", "out.txt")
	if err := WriteFile(missing, nil, 0o644); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Errorf("WriteFile into a missing dir = %v, want ErrNotExist naming %s", err, missing)
	}
}
