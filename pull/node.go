package pull

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/coldstart-go/coldstart/internal/leftovers"
)

// Node is what a node keeps of pulled images: an OCI image layout holding
// the blobs it has (its content store), and the root filesystems unpacked
// from them. Everything is under one directory that Close removes.
type Node struct {
	dir    string
	forget func() // drops dir from the run's state file
	store  layout.Path
	n      int // root filesystems unpacked so far
}

// NewNode makes an empty node in a new directory under parent ("" = the
// system temp dir).
func NewNode(parent string) (*Node, error) {
	// Recorded in the run's state file before it is made: a coldstart
	// killed mid-pull leaves nothing the next run does not sweep.
	dir, forget, err := leftovers.MkdirTemp(parent, "coldstart-node-")
	if err != nil {
		return nil, fmt.Errorf("create node dir: %w", err)
	}
	n := &Node{dir: dir, forget: forget}
	// 0755, not MkdirTemp's 0700: a server started as an unprivileged user
	// must reach the binary unpacked inside.
	if err := os.Chmod(dir, 0o755); err != nil {
		n.Close()
		return nil, fmt.Errorf("create node dir: %w", err)
	}
	if n.store, err = layout.Write(filepath.Join(dir, "store"), empty.Index); err != nil {
		n.Close()
		return nil, fmt.Errorf("create node store in %s: %w", dir, err)
	}
	return n, nil
}

// Dir is the node's directory.
func (n *Node) Dir() string { return n.dir }

// Close removes the node's blobs and unpacked trees.
func (n *Node) Close() error {
	if err := os.RemoveAll(n.dir); err != nil {
		return fmt.Errorf("remove node %s: %w", n.dir, err)
	}
	n.forget()
	return nil
}

// Pulled is what one pull cost, as a node sees it.
type Pulled struct {
	// Digest is the image's manifest digest.
	Digest v1.Hash
	// Manifest is the time to fetch the manifest and the config.
	Manifest time.Duration
	// Layers is the time to fetch the layers the node did not have.
	Layers time.Duration
	// LayerBytes is the compressed bytes of the layers fetched.
	LayerBytes int64
	// LayersPulled and LayersReused count layers fetched and layers the
	// node already held (by digest).
	LayersPulled, LayersReused int
	// New lists the fetched layers' digests, for unpacking.
	New []v1.Hash
}

// Pull fetches the image at ref (REGISTRY/REPO@sha256:...) into the node's
// store as a node would: the manifest, the config, then each layer the
// store does not already hold, one after another, each checked against its
// digest as it streams in (go-containerregistry's remote verifies).
func (n *Node) Pull(ctx context.Context, ref string) (Pulled, error) {
	var p Pulled
	r, err := name.ParseReference(ref)
	if err != nil {
		return p, fmt.Errorf("pull %s: %w", ref, err)
	}
	start := time.Now()
	desc, err := remote.Get(r, remote.WithContext(ctx))
	if err != nil {
		return p, fmt.Errorf("pull %s: manifest: %w", ref, err)
	}
	img, err := desc.Image()
	if err != nil {
		return p, fmt.Errorf("pull %s: %w", ref, err)
	}
	cfgName, err := img.ConfigName()
	if err != nil {
		return p, fmt.Errorf("pull %s: config: %w", ref, err)
	}
	cfg, err := img.RawConfigFile()
	if err != nil {
		return p, fmt.Errorf("pull %s: config: %w", ref, err)
	}
	p.Manifest = time.Since(start)
	p.Digest = desc.Digest

	start = time.Now()
	layers, err := img.Layers()
	if err != nil {
		return p, fmt.Errorf("pull %s: %w", ref, err)
	}
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return p, fmt.Errorf("pull %s: %w", ref, err)
		}
		if n.has(d) {
			p.LayersReused++
			continue
		}
		size, err := l.Size()
		if err != nil {
			return p, fmt.Errorf("pull %s: layer %s: %w", ref, d, err)
		}
		rc, err := l.Compressed()
		if err != nil {
			return p, fmt.Errorf("pull %s: layer %s: %w", ref, d, err)
		}
		if err := n.store.WriteBlob(d, rc); err != nil { // closes rc
			n.store.RemoveBlob(d) // a partial blob must not count as held
			return p, fmt.Errorf("pull %s: layer %s: %w", ref, d, err)
		}
		p.LayerBytes += size
		p.LayersPulled++
		p.New = append(p.New, d)
	}
	p.Layers = time.Since(start)

	if err := n.store.WriteBlob(cfgName, io.NopCloser(bytes.NewReader(cfg))); err != nil {
		return p, fmt.Errorf("pull %s: store config: %w", ref, err)
	}
	if err := n.store.WriteBlob(desc.Digest, io.NopCloser(bytes.NewReader(desc.Manifest))); err != nil {
		return p, fmt.Errorf("pull %s: store manifest: %w", ref, err)
	}
	if err := n.store.AppendDescriptor(desc.Descriptor); err != nil {
		return p, fmt.Errorf("pull %s: store index: %w", ref, err)
	}
	return p, nil
}

func (n *Node) has(d v1.Hash) bool {
	fi, err := os.Stat(filepath.Join(string(n.store), "blobs", d.Algorithm, d.Hex))
	return err == nil && fi.Mode().IsRegular()
}

// Unpacked is what unpacking cost.
type Unpacked struct {
	// Rootfs is the directory the layers were unpacked into.
	Rootfs string
	// Duration is reading each layer from the store, decompressing it and
	// writing its files.
	Duration time.Duration
	// Bytes is the uncompressed file bytes written.
	Bytes int64
}

// Unpack writes the layers of the stored image digest into a new root
// filesystem under the node, bottom layer first. only, when not nil, limits
// it to those layers (what a snapshotter that keeps earlier layers' snapshots
// does for a second deploy).
func (n *Node) Unpack(ctx context.Context, digest v1.Hash, only []v1.Hash) (Unpacked, error) {
	var u Unpacked
	img, err := n.store.Image(digest)
	if err != nil {
		return u, fmt.Errorf("unpack %s: %w", digest, err)
	}
	n.n++
	u.Rootfs = filepath.Join(n.dir, fmt.Sprintf("rootfs-%d", n.n))
	if err := os.Mkdir(u.Rootfs, 0o755); err != nil {
		return u, fmt.Errorf("unpack %s: %w", digest, err)
	}
	want := map[v1.Hash]bool{}
	for _, d := range only {
		want[d] = true
	}
	start := time.Now()
	layers, err := img.Layers()
	if err != nil {
		return u, fmt.Errorf("unpack %s: %w", digest, err)
	}
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return u, fmt.Errorf("unpack %s: %w", digest, err)
		}
		if only != nil && !want[d] {
			continue
		}
		rc, err := l.Uncompressed()
		if err != nil {
			return u, fmt.Errorf("unpack layer %s: %w", d, err)
		}
		m, err := unpackLayer(ctx, rc, u.Rootfs)
		rc.Close()
		u.Bytes += m
		if err != nil {
			return u, fmt.Errorf("unpack layer %s into %s: %w", d, u.Rootfs, err)
		}
	}
	u.Duration = time.Since(start)
	return u, nil
}
