// Package pagecache evicts a server's files from the page cache, so that a
// start reads them from disk as the first start on a node does, and counts
// how many of their pages are resident. It evicts file by file with
// posix_fadvise(POSIX_FADV_DONTNEED), never with a global drop_caches, so
// nothing else on the machine loses its cache.
package pagecache

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/coldstart-go/coldstart/internal/elfdeps"
)

// mincore fills vec with one byte per page of m, bit 0 set when resident.
// golang.org/x/sys/unix has the syscall number but no wrapper on Linux.
func mincore(m, vec []byte) error {
	_, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0])))
	if e != 0 {
		return e
	}
	return nil
}

// Pages counts a set of files' pages.
type Pages struct {
	// Resident is how many pages are in the page cache.
	Resident int64 `json:"resident_pages"`
	// Total is how many pages the files span.
	Total int64 `json:"file_pages"`
}

// Add sums two counts.
func (p Pages) Add(q Pages) Pages { return Pages{p.Resident + q.Resident, p.Total + q.Total} }

// Resident counts the resident pages of each file in paths (mmap, then
// mincore); empty files count nothing.
func Resident(paths ...string) (Pages, error) {
	var sum Pages
	for _, p := range paths {
		n, err := resident(p)
		if err != nil {
			return sum, err
		}
		sum = sum.Add(n)
	}
	return sum, nil
}

func resident(path string) (Pages, error) {
	f, err := os.Open(path)
	if err != nil {
		return Pages{}, fmt.Errorf("count resident pages of %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Pages{}, fmt.Errorf("count resident pages of %s: %w", path, err)
	}
	size := fi.Size()
	if size == 0 || !fi.Mode().IsRegular() {
		return Pages{}, nil
	}
	// Mapping does not fault anything in; mincore only reads the state.
	m, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return Pages{}, fmt.Errorf("map %s: %w", path, err)
	}
	defer unix.Munmap(m)
	ps := int64(os.Getpagesize())
	vec := make([]byte, (size+ps-1)/ps)
	if err := mincore(m, vec); err != nil {
		return Pages{}, fmt.Errorf("mincore %s: %w", path, err)
	}
	var n int64
	for _, v := range vec {
		n += int64(v & 1)
	}
	return Pages{Resident: n, Total: int64(len(vec))}, nil
}

// Evict writes back and drops each file's cached pages. Pages that a
// running process has mapped stay (the kernel keeps them), which Resident
// afterwards shows.
func Evict(paths ...string) error {
	var errs []error
	for _, p := range paths {
		errs = append(errs, evict(p))
	}
	return errors.Join(errs...)
}

func evict(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("evict %s: %w", path, err)
	}
	defer f.Close()
	// Dirty pages are not dropped: write them back first (a freshly
	// unpacked binary is all dirty).
	if err := unix.Fdatasync(int(f.Fd())); err != nil {
		return fmt.Errorf("evict %s: fdatasync: %w", path, err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("evict %s: fadvise: %w", path, err)
	}
	return nil
}

// Tree lists the regular files under dir (an unpacked root filesystem).
func Tree(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list files under %s: %w", dir, err)
	}
	return out, nil
}

// Files is what starting bin reads: bin itself, its ELF interpreter and the
// shared libraries it needs, transitively, found in the loader's standard
// directories (a library not found there is left out). A static binary is
// just itself. Paths are resolved, each listed once.
func Files(bin string) ([]string, error) {
	real, err := filepath.EvalSymlinks(bin)
	if err != nil {
		return nil, fmt.Errorf("list files of %s: %w", bin, err)
	}
	deps, _, err := elfdeps.Needed(real)
	if err != nil {
		return nil, fmt.Errorf("list files of %s: %w", bin, err)
	}
	out := []string{real}
	seen := map[string]bool{real: true}
	for _, d := range deps {
		if !seen[d.Real] {
			seen[d.Real] = true
			out = append(out, d.Real)
		}
	}
	return out, nil
}

// Eviction is what one eviction found: the files' pages resident before
// and after it.
type Eviction struct {
	Before Pages `json:"before"`
	After  Pages `json:"after"`
}

// EvictCounted counts the resident pages of paths, evicts them, and counts
// again.
func EvictCounted(paths ...string) (Eviction, error) {
	var e Eviction
	var err error
	if e.Before, err = Resident(paths...); err != nil {
		return e, err
	}
	if err := Evict(paths...); err != nil {
		return e, err
	}
	if e.After, err = Resident(paths...); err != nil {
		return e, err
	}
	return e, nil
}
