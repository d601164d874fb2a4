// Package provenance records where, when and how a measurement was taken:
// host, kernel, CPU, Go version, tool version and commit, and the command line.
package provenance

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/containerd/cgroups/v3"
)

// Provenance is attached to every results file.
type Provenance struct {
	Tool string `json:"tool"`
	// ToolVersion is ToolVersion(): a module version, or "devel" and the
	// commit for a build that names none.
	ToolVersion string    `json:"tool_version"`
	Commit      string    `json:"commit"` // of the coldstart checkout; "+dirty" when modified
	GoVersion   string    `json:"go_version"`
	Host        string    `json:"host"`
	Kernel      string    `json:"kernel"`
	CPUModel    string    `json:"cpu_model"`
	Cores       int       `json:"cores"`
	MemBytes    int64     `json:"mem_bytes"`
	CgroupMode  string    `json:"cgroup_mode,omitempty"`
	StartedAt   time.Time `json:"started_at"`
	Args        []string  `json:"args"`
	// Notes are free-form facts a run adds (e.g. "upx 4.2.2", cluster versions).
	Notes map[string]string `json:"notes,omitempty"`
}

// Collect reads the provenance of this process and machine now. Secret
// values in args are replaced (see RedactArgs).
func Collect(tool string, args []string) Provenance {
	p := Provenance{
		Tool:      tool,
		GoVersion: runtime.Version(),
		Cores:     runtime.NumCPU(),
		StartedAt: time.Now().UTC(),
		Args:      RedactArgs(args),
	}
	p.Host, _ = os.Hostname()
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		p.Kernel = strings.TrimSpace(string(b))
	}
	p.CPUModel = cpuModel("/proc/cpuinfo")
	p.MemBytes = memTotal("/proc/meminfo")
	p.CgroupMode = cgroupMode()
	p.ToolVersion = ToolVersion()
	p.Commit = Commit()
	return p
}

// cgroupMode names the host's cgroup layout as containerd's cgroups sees
// it: v1, hybrid (v1 controllers beside an empty cgroup2), v2 or none.
func cgroupMode() string {
	switch cgroups.Mode() {
	case cgroups.Legacy:
		return "v1"
	case cgroups.Hybrid:
		return "hybrid"
	case cgroups.Unified:
		return "v2"
	}
	return "none"
}

// gitCommit asks git for the checkout's commit when the binary does not
// carry it (go run, go test, or -buildvcs=false); Commit calls it once.
func gitCommit() string {
	out, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(bytes.TrimSpace(st)) > 0 {
		c += "+dirty"
	}
	return c
}

func cpuModel(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func memTotal(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		var kb int64
		if _, err := fmt.Sscanf(line, "MemTotal: %d kB", &kb); err == nil {
			return kb * 1024
		}
	}
	return 0
}
