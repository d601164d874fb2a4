// Package unpack writes container image layers into a root directory
// without letting any entry reach outside it.
//
// Image layers are untrusted input: a layer can place a symlink to a host
// path and then a file, hard link or directory "through" it. Every path
// here is resolved inside the root by github.com/cyphar/filepath-securejoin's
// pathrs-lite (openat2 with RESOLVE_IN_ROOT where the kernel has it, its
// checked fallback where not), so a symlink in the image is followed the
// way the container will see it, as if the root were /. The last component
// of each entry is then created, linked, chowned and chmoded relative to
// its parent directory's handle, never following a symlink it finds there:
// an existing symlink at an entry's own name is replaced, not written
// through.
//
// OCI whiteouts are applied layer by layer: ".wh.NAME" removes NAME from
// the layers below, ".wh..wh..opq" empties its directory of what the layers
// below put there.
package unpack

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	pathrs "github.com/cyphar/filepath-securejoin/pathrs-lite"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"golang.org/x/sys/unix"
)

// DefaultMaxBytes is the default cap on the bytes of regular files one
// unpack writes: a layer that decompresses beyond it is refused rather
// than allowed to fill the host's disk.
const DefaultMaxBytes int64 = 8 << 30

// ErrTooLarge is returned when the layers hold more file bytes than
// Options.MaxBytes allows.
var ErrTooLarge = errors.New("image too large to unpack")

// Options tune an unpack. The zero value is what the runc launcher uses.
type Options struct {
	// MaxBytes caps the bytes of regular files written, across all layers
	// of one call (0 = DefaultMaxBytes).
	MaxBytes int64
}

// Stats counts what an unpack wrote.
type Stats struct {
	Files, Dirs, Symlinks, Links int
	// Whiteouts counts whiteout entries applied (each removes a path or
	// empties a directory).
	Whiteouts int
	// Skipped counts entries not written: device nodes and fifos (the
	// runtime provides /dev), and types a root filesystem has no use for.
	Skipped int
	// Bytes is the size of the regular files written.
	Bytes int64
}

func (s *Stats) add(o Stats) {
	s.Files += o.Files
	s.Dirs += o.Dirs
	s.Symlinks += o.Symlinks
	s.Links += o.Links
	s.Whiteouts += o.Whiteouts
	s.Skipped += o.Skipped
	s.Bytes += o.Bytes
}

// Image unpacks img's layers into root, the lowest first, applying each
// layer's whiteouts to the ones below. root must exist.
func Image(ctx context.Context, root string, img v1.Image, o Options) (Stats, error) {
	var total Stats
	layers, err := img.Layers()
	if err != nil {
		return total, fmt.Errorf("read image layers: %w", err)
	}
	u, err := open(root, o)
	if err != nil {
		return total, err
	}
	defer u.close()
	for i, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			return total, fmt.Errorf("open layer %d: %w", i, err)
		}
		st, err := u.layer(ctx, rc)
		rc.Close()
		total.add(st)
		if err != nil {
			d, _ := l.Digest()
			return total, fmt.Errorf("unpack layer %d (%s): %w", i, d, err)
		}
	}
	return total, nil
}

// Layer applies one uncompressed layer (a tar stream) on top of what root
// holds. root must exist.
func Layer(ctx context.Context, root string, r io.Reader, o Options) (Stats, error) {
	u, err := open(root, o)
	if err != nil {
		return Stats{}, err
	}
	defer u.close()
	return u.layer(ctx, r)
}

// unpacker holds the root's handle and what is left of the byte budget.
type unpacker struct {
	root  *os.File // O_PATH directory handle
	left  int64
	chown bool // only root can give files away
}

func open(root string, o Options) (*unpacker, error) {
	f, err := os.OpenFile(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open unpack root: %w", err)
	}
	u := &unpacker{root: f, left: o.MaxBytes, chown: os.Geteuid() == 0}
	if u.left <= 0 {
		u.left = DefaultMaxBytes
	}
	return u, nil
}

func (u *unpacker) close() { u.root.Close() }

const (
	whiteoutPrefix = ".wh."
	opaqueMarker   = ".wh..wh..opq"
)

// layer applies one tar stream. written holds the paths this layer put
// there, which its own whiteouts leave alone (OCI image spec: a whiteout
// hides only what the layers below hold).
func (u *unpacker) layer(ctx context.Context, r io.Reader) (Stats, error) {
	var st Stats
	tr := tar.NewReader(r)
	written := map[string]bool{}
	var opaque []string // directories to empty once the layer is read
	for {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return st, fmt.Errorf("read layer: %w", err)
		}
		rel := clean(h.Name)
		if rel == "" {
			continue // the root itself: its owner and mode are ours
		}
		dir, base := split(rel)
		switch {
		case base == opaqueMarker:
			opaque = append(opaque, dir)
			st.Whiteouts++
			continue
		case strings.HasPrefix(base, whiteoutPrefix):
			target := strings.TrimPrefix(base, whiteoutPrefix)
			if !plainName(target) {
				// ".wh.." would whiteout the root's parent: the layer is
				// hostile or broken, and nothing of it is applied further.
				return st, fmt.Errorf("whiteout %s: %q is not a name in its directory", h.Name, target)
			}
			name := path.Join(dir, target)
			if !written[name] {
				if err := u.remove(name); err != nil {
					return st, fmt.Errorf("whiteout %s: %w", h.Name, err)
				}
			}
			st.Whiteouts++
			continue
		}
		if err := u.entry(h, tr, dir, base, &st); err != nil {
			return st, fmt.Errorf("%s: %w", h.Name, err)
		}
		written[rel] = true
	}
	for _, d := range opaque {
		if err := u.empty(d, written); err != nil {
			return st, fmt.Errorf("opaque whiteout in %s: %w", "/"+d, err)
		}
	}
	return st, nil
}

// clean turns a tar name into a path relative to the root, without any
// ".." left: "/a/../../b" and "../b" are both "b" (as a container sees
// them). The root itself is "".
func clean(name string) string {
	return strings.TrimPrefix(path.Clean("/"+name), "/")
}

// split splits a cleaned relative path into its directory ("" for the
// root) and last component.
func split(rel string) (dir, base string) {
	dir, base = path.Split(rel)
	return strings.TrimSuffix(dir, "/"), base
}

// entry writes one non-whiteout entry named base in directory dir (both
// relative to the root).
func (u *unpacker) entry(h *tar.Header, r io.Reader, dir, base string, st *Stats) error {
	switch h.Typeflag {
	case tar.TypeReg, tar.TypeDir, tar.TypeSymlink, tar.TypeLink:
	default:
		st.Skipped++ // devices, fifos, sparse and unknown types
		return nil
	}
	// The parent, created as needed, resolved inside the root.
	parent, err := u.mkdirAll(dir)
	if err != nil {
		return fmt.Errorf("make parent directory: %w", err)
	}
	defer parent.Close()
	pfd := int(parent.Fd())

	var existing unix.Stat_t
	exists := unix.Fstatat(pfd, base, &existing, unix.AT_SYMLINK_NOFOLLOW) == nil
	isDir := exists && existing.Mode&unix.S_IFMT == unix.S_IFDIR
	if exists && !(h.Typeflag == tar.TypeDir && isDir) {
		// Replace whatever is there, a symlink included: never write
		// through it.
		if err := removeAt(pfd, base); err != nil {
			return fmt.Errorf("replace existing entry: %w", err)
		}
	}
	mode := uint32(h.Mode) & 0o7777
	switch h.Typeflag {
	case tar.TypeDir:
		if !isDir {
			if err := unix.Mkdirat(pfd, base, 0o700); err != nil {
				return fmt.Errorf("mkdir: %w", err)
			}
		}
		fd, err := unix.Openat(pfd, base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open directory: %w", err)
		}
		defer unix.Close(fd)
		st.Dirs++
		return u.setOwnerMode(fd, h, mode)
	case tar.TypeReg:
		fd, err := unix.Openat(pfd, base, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return fmt.Errorf("create file: %w", err)
		}
		f := os.NewFile(uintptr(fd), base)
		defer f.Close()
		if h.Size > u.left {
			return fmt.Errorf("%w: %d bytes in this file, %d left of the limit", ErrTooLarge, h.Size, u.left)
		}
		n, err := io.Copy(f, io.LimitReader(r, h.Size))
		u.left -= n
		st.Bytes += n
		if err != nil {
			return fmt.Errorf("write file: %w", err)
		}
		if n != h.Size {
			return fmt.Errorf("write file: %w after %d of %d bytes", io.ErrUnexpectedEOF, n, h.Size)
		}
		st.Files++
		return u.setOwnerMode(fd, h, mode)
	case tar.TypeSymlink:
		// The target is stored as given: the container resolves it in its
		// own root, and so does this package for later entries.
		if err := unix.Symlinkat(h.Linkname, pfd, base); err != nil {
			return fmt.Errorf("symlink: %w", err)
		}
		st.Symlinks++
		if u.chown {
			if err := unix.Fchownat(pfd, base, h.Uid, h.Gid, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				return fmt.Errorf("chown symlink: %w", err)
			}
		}
		return nil
	case tar.TypeLink:
		// The link's source, resolved inside the root like any path; its
		// last component is linked as it is (a symlink stays a symlink).
		// The inode keeps the owner and mode its own entry gave it.
		src := clean(h.Linkname)
		if src == "" {
			return fmt.Errorf("hard link to the root directory")
		}
		sdir, sbase := split(src)
		sparent, err := u.openIn(sdir)
		if err != nil {
			return fmt.Errorf("hard link target %s: %w", h.Linkname, err)
		}
		defer sparent.Close()
		if err := unix.Linkat(int(sparent.Fd()), sbase, pfd, base, 0); err != nil {
			return fmt.Errorf("hard link to %s: %w", h.Linkname, err)
		}
		st.Links++
		return nil
	}
	return nil
}

// setOwnerMode gives an open file or directory the header's owner and
// mode: the mode after the owner, since chown clears set-id bits.
func (u *unpacker) setOwnerMode(fd int, h *tar.Header, mode uint32) error {
	if u.chown {
		if err := unix.Fchown(fd, h.Uid, h.Gid); err != nil {
			return fmt.Errorf("chown: %w", err)
		}
	}
	if err := unix.Fchmod(fd, mode); err != nil {
		return fmt.Errorf("chmod: %w", err)
	}
	return nil
}

// mkdirAll returns an O_PATH handle on directory dir inside the root,
// creating what is missing (0755, owned by us) and following the image's
// symlinks as if the root were /.
func (u *unpacker) mkdirAll(dir string) (*os.File, error) {
	return pathrs.MkdirAllHandle(u.root, dir, 0o755)
}

// openIn returns an O_PATH handle on name inside the root (the root itself
// for ""), following the image's symlinks as if the root were /.
func (u *unpacker) openIn(name string) (*os.File, error) {
	if name == "" {
		name = "."
	}
	return pathrs.OpenatInRoot(u.root, name)
}

// remove deletes name (relative to the root) and all below it; a missing
// name or parent is not an error.
func (u *unpacker) remove(name string) error {
	dir, base := split(name)
	parent, err := u.openIn(dir)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return nil
	}
	if err != nil {
		return err
	}
	defer parent.Close()
	return removeAt(int(parent.Fd()), base)
}

// empty removes what directory dir holds, except the paths in keep.
func (u *unpacker) empty(dir string, keep map[string]bool) error {
	d, err := u.openIn(dir)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return err
	}
	defer d.Close()
	names, err := readDirNames(int(d.Fd()), ".")
	if err != nil {
		return err
	}
	for _, n := range names {
		if keep[path.Join(dir, n)] {
			continue
		}
		if err := removeAt(int(d.Fd()), n); err != nil {
			return err
		}
	}
	return nil
}

// removeAt removes name in directory dirfd and, for a directory, all below
// it, never following a symlink.
func removeAt(dirfd int, name string) error {
	if !plainName(name) {
		return fmt.Errorf("remove %q: not a name in its directory", name)
	}
	err := unix.Unlinkat(dirfd, name, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	if !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EPERM) {
		return fmt.Errorf("remove %s: %w", name, err)
	}
	names, err := readDirNames(dirfd, name)
	if err != nil {
		return err
	}
	fd, err := unix.Openat(dirfd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", name, err)
	}
	for _, n := range names {
		if err := removeAt(fd, n); err != nil {
			unix.Close(fd)
			return err
		}
	}
	unix.Close(fd)
	if err := unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR); err != nil {
		return fmt.Errorf("remove directory %s: %w", name, err)
	}
	return nil
}

// plainName reports whether name is one path component naming an entry of
// its directory: not empty, ".", ".." or anything with a slash.
func plainName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.Contains(name, "/")
}

// readDirNames lists directory name in dirfd without following a symlink.
func readDirNames(dirfd int, name string) ([]string, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open directory %s: %w", name, err)
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("list directory %s: %w", name, err)
	}
	return names, nil
}

// ReadFile reads the file name inside root (an unpacked image), resolving
// every symlink on the way as if root were /: an image's /etc/passwd that
// is a symlink to a host path reads the root's copy of that path, never
// the host's.
func ReadFile(root, name string) ([]byte, error) {
	h, err := pathrs.OpenInRoot(root, name)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	f, err := pathrs.Reopen(h, unix.O_RDONLY|unix.O_CLOEXEC)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, 16<<20))
}
