// Package elfdeps lists what the dynamic loader needs to start an ELF
// binary: its interpreter and the shared libraries it names, transitively,
// found in the loader's standard directories. A default `go build` with cgo
// links libc dynamically; a copy of such a binary elsewhere (an image, a
// guest's initramfs) needs these files too, and page-cache accounting
// counts them.
package elfdeps

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// File is one file the loader needs.
type File struct {
	// Path is where the loader looks for it: the binary's PT_INTERP, or
	// DIR/SONAME in the first of Dirs that holds it. A copy of the binary
	// elsewhere needs the file at this path.
	Path string
	// Real is Path with every symlink resolved: the bytes to copy.
	Real string
}

// Dirs are where the dynamic loader looks on the Debian and Fedora family
// (ld.so.cache aside), in order.
var Dirs = []string{
	"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
	"/lib64", "/usr/lib64", "/lib", "/usr/lib",
}

// Needed returns the interpreter and shared libraries bin needs,
// transitively, in the order found: none for a static binary or a file that
// is not ELF. Libraries found in none of Dirs are returned in missing (by
// soname); it is up to the caller whether that is an error.
func Needed(bin string) (files []File, missing []string, err error) {
	seen := map[string]bool{}   // by Path
	walked := map[string]bool{} // by Real
	var walk func(real string) error
	add := func(p string) error {
		if seen[p] {
			return nil
		}
		seen[p] = true
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			return fmt.Errorf("resolve %s (needed by %s): %w", p, bin, err)
		}
		files = append(files, File{Path: p, Real: real})
		return walk(real)
	}
	walk = func(real string) error {
		if walked[real] {
			return nil
		}
		walked[real] = true
		f, err := elf.Open(real)
		if err != nil {
			return nil // not ELF (a script, a data file): nothing more
		}
		defer f.Close()
		for _, p := range f.Progs {
			if p.Type != elf.PT_INTERP {
				continue
			}
			b := make([]byte, p.Filesz)
			if _, err := p.ReadAt(b, 0); err != nil {
				return fmt.Errorf("read interpreter of %s: %w", real, err)
			}
			for len(b) > 0 && b[len(b)-1] == 0 {
				b = b[:len(b)-1]
			}
			if err := add(string(b)); err != nil {
				return err
			}
		}
		libs, err := f.ImportedLibraries()
		if err != nil && !errors.Is(err, elf.ErrNoSymbols) {
			return fmt.Errorf("read libraries of %s: %w", real, err)
		}
		for _, l := range libs {
			found := ""
			for _, d := range Dirs {
				if _, err := os.Stat(filepath.Join(d, l)); err == nil {
					found = filepath.Join(d, l)
					break
				}
			}
			if found == "" {
				if !seen["missing:"+l] {
					seen["missing:"+l] = true
					missing = append(missing, l)
				}
				continue
			}
			if err := add(found); err != nil {
				return err
			}
		}
		return nil
	}
	real, err := filepath.EvalSymlinks(bin)
	if err != nil {
		return nil, nil, fmt.Errorf("list libraries of %s: %w", bin, err)
	}
	if err := walk(real); err != nil {
		return nil, nil, err
	}
	return files, missing, nil
}
