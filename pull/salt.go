package pull

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/google/go-containerregistry/pkg/compression"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// SaltFile is the file Salt adds to every layer, at the root of the
// image's file system.
const SaltFile = ".coldstart-salt"

// Salt is img with every layer rewritten to hold one more file, SaltFile,
// whose content is salt: the same entries, config and history otherwise.
// Every layer's digest and diff ID change with the salt, so a node that
// holds the image under another salt has none of its layers, not even
// unpacked (containerd skips fetching a layer whose chain it has already
// unpacked): each start of a new salt pulls the whole image, as a start on
// a node that never ran it does. Layers keep their compression (gzip or
// zstd); an uncompressed layer is gzipped.
func Salt(img v1.Image, salt string) (v1.Image, error) {
	ls, err := img.Layers()
	if err != nil {
		return nil, fmt.Errorf("salt image: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("salt image: %w", err)
	}
	mt, err := img.MediaType()
	if err != nil {
		return nil, fmt.Errorf("salt image: %w", err)
	}
	out := empty.Image
	for i, l := range ls {
		sl, err := saltLayer(l, salt)
		if err != nil {
			return nil, fmt.Errorf("salt image layer %d: %w", i, err)
		}
		if out, err = mutate.AppendLayers(out, sl); err != nil {
			return nil, fmt.Errorf("salt image: %w", err)
		}
	}
	// The config as it was, but for the diff IDs, which mutate keeps
	// matching the new layers.
	cf = cf.DeepCopy()
	ocf, err := out.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("salt image: %w", err)
	}
	cf.RootFS = ocf.RootFS
	if out, err = mutate.ConfigFile(out, cf); err != nil {
		return nil, fmt.Errorf("salt image: %w", err)
	}
	if mt == types.DockerManifestSchema2 {
		return mutate.ConfigMediaType(mutate.MediaType(out, mt), types.DockerConfigJSON), nil
	}
	return mutate.ConfigMediaType(mutate.MediaType(out, types.OCIManifestSchema1), types.OCIConfigJSON), nil
}

// saltLayer copies l's entries into a new tar stream, SaltFile after them.
func saltLayer(l v1.Layer, salt string) (v1.Layer, error) {
	mt, err := l.MediaType()
	if err != nil {
		return nil, err
	}
	rc, err := l.Uncompressed()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	var buf bytes.Buffer
	tr := tar.NewReader(rc)
	tw := tar.NewWriter(&buf)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read layer: %w", err)
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("copy %s: %w", h.Name, err)
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return nil, fmt.Errorf("copy %s: %w", h.Name, err)
		}
	}
	h := &tar.Header{Typeflag: tar.TypeReg, Name: SaltFile, Mode: 0o644, Size: int64(len(salt)), ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
	if err := tw.WriteHeader(h); err != nil {
		return nil, err
	}
	if _, err := io.WriteString(tw, salt); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	opts := []tarball.LayerOption{tarball.WithCompressedCaching}
	switch mt {
	case types.OCILayerZStd:
		opts = append(opts, tarball.WithCompression(compression.ZStd), tarball.WithMediaType(mt))
	case types.DockerLayer:
		opts = append(opts, tarball.WithCompression(compression.GZip), tarball.WithMediaType(mt))
	default:
		opts = append(opts, tarball.WithCompression(compression.GZip), tarball.WithMediaType(types.OCILayer))
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }, opts...)
}

// ImageBytes is what a node fetches to pull img: its manifest, config and
// layers as stored.
func ImageBytes(img v1.Image) (int64, error) {
	m, err := img.RawManifest()
	if err != nil {
		return 0, err
	}
	c, err := img.RawConfigFile()
	if err != nil {
		return 0, err
	}
	n := int64(len(m) + len(c))
	sizes, err := LayerSizes(img)
	if err != nil {
		return 0, err
	}
	for _, s := range sizes {
		n += s
	}
	return n, nil
}

// PushImage writes img to the registry as repository repo with tag, and
// returns the digest reference a node pulls.
func (r *Registry) PushImage(ctx context.Context, repo, tag string, img v1.Image) (string, error) {
	t, err := name.NewTag(fmt.Sprintf("%s/%s:%s", r.Host(), repo, tag))
	if err != nil {
		return "", fmt.Errorf("push %s:%s: %w", repo, tag, err)
	}
	if err := remote.Write(t, img, remote.WithContext(ctx)); err != nil {
		return "", fmt.Errorf("push %s:%s to %s: %w", repo, tag, r.Host(), err)
	}
	d, err := img.Digest()
	if err != nil {
		return "", fmt.Errorf("push %s:%s: %w", repo, tag, err)
	}
	return t.Context().Digest(d.String()).String(), nil
}

// DeleteBlobs drops img's config and layers from the registry's memory,
// for an image no node will pull again: a campaign that pushes a new image
// every round would otherwise hold every round's. Blobs are stored by
// digest alone, so do not drop an image that shares blobs with one still
// to be pulled (a salted image shares none).
func (r *Registry) DeleteBlobs(ctx context.Context, img v1.Image) error {
	del, ok := r.blobs.(registry.BlobDeleteHandler)
	if !ok {
		return fmt.Errorf("delete blobs: the registry's store cannot delete")
	}
	cfg, err := img.ConfigName()
	if err != nil {
		return fmt.Errorf("delete blobs: %w", err)
	}
	hs := []v1.Hash{cfg}
	ls, err := img.Layers()
	if err != nil {
		return fmt.Errorf("delete blobs: %w", err)
	}
	for _, l := range ls {
		d, err := l.Digest()
		if err != nil {
			return fmt.Errorf("delete blobs: %w", err)
		}
		hs = append(hs, d)
	}
	for _, h := range hs {
		if err := del.Delete(ctx, "", h); err != nil {
			return fmt.Errorf("delete blob %s: %w", h, err)
		}
	}
	return nil
}
