package pull

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// unpackLayer writes one uncompressed layer's tar stream into dir and
// returns the file bytes written. It is the one place pull untars: when the
// shared safe unpacker (issue 20) lands, this calls it instead.
//
// Until then it is deliberately narrow: regular files, directories, symlinks
// and hard links inside dir; no entry may reach outside dir, also not
// through a symlink the layer itself placed; whiteouts remove what an
// earlier layer wrote; devices and fifos are skipped; owners are not
// applied (the measured servers run as the invoking user here).
func unpackLayer(ctx context.Context, r io.Reader, dir string) (int64, error) {
	tr := tar.NewReader(r)
	var total int64
	links := map[string]bool{}
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		h, err := tr.Next()
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
		rel := filepath.Clean("/" + h.Name)[1:]
		if rel == "" {
			continue
		}
		for p := filepath.Dir(rel); p != "."; p = filepath.Dir(p) {
			if links[p] {
				return total, fmt.Errorf("%s: path goes through symlink %s", h.Name, p)
			}
		}
		target := filepath.Join(dir, rel)
		if base := filepath.Base(rel); strings.HasPrefix(base, ".wh.") {
			if base == ".wh..wh..opq" {
				continue
			}
			os.RemoveAll(filepath.Join(filepath.Dir(target), strings.TrimPrefix(base, ".wh.")))
			continue
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return total, err
		}
		mode := os.FileMode(h.Mode).Perm()
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return total, err
			}
			if err := os.Chmod(target, mode|0o700); err != nil {
				return total, err
			}
		case tar.TypeReg:
			os.Remove(target)
			f, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode)
			if err != nil {
				return total, err
			}
			n, err := io.Copy(f, tr)
			total += n
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return total, err
			}
		case tar.TypeSymlink:
			os.RemoveAll(target)
			if err := os.Symlink(h.Linkname, target); err != nil {
				return total, err
			}
			links[rel] = true
		case tar.TypeLink:
			src := filepath.Clean("/" + h.Linkname)[1:]
			for p := src; p != "."; p = filepath.Dir(p) {
				if links[p] {
					return total, fmt.Errorf("%s: hard link through symlink %s", h.Name, p)
				}
			}
			os.Remove(target)
			if err := os.Link(filepath.Join(dir, src), target); err != nil {
				return total, err
			}
		}
	}
}
