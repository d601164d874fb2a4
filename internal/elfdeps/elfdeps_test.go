package elfdeps

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestNeeded(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh on PATH")
	}
	tests := []struct {
		name    string
		bin     string
		wantLib bool // a dynamically linked binary needs libc and its interpreter
	}{
		{"dynamic", sh, true},
		{"not ELF", writeFile(t, "script", "#!/bin/sh\n"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files, missing, err := Needed(tt.bin)
			if err != nil {
				t.Fatal(err)
			}
			if len(missing) > 0 {
				t.Errorf("missing %v", missing)
			}
			var libc, interp bool
			for _, f := range files {
				if strings.HasPrefix(filepath.Base(f.Path), "libc.so") {
					libc = true
				}
				if strings.HasPrefix(filepath.Base(f.Path), "ld-linux") {
					interp = true
				}
				if fi, err := os.Lstat(f.Real); err != nil || !fi.Mode().IsRegular() {
					t.Errorf("%s: Real %s is not a regular file (%v)", f.Path, f.Real, err)
				}
			}
			if libc != tt.wantLib || interp != tt.wantLib {
				t.Errorf("files %v: libc %v, interpreter %v, want %v", files, libc, interp, tt.wantLib)
			}
		})
	}
	if _, _, err := Needed(filepath.Join(t.TempDir(), "absent")); err == nil {
		t.Error("Needed of a missing file: no error")
	}
}

func writeFile(t *testing.T, name, data string) string {
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(data), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}
