package provenance

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Collect fills what it can read on this machine, and the command line
// with its secrets replaced.
func TestCollect(t *testing.T) {
	p := Collect("coldstart", []string{"run", "--env", "API_TOKEN=hunter2-s3cret"})
	if p.Tool != "coldstart" || p.GoVersion != runtime.Version() || p.Cores != runtime.NumCPU() {
		t.Errorf("tool %q, go %q, cores %d; want coldstart, %s, %d", p.Tool, p.GoVersion, p.Cores, runtime.Version(), runtime.NumCPU())
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil && p.Kernel != strings.TrimSpace(string(b)) {
		t.Errorf("kernel %q, want %q", p.Kernel, strings.TrimSpace(string(b)))
	}
	if p.MemBytes <= 0 || p.StartedAt.IsZero() || p.Host == "" {
		t.Errorf("mem %d, started %v, host %q: want all filled", p.MemBytes, p.StartedAt, p.Host)
	}
	if strings.Contains(strings.Join(p.Args, " "), "hunter2") {
		t.Errorf("args %q keep the secret", p.Args)
	}
	// Inside a git checkout the commit is git's (the test binary carries no
	// vcs stamp), marked when the tree is dirty; elsewhere "unknown".
	if out, err := exec.Command("git", "rev-parse", "HEAD").Output(); err == nil {
		head := strings.TrimSpace(string(out))
		if p.Commit != head && p.Commit != head+"+dirty" {
			t.Errorf("commit %q, want git's %s (+dirty when modified)", p.Commit, head)
		}
	} else if p.Commit != "unknown" {
		t.Errorf("commit %q outside a git checkout, want unknown", p.Commit)
	}
}

// The /proc readers take the first matching line and give "" or 0 for
// files without it (a truncated or foreign file), never a wrong figure.
func TestReaders(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tt := range []struct {
		name, body string
		model      string
		mem        int64
	}{
		{"real", "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Processor\nflags\t: fpu\nprocessor\t: 1\nmodel name\t: other\n", "Intel(R) Xeon(R) Processor", 0},
		{"meminfo", "MemTotal:       24684084 kB\nMemFree:        1 kB\n", "", 24684084 * 1024},
		{"truncated", "model na", "", 0},
		{"no unit", "MemTotal: 12\n", "", 0},
		{"empty", "", "", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := write(tt.name, tt.body)
			if got := cpuModel(p); got != tt.model {
				t.Errorf("cpuModel = %q, want %q", got, tt.model)
			}
			if got := memTotal(p); got != tt.mem {
				t.Errorf("memTotal = %d, want %d", got, tt.mem)
			}
		})
	}
	if cpuModel(filepath.Join(dir, "missing")) != "" || memTotal(filepath.Join(dir, "missing")) != 0 {
		t.Error("a missing file gave a figure")
	}
}
