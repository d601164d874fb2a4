package unpack

import (
	"archive/tar"
	"bytes"
	"context"
	"strings"
	"testing"
)

// FuzzLayer turns the fuzzer's bytes into a hostile layer (names with
// "..", absolute names, symlinks to the sentinel tree and entries through
// them, hard links through symlinks, duplicate names, whiteouts, device
// nodes, huge sizes), unpacks it beside a sentinel tree and checks that the
// tree is unchanged: contents, modes, owners, link counts and ctimes. `go
// test` runs the seeds (every escape in TestEscapes among them); CI also
// fuzzes for a while (scripts/test.sh), as root, so chown and link paths
// are exercised for real.
func FuzzLayer(f *testing.F) {
	for _, e := range escapes {
		f.Add(encode(e.entries))
	}
	f.Add([]byte{})
	f.Add([]byte("\x02\xed\x00\x10\x04\x00\x00\xed\x01\x01\x04\x06"))
	f.Fuzz(func(t *testing.T, data []byte) {
		h := newHostTree(t)
		entries := decode(data)
		before := h.snapshot(t)
		if err := apply(context.Background(), bytes.NewReader(h.stream(t, entries)), h.Root); err != nil {
			t.Logf("unpack: %v", err)
		}
		h.checkUnchanged(t, before)
		h.checkRootSafe(t)
	})
}

// fuzzParts are what fuzzed names are made of: the sentinel tree (HOST),
// its names, "..", "", whiteout prefixes, and every part of the escapes'
// names, so that the seeds decode to exactly those layers.
var fuzzParts = func() []string {
	ps := []string{"HOST", "..", "", ".", "a", "b", "file", "dir", "victim", "bin", "link", "fifo", "host", ".wh.a", ".wh..wh..opq", ".wh.file"}
	seen := map[string]bool{}
	for _, p := range ps {
		seen[p] = true
	}
	for _, e := range escapes {
		for _, en := range e.entries {
			for _, p := range append(strings.Split(en.Name, "/"), strings.Split(en.Linkname, "/")...) {
				if !seen[p] {
					seen[p] = true
					ps = append(ps, p)
				}
			}
		}
	}
	return ps
}()

var fuzzTypes = []byte{tar.TypeReg, tar.TypeDir, tar.TypeSymlink, tar.TypeLink, tar.TypeChar, tar.TypeBlock, tar.TypeFifo}

// decode reads entries from data. Each is: type and flags, mode, owner,
// part counts (name: 1 + low 3 bits, link name: bits 4-6), then one byte
// per part, an index into fuzzParts; the parts are joined with "/".
func decode(data []byte) []entry {
	var es []entry
	for len(data) >= 4 && len(es) < 64 {
		op, m, o, cnt := data[0], data[1], data[2], data[3]
		nn, nl := int(cnt&7)+1, int(cnt>>4&7)
		data = data[4:]
		if len(data) < nn+nl {
			break
		}
		e := entry{
			Type:     fuzzTypes[int(op&0x0f)%len(fuzzTypes)],
			Name:     join(data[:nn]),
			Linkname: join(data[nn : nn+nl]),
			Mode:     int64(m) | int64(m&0x07)<<9, // set-id and sticky bits too
			Uid:      4242 + int(o&0x0f),
			Gid:      4242 + int(o>>4),
			Body:     "pwned by " + strings.Repeat("x", int(o)),
		}
		data = data[nn+nl:]
		switch {
		case op&0x80 != 0 && e.Type == tar.TypeReg:
			e.Size, e.Truncate = 1<<40, true // a huge size, and the stream ends
		case op&0x40 != 0 && e.Type == tar.TypeReg:
			e.Body = strings.Repeat("y", 700<<10) // a larger file
		}
		if e.Type == tar.TypeChar || e.Type == tar.TypeBlock {
			e.Devmajor = int64(o)
		}
		es = append(es, e)
		if e.Truncate {
			break
		}
	}
	return es
}

func join(idx []byte) string {
	ps := make([]string, len(idx))
	for i, b := range idx {
		ps[i] = fuzzParts[int(b)%len(fuzzParts)]
	}
	return strings.Join(ps, "/")
}

// encode is decode's inverse for the seeds (names of at most 8 parts
// from fuzzParts, link names of at most 7).
func encode(es []entry) []byte {
	index := map[string]byte{}
	for i, p := range fuzzParts {
		index[p] = byte(i)
	}
	var b []byte
	for _, e := range es {
		var t byte
		for i, ft := range fuzzTypes {
			if ft == e.Type {
				t = byte(i)
			}
		}
		if e.Truncate {
			t |= 0x80
		}
		name := strings.Split(e.Name, "/")
		var link []string
		if e.Linkname != "" {
			link = strings.Split(e.Linkname, "/")
		}
		b = append(b, t, byte(e.Mode), byte(e.Uid), byte(len(name)-1)|byte(len(link))<<4)
		for _, p := range append(name, link...) {
			b = append(b, index[p])
		}
	}
	return b
}
