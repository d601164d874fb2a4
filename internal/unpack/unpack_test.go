package unpack

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// apply is what the escape tests run: one layer into root.
var apply = func(ctx context.Context, r io.Reader, root string) error {
	_, err := Layer(ctx, root, r, Options{})
	return err
}

// escapes are hostile layers; HOST stands for the sentinel tree's path.
// The first two are the escapes a hand-written untar is open to when it
// resolves names on the host: a hard link made through a symlink the layer
// placed (the host file would be linked into the root and chowned to the
// header's owner), and a regular file whose own name is such a symlink (the
// host file's content would be replaced).
var escapes = []struct {
	name    string
	entries []entry
}{
	{"hard link through a symlink", []entry{
		{Type: tar.TypeSymlink, Name: "evil", Linkname: "HOST/dir"},
		{Type: tar.TypeLink, Name: "h", Linkname: "evil/victim", Uid: 4242, Gid: 4242},
	}},
	{"file written through a symlink of the same name", []entry{
		{Type: tar.TypeSymlink, Name: "evil", Linkname: "HOST/file"},
		{Type: tar.TypeReg, Name: "evil", Body: "pwned\n", Mode: 0o4777, Uid: 4242, Gid: 4242},
	}},
	{"relative symlink out of the root", []entry{
		{Type: tar.TypeSymlink, Name: "up", Linkname: "../host"},
		{Type: tar.TypeReg, Name: "up/file", Body: "pwned\n", Uid: 4242},
		{Type: tar.TypeDir, Name: "up/dir", Mode: 0o777, Uid: 4242},
		{Type: tar.TypeLink, Name: "up/bin2", Linkname: "up/bin"},
	}},
	{"dot-dot and absolute names", []entry{
		{Type: tar.TypeReg, Name: "../host/file", Body: "pwned\n"},
		{Type: tar.TypeReg, Name: "HOST/file", Body: "pwned\n"},
		{Type: tar.TypeDir, Name: "../../", Mode: 0o777},
		{Type: tar.TypeLink, Name: "l", Linkname: "../host/bin"},
		{Type: tar.TypeLink, Name: "l2", Linkname: "HOST/bin"},
	}},
	{"directory entry through a symlink", []entry{
		{Type: tar.TypeSymlink, Name: "d", Linkname: "HOST"},
		{Type: tar.TypeDir, Name: "d/dir", Mode: 0o777, Uid: 4242, Gid: 4242},
		{Type: tar.TypeDir, Name: "d", Mode: 0o777, Uid: 4242, Gid: 4242},
		{Type: tar.TypeReg, Name: "d/new", Body: "x"},
	}},
	{"symlink chain and parent symlinks", []entry{
		{Type: tar.TypeSymlink, Name: "a", Linkname: "b"},
		{Type: tar.TypeSymlink, Name: "b", Linkname: "/../../../../HOST"},
		{Type: tar.TypeReg, Name: "a/dir/victim", Body: "pwned\n", Uid: 4242},
		{Type: tar.TypeSymlink, Name: "a/link", Linkname: "/etc/passwd"},
	}},
	{"whiteouts through a symlink", []entry{
		{Type: tar.TypeSymlink, Name: "w", Linkname: "HOST"},
		{Type: tar.TypeReg, Name: "w/.wh.file"},
		{Type: tar.TypeReg, Name: "w/dir/.wh..wh..opq"},
		{Type: tar.TypeReg, Name: ".wh.../host"},
		{Type: tar.TypeReg, Name: "../.wh.host"},
	}},
	{"hard link to a symlink, then written", []entry{
		{Type: tar.TypeSymlink, Name: "s", Linkname: "HOST/file"},
		{Type: tar.TypeLink, Name: "hl", Linkname: "s"},
		{Type: tar.TypeReg, Name: "hl", Body: "pwned\n"},
		{Type: tar.TypeReg, Name: "s", Body: "pwned\n"},
	}},
	{"device nodes", []entry{
		{Type: tar.TypeBlock, Name: "sda", Devmajor: 8},
		{Type: tar.TypeChar, Name: "mem", Devmajor: 1},
		{Type: tar.TypeFifo, Name: "HOST/fifo"},
	}},
	{"huge size", []entry{
		{Type: tar.TypeSymlink, Name: "big", Linkname: "HOST/file"},
		{Type: tar.TypeReg, Name: "big", Size: 1 << 40, Truncate: true},
	}},
}

func (h hostTree) stream(t testing.TB, entries []entry) []byte {
	es := make([]entry, len(entries))
	for i, e := range entries {
		e.Name, e.Linkname = h.hostPath(e.Name), h.hostPath(e.Linkname)
		es[i] = e
	}
	return tarOf(t, es)
}

// TestEscapes unpacks each hostile layer next to a sentinel tree and checks
// that nothing outside the root changed (contents, modes, owners, link
// counts, ctimes). An error is fine; a change is not.
func TestEscapes(t *testing.T) {
	for _, tt := range escapes {
		t.Run(tt.name, func(t *testing.T) {
			h := newHostTree(t)
			before := h.snapshot(t)
			err := apply(context.Background(), bytes.NewReader(h.stream(t, tt.entries)), h.Root)
			t.Logf("unpack: %v", err)
			h.checkUnchanged(t, before)
			h.checkRootSafe(t)
		})
	}
}

// TestEscapesStayInside checks where the first two escapes land instead:
// inside the root, as the container would see them.
func TestEscapesStayInside(t *testing.T) {
	h := newHostTree(t)
	// The host path, recreated inside the root: the hard link's target as
	// the container resolves it.
	inRoot := filepath.Join(h.Root, h.Host, "dir")
	if err := os.MkdirAll(inRoot, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(inRoot, "victim"), []byte("root's victim\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range escapes[:2] {
		if err := apply(context.Background(), bytes.NewReader(h.stream(t, tt.entries)), h.Root); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
	}
	b, err := os.ReadFile(filepath.Join(h.Root, "h"))
	if err != nil || string(b) != "root's victim\n" {
		t.Errorf("root/h = %q, %v; want the root's own %s/victim", b, err, inRoot)
	}
	fi, err := os.Lstat(filepath.Join(h.Root, "evil"))
	if err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("root/evil: %v, %v; want a regular file replacing the symlink", fi, err)
	}
	if b, _ := os.ReadFile(filepath.Join(h.Root, "evil")); string(b) != "pwned\n" {
		t.Errorf("root/evil = %q, want the layer's content", b)
	}
}

// TestLayer checks what an ordinary layer produces: contents, modes,
// owners, links and symlinks as the headers say.
func TestLayer(t *testing.T) {
	root := t.TempDir()
	layer := tarOf(t, []entry{
		{Type: tar.TypeDir, Name: "etc/", Mode: 0o755},
		{Type: tar.TypeReg, Name: "etc/passwd", Body: "nonroot:x:65532:65532::/:/sbin/nologin\n", Mode: 0o644},
		{Type: tar.TypeReg, Name: "./srv/app/server", Body: "#!/bin/true\n", Mode: 0o4755, Uid: 65532, Gid: 65532},
		{Type: tar.TypeSymlink, Name: "bin", Linkname: "/srv/app", Uid: 7, Gid: 7},
		{Type: tar.TypeLink, Name: "srv/hard", Linkname: "/bin/server"}, // through an absolute in-root symlink
		{Type: tar.TypeDir, Name: "tmp", Mode: 0o1777},
		{Type: tar.TypeChar, Name: "dev/null", Devmajor: 1},
	})
	st, err := Layer(context.Background(), root, bytes.NewReader(layer), Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := Stats{Files: 2, Dirs: 2, Symlinks: 1, Links: 1, Skipped: 1, Bytes: int64(len("nonroot:x:65532:65532::/:/sbin/nologin\n") + len("#!/bin/true\n"))}
	if st != want {
		t.Errorf("Stats = %+v, want %+v", st, want)
	}
	type file struct {
		mode     os.FileMode
		uid, gid uint32
		link     string
	}
	check := func(rel string, want file) {
		t.Helper()
		fi, err := os.Lstat(filepath.Join(root, rel))
		if err != nil {
			t.Error(err)
			return
		}
		st := fi.Sys().(*syscall.Stat_t)
		got := file{mode: fi.Mode(), uid: st.Uid, gid: st.Gid}
		got.link, _ = os.Readlink(filepath.Join(root, rel))
		if os.Geteuid() != 0 {
			got.uid, got.gid, want.uid, want.gid = 0, 0, 0, 0
		}
		if got != want {
			t.Errorf("%s: %+v, want %+v", rel, got, want)
		}
	}
	check("etc/passwd", file{mode: 0o644})
	check("srv/app/server", file{mode: 0o755 | os.ModeSetuid, uid: 65532, gid: 65532})
	check("bin", file{mode: os.ModeSymlink | 0o777, uid: 7, gid: 7, link: "/srv/app"})
	check("tmp", file{mode: os.ModeDir | os.ModeSticky | 0o777})
	check("srv/app", file{mode: os.ModeDir | 0o755}) // made for its file: ours, 0755
	var a, b syscall.Stat_t
	syscall.Stat(filepath.Join(root, "srv/hard"), &a)
	syscall.Stat(filepath.Join(root, "srv/app/server"), &b)
	if a.Ino != b.Ino || a.Nlink != 2 {
		t.Errorf("srv/hard: inode %d nlink %d, want srv/app/server's inode %d, nlink 2", a.Ino, a.Nlink, b.Ino)
	}
	if _, err := os.Lstat(filepath.Join(root, "dev/null")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("dev/null: %v, want not written (the runtime provides /dev)", err)
	}
}

// TestWhiteouts applies three layers: files, then whiteouts of a file and a
// directory and an opaque directory (with a file of its own layer kept),
// then a file replacing a directory and a directory replacing a file.
func TestWhiteouts(t *testing.T) {
	img := empty.Image
	for _, l := range [][]entry{
		{
			{Type: tar.TypeReg, Name: "a/keep", Body: "1"},
			{Type: tar.TypeReg, Name: "a/gone", Body: "1"},
			{Type: tar.TypeReg, Name: "b/x/y", Body: "1"},
			{Type: tar.TypeReg, Name: "o/old1", Body: "1"},
			{Type: tar.TypeReg, Name: "o/sub/old2", Body: "1"},
			{Type: tar.TypeReg, Name: "f", Body: "1"},
			{Type: tar.TypeReg, Name: "d/inside", Body: "1"},
		},
		{
			{Type: tar.TypeReg, Name: "a/.wh.gone"},
			{Type: tar.TypeReg, Name: ".wh.b"},
			{Type: tar.TypeReg, Name: "o/new", Body: "2"},
			{Type: tar.TypeReg, Name: "o/.wh..wh..opq"},
			{Type: tar.TypeReg, Name: "missing/.wh.also"},
		},
		{
			{Type: tar.TypeReg, Name: "d", Body: "3"},
			{Type: tar.TypeDir, Name: "f"},
			{Type: tar.TypeReg, Name: "f/in", Body: "3"},
		},
	} {
		b := tarOf(t, l)
		layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
		if err != nil {
			t.Fatal(err)
		}
		if img, err = mutate.AppendLayers(img, layer); err != nil {
			t.Fatal(err)
		}
	}
	root := t.TempDir()
	st, err := Image(context.Background(), root, img, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Whiteouts != 4 {
		t.Errorf("Whiteouts = %d, want 4", st.Whiteouts)
	}
	var got []string
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			rel, _ := filepath.Rel(root, p)
			got = append(got, rel)
		}
		return nil
	})
	sort.Strings(got)
	want := "a/keep d f/in o/new"
	if strings.Join(got, " ") != want {
		t.Errorf("files = %v, want %s", got, want)
	}
}

// TestMaxBytes refuses a layer with more file bytes than the limit, and a
// header claiming more than is left.
func TestMaxBytes(t *testing.T) {
	for _, tt := range []struct {
		name    string
		entries []entry
	}{
		{"many files", []entry{
			{Type: tar.TypeReg, Name: "a", Body: strings.Repeat("x", 600)},
			{Type: tar.TypeReg, Name: "b", Body: strings.Repeat("x", 600)},
		}},
		{"one huge header", []entry{{Type: tar.TypeReg, Name: "a", Size: 1 << 50, Truncate: true}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Layer(context.Background(), t.TempDir(), bytes.NewReader(tarOf(t, tt.entries)), Options{MaxBytes: 1000})
			if !errors.Is(err, ErrTooLarge) {
				t.Errorf("Layer = %v, want ErrTooLarge", err)
			}
		})
	}
}

// TestCancel stops between entries when ctx ends.
func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Layer(ctx, t.TempDir(), bytes.NewReader(tarOf(t, []entry{{Type: tar.TypeReg, Name: "a", Body: "1"}})), Options{})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Layer = %v, want context.Canceled", err)
	}
}

// TestReadFile reads an image's /etc/passwd that is a symlink to a host
// path: the root's copy of that path is read, not the host's.
func TestReadFile(t *testing.T) {
	h := newHostTree(t)
	layer := h.stream(t, []entry{
		{Type: tar.TypeSymlink, Name: "etc/passwd", Linkname: "HOST/file"},
		{Type: tar.TypeReg, Name: "HOST/file", Body: "app:x:10001:10001::/:/nologin\n"},
		{Type: tar.TypeSymlink, Name: "etc/group", Linkname: "../../../HOST/dir/victim"},
	})
	if _, err := Layer(context.Background(), h.Root, bytes.NewReader(layer), Options{}); err != nil {
		t.Fatal(err)
	}
	b, err := ReadFile(h.Root, "/etc/passwd")
	if err != nil || string(b) != "app:x:10001:10001::/:/nologin\n" {
		t.Errorf("ReadFile(etc/passwd) = %q, %v; want the root's copy", b, err)
	}
	if b, err := ReadFile(h.Root, "etc/group"); err == nil {
		t.Errorf("ReadFile(etc/group) = %q, want an error (its target is not in the root)", b)
	}
}
