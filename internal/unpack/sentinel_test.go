package unpack

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// entry is one tar entry a test writes; Size -1 means len(Body).
type entry struct {
	Type     byte
	Name     string
	Linkname string
	Body     string
	Mode     int64
	Uid, Gid int
	Size     int64
	Devmajor int64
	// Truncate ends the stream after this header, before its body (a
	// header claiming a huge size).
	Truncate bool
}

// tarOf writes entries as a tar stream. Headers are written as given, even
// when hostile; only what archive/tar itself refuses to write is dropped.
func tarOf(t testing.TB, entries []entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{
			Typeflag: e.Type, Name: e.Name, Linkname: e.Linkname, Mode: e.Mode,
			Uid: e.Uid, Gid: e.Gid, Size: e.Size, Devmajor: e.Devmajor, Format: tar.FormatPAX,
		}
		if h.Mode == 0 {
			h.Mode = 0o644
			if e.Type == tar.TypeDir {
				h.Mode = 0o755
			}
		}
		if e.Type == tar.TypeReg && e.Size == 0 {
			h.Size = int64(len(e.Body))
		}
		if err := tw.WriteHeader(h); err != nil {
			continue
		}
		if e.Truncate {
			tw.Flush() // reports the missing body; the header is out
			return buf.Bytes()
		}
		if e.Type == tar.TypeReg && e.Body != "" {
			if _, err := tw.Write([]byte(e.Body)); err != nil {
				t.Fatalf("write %s: %v", e.Name, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatalf("close tar: %v", err)
	}
	return buf.Bytes()
}

// hostTree is a directory tree beside the unpack root, standing for the
// host: nothing an unpack does may change it.
type hostTree struct {
	Base string // holds root/ and host/
	Root string // where layers are unpacked
	Host string // the sentinel tree
}

// hostOwner is the sentinel files' owner (as root), distinct from every
// owner the hostile streams use.
const hostOwner = 1001

// newHostTree makes base/host with a file, a directory with a file in it,
// a symlink, an executable and a fifo, with distinct modes and (as root)
// owners, and an empty base/root.
func newHostTree(t testing.TB) hostTree {
	t.Helper()
	base := t.TempDir()
	h := hostTree{Base: base, Root: filepath.Join(base, "root"), Host: filepath.Join(base, "host")}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Mkdir(h.Root, 0o755))
	must(os.Mkdir(h.Host, 0o750))
	must(os.WriteFile(filepath.Join(h.Host, "file"), []byte("host file\n"), 0o640))
	must(os.Mkdir(filepath.Join(h.Host, "dir"), 0o711))
	must(os.WriteFile(filepath.Join(h.Host, "dir", "victim"), []byte("host victim\n"), 0o600))
	must(os.WriteFile(filepath.Join(h.Host, "bin"), []byte("#!/bin/sh\n"), 0o755))
	must(os.Symlink("file", filepath.Join(h.Host, "link")))
	must(syscall.Mkfifo(filepath.Join(h.Host, "fifo"), 0o600))
	if os.Geteuid() == 0 {
		must(filepath.WalkDir(h.Host, func(p string, _ fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, hostOwner, hostOwner)
		}))
	}
	return h
}

// fileState is what the sentinel check compares for each path.
type fileState struct {
	Mode     string
	Uid, Gid uint32
	Nlink    uint64
	Size     int64
	Ctime    int64 // ns; any chmod, chown, link or write changes it
	SHA256   string
	Link     string
}

// snapshot records every path under Base except the unpack root's
// contents: the host as the unpack must leave it.
func (h hostTree) snapshot(t testing.TB) map[string]fileState {
	t.Helper()
	m := map[string]fileState{}
	err := filepath.WalkDir(h.Base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(h.Base, p)
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		s := fileState{Mode: fi.Mode().String(), Uid: st.Uid, Gid: st.Gid, Nlink: uint64(st.Nlink), Size: st.Size}
		if p == h.Root || p == h.Base {
			// Their contents and times change with every entry; their
			// owner, mode and link count must not.
			s.Nlink, s.Size = 0, 0
		} else {
			s.Ctime = st.Ctim.Nano()
		}
		switch {
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			s.SHA256 = hex.EncodeToString(sum[:8])
		case fi.Mode()&fs.ModeSymlink != 0:
			s.Link, _ = os.Readlink(p)
		}
		m[rel] = s
		if p == h.Root {
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil {
		t.Fatalf("snapshot %s: %v", h.Base, err)
	}
	return m
}

// checkUnchanged fails t when the host tree differs from before.
func (h hostTree) checkUnchanged(t testing.TB, before map[string]fileState) {
	t.Helper()
	if diff := cmp.Diff(before, h.snapshot(t)); diff != "" {
		t.Errorf("the host tree outside the unpack root changed (-before +after):\n%s", diff)
	}
}

// checkRootSafe fails t when the unpacked root holds a device node, or a
// hard link to an inode outside it.
func (h hostTree) checkRootSafe(t testing.TB) {
	t.Helper()
	hostInodes := map[uint64]string{}
	filepath.WalkDir(h.Host, func(p string, _ fs.DirEntry, err error) error {
		var st syscall.Stat_t
		if err == nil && syscall.Lstat(p, &st) == nil {
			hostInodes[st.Ino] = p
		}
		return nil
	})
	filepath.WalkDir(h.Root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		var st syscall.Stat_t
		if syscall.Lstat(p, &st) != nil {
			return nil
		}
		switch st.Mode & syscall.S_IFMT {
		case syscall.S_IFCHR, syscall.S_IFBLK:
			t.Errorf("device node %s in the unpacked root", p)
		}
		if hp, ok := hostInodes[st.Ino]; ok && p != h.Root {
			t.Errorf("%s in the unpacked root is the host's %s (inode %d)", p, hp, st.Ino)
		}
		return nil
	})
}

// hostPath rewrites the placeholder HOST in s to the sentinel tree's path.
func (h hostTree) hostPath(s string) string { return strings.ReplaceAll(s, "HOST", h.Host) }
