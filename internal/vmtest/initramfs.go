package vmtest

import (
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/cavaliergopher/cpio"

	"github.com/coldstart-go/coldstart/internal/elfdeps"
)

// Initramfs is the guest's whole userland: files copied from the host,
// files with given contents and symlinks, written as one newc cpio archive
// the kernel unpacks into its root filesystem. The archive is not
// compressed: under TCG the guest's gunzip costs more than the host's
// copying a larger file into guest memory.
type Initramfs struct {
	entries map[string]entry // by guest path, absolute and clean
}

type entry struct {
	src  string // host file to copy ("" = data)
	data []byte
	link string // symlink target
	mode os.FileMode
}

// NewInitramfs returns an empty archive.
func NewInitramfs() *Initramfs { return &Initramfs{entries: map[string]entry{}} }

func (r *Initramfs) put(guest string, e entry) error {
	if !path.IsAbs(guest) || path.Clean(guest) != guest || guest == "/" {
		return fmt.Errorf("initramfs: guest path %q: want a clean absolute path", guest)
	}
	r.entries[guest] = e
	return nil
}

// AddFile copies the host file src to guest path dst with mode perm.
func (r *Initramfs) AddFile(dst, src string, perm os.FileMode) error {
	fi, err := os.Stat(src)
	if err != nil {
		return fmt.Errorf("initramfs: add %s: %w", src, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("initramfs: add %s: not a regular file", src)
	}
	return r.put(dst, entry{src: src, mode: perm})
}

// AddData writes data to guest path dst with mode perm.
func (r *Initramfs) AddData(dst string, data []byte, perm os.FileMode) error {
	return r.put(dst, entry{data: slices.Clone(data), mode: perm})
}

// AddSymlink makes guest path dst a symlink to target.
func (r *Initramfs) AddSymlink(dst, target string) error {
	return r.put(dst, entry{link: target})
}

// AddBinary copies the host executable src to dst and, when it is
// dynamically linked, also its ELF interpreter and the shared libraries it
// needs (recursively), each at its host path: a default `go build` with cgo
// links libc, and the guest has no other copy of it.
func (r *Initramfs) AddBinary(dst, src string) error {
	if err := r.AddFile(dst, src, 0o755); err != nil {
		return err
	}
	return r.addLibraries(src)
}

func (r *Initramfs) addLibraries(bin string) error {
	deps, missing, err := elfdeps.Needed(bin)
	if err != nil {
		return fmt.Errorf("initramfs: %w", err)
	}
	if len(missing) > 0 {
		return fmt.Errorf("initramfs: %s needs %s, not found in %s", bin, strings.Join(missing, ", "), strings.Join(elfdeps.Dirs, ", "))
	}
	for _, d := range deps {
		// Keep the path the binary names (often a symlink, such as
		// /lib64/ld-linux-x86-64.so.2), holding the real file's bytes.
		if err := r.AddFile(d.Path, d.Real, 0o755); err != nil {
			return err
		}
	}
	return nil
}

// WriteTo writes the archive as newc cpio: every parent directory first
// (mode 0755), then the entries in path order.
func (r *Initramfs) WriteTo(w io.Writer) (int64, error) {
	cw := &countWriter{w: w}
	out := cpio.NewWriter(cw)
	dirs := map[string]bool{}
	var names []string
	for name := range r.entries {
		names = append(names, name)
		for d := path.Dir(name); d != "/"; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	for d := range dirs {
		if _, ok := r.entries[d]; ok {
			return cw.n, fmt.Errorf("initramfs: %s is both a directory and a file", d)
		}
		names = append(names, d)
	}
	slices.Sort(names) // a parent sorts before its children
	for i, name := range names {
		hdr := &cpio.Header{Name: strings.TrimPrefix(name, "/"), Links: 1}
		hdr.Inode = int64(i + 1)
		e, isFile := r.entries[name]
		var (
			body io.Reader
			file *os.File
		)
		switch {
		case !isFile:
			hdr.Mode, hdr.Links = cpio.TypeDir|0o755, 2
		case e.link != "":
			hdr.Mode, hdr.Size = cpio.TypeSymlink|0o777, int64(len(e.link))
			body = strings.NewReader(e.link)
		case e.src != "":
			f, err := os.Open(e.src)
			if err != nil {
				return cw.n, fmt.Errorf("initramfs: %w", err)
			}
			file = f
			fi, err := f.Stat()
			if err != nil {
				f.Close()
				return cw.n, fmt.Errorf("initramfs: %w", err)
			}
			hdr.Mode, hdr.Size = cpio.TypeReg|cpio.FileMode(e.mode.Perm()), fi.Size()
			body = f
		default:
			hdr.Mode, hdr.Size = cpio.TypeReg|cpio.FileMode(e.mode.Perm()), int64(len(e.data))
			body = strings.NewReader(string(e.data))
		}
		err := out.WriteHeader(hdr)
		if err == nil && body != nil {
			var n int64
			if n, err = io.Copy(out, body); err == nil && n != hdr.Size {
				err = fmt.Errorf("%d of %d bytes (changed while being copied?)", n, hdr.Size)
			}
		}
		if file != nil {
			file.Close()
		}
		if err != nil {
			return cw.n, fmt.Errorf("initramfs: write %s: %w", name, err)
		}
	}
	if err := out.Close(); err != nil {
		return cw.n, fmt.Errorf("initramfs: finish archive: %w", err)
	}
	return cw.n, nil
}

// WriteFile writes the archive to file.
func (r *Initramfs) WriteFile(file string) error {
	f, err := os.Create(file)
	if err != nil {
		return fmt.Errorf("initramfs: %w", err)
	}
	if _, err := r.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
