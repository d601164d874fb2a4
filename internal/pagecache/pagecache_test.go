package pagecache

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func TestEvictAndResident(t *testing.T) {
	// The test's own directory sits on the disk the results would; /tmp
	// may be tmpfs, whose pages cannot be evicted.
	dir, err := os.MkdirTemp(".", "pagecache-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "f")
	data := make([]byte, 64*os.Getpagesize()+100)
	for i := range data {
		data[i] = byte(i)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	before, err := Resident(path)
	if err != nil {
		t.Fatal(err)
	}
	if before.Total != 65 || before.Resident != 65 {
		t.Fatalf("Resident(just written) = %+v, want 65 of 65 pages", before)
	}
	if err := Evict(path); err != nil {
		t.Fatal(err)
	}
	after, err := Resident(path)
	if err != nil {
		t.Fatal(err)
	}
	if after.Resident >= before.Resident/2 {
		t.Errorf("Resident after Evict = %+v, want most of %d pages gone", after, before.Resident)
	}
	if _, err := os.ReadFile(path); err != nil {
		t.Fatal(err)
	}
	again, _ := Resident(path)
	if again.Resident != 65 {
		t.Errorf("Resident after reading again = %+v, want 65", again)
	}
	if err := Evict(filepath.Join(dir, "missing")); err == nil {
		t.Error("Evict(missing file) = nil error")
	}
}

func TestFiles(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	fs, err := Files(sh)
	if err != nil {
		t.Fatal(err)
	}
	// A dynamically linked sh needs at least its loader and libc.
	if len(fs) < 3 {
		t.Errorf("Files(%s) = %v, want the binary, its interpreter and libc", sh, fs)
	}
	if _, err := Files(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Error("Files(missing) = nil error")
	}
}

func TestTree(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755)
	os.WriteFile(filepath.Join(dir, "a", "b", "f"), nil, 0o644)
	os.WriteFile(filepath.Join(dir, "g"), nil, 0o644)
	os.Symlink("g", filepath.Join(dir, "l"))
	fs, err := Tree(dir)
	if err != nil || len(fs) != 2 {
		t.Errorf("Tree = %v, %v; want the two regular files", fs, err)
	}
}
