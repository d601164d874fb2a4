// Package vmtest boots one of Debian's own kernels under qemu (TCG, no KVM)
// with an initramfs of static programs as its whole userland, runs a plan
// of commands there and reads what they did from the serial console: for
// tests that need a kernel of their own, such as coldstart's budgets on
// pure cgroup v2 where the host is cgroup v1 hybrid.
//
// scripts/vm-kernel.sh fetches the kernels (apt-get download, dpkg-deb -x;
// nothing installed) and a static busybox into CacheDir; Debian's
// qemu-system-x86 runs them (scripts/test-setup.sh installs it). The guest's
// /init is ./guestinit. The guest loads no kernel modules: its console is
// the 8250 UART on ttyS0 and its only disk the initramfs, both built into
// Debian's kernels, as are cgroup2, its controllers and loopback.
package vmtest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// QEMU is the emulator's command name (Debian's qemu-system-x86).
const QEMU = "qemu-system-x86_64"

// ErrMissing is wrapped by errors for a missing emulator, kernel or busybox;
// the message says how to get it.
var ErrMissing = errors.New("not installed")

// CacheDir is where scripts/vm-kernel.sh puts the kernels and busybox:
// $COLDSTART_VM_CACHE, else ${XDG_CACHE_HOME:-~/.cache}/coldstart/vm.
func CacheDir() string {
	if d := os.Getenv("COLDSTART_VM_CACHE"); d != "" {
		return d
	}
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			home = os.TempDir()
		}
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "coldstart", "vm")
}

// Kernel is one guest kernel in the cache.
type Kernel struct {
	// Series is what vm-kernel.sh was asked for: "6.12", "6.1".
	Series string
	// Package is the Debian package and version it came from.
	Package string
	// Path is its vmlinuz.
	Path string
}

const fetchHint = "run scripts/vm-kernel.sh (it fetches Debian's linux-image-amd64 and busybox-static with apt-get download into %s; nothing is installed)"

// Kernels lists the kernels in dir (CacheDir's layout: kernel-SERIES/vmlinuz),
// newest series first.
func Kernels(dir string) ([]Kernel, error) {
	links, _ := filepath.Glob(filepath.Join(dir, "kernel-*"))
	var out []Kernel
	for _, l := range links {
		k := Kernel{Series: strings.TrimPrefix(filepath.Base(l), "kernel-"), Path: filepath.Join(l, "vmlinuz")}
		if _, err := os.Stat(k.Path); err != nil {
			continue
		}
		if v, err := os.ReadFile(filepath.Join(l, "version")); err == nil {
			k.Package = strings.TrimSpace(string(v))
		}
		out = append(out, k)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("guest kernel %w in %s: "+fetchHint, ErrMissing, dir, dir)
	}
	slices.SortFunc(out, func(a, b Kernel) int { return -compareSeries(a.Series, b.Series) })
	return out, nil
}

// compareSeries orders "6.1" < "6.12".
func compareSeries(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < min(len(as), len(bs)); i++ {
		var x, y int
		fmt.Sscan(as[i], &x)
		fmt.Sscan(bs[i], &y)
		if x != y {
			return x - y
		}
	}
	return len(as) - len(bs)
}

// Busybox returns the static busybox in dir, which gives the guest /bin/sh,
// grep, sleep and the rest that tests start as child processes.
func Busybox(dir string) (string, error) {
	p := filepath.Join(dir, "busybox")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("busybox %w in %s: "+fetchHint, ErrMissing, dir, dir)
	}
	return p, nil
}

// LookQEMU finds the emulator on PATH.
func LookQEMU() (string, error) {
	p, err := exec.LookPath(QEMU)
	if err != nil {
		return "", fmt.Errorf("%s %w: install Debian's qemu-system-x86 (sudo scripts/test-setup.sh, or apt-get install --no-install-recommends qemu-system-x86)", QEMU, ErrMissing)
	}
	return p, nil
}
