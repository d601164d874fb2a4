// Package ociimage loads the OCI images coldstart builds and runs: an OCI
// image layout directory or an image tarball, the one for this platform.
package ociimage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// ErrNotImage is returned when a path holds no image.
var ErrNotImage = errors.New("not an image (want an OCI image layout directory with index.json, or an image tarball with manifest.json)")

// Load reads the image at path: an OCI image layout directory (its
// only image, or the one for this machine's platform) or an image tarball
// (`docker save`, or one builds.BuildImage wrote). It returns ErrNotImage, naming
// path, for anything else.
func Load(path string) (v1.Image, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("load image %s: %w", path, err)
	}
	if fi.IsDir() {
		if _, err := os.Stat(filepath.Join(path, "index.json")); err != nil {
			return nil, fmt.Errorf("load image %s: %w: no index.json", path, ErrNotImage)
		}
		idx, err := layout.ImageIndexFromPath(path)
		if err != nil {
			return nil, fmt.Errorf("load image %s: %w", path, err)
		}
		return imageFromIndex(path, idx)
	}
	img, err := tarball.ImageFromPath(path, nil)
	if err != nil {
		return nil, fmt.Errorf("load image %s: %w: %v", path, ErrNotImage, err)
	}
	if _, err := img.Manifest(); err != nil {
		return nil, fmt.Errorf("load image %s: %w: %v", path, ErrNotImage, err)
	}
	return img, nil
}

func imageFromIndex(path string, idx v1.ImageIndex) (v1.Image, error) {
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("load image %s: %w", path, err)
	}
	var match []v1.Descriptor
	for _, d := range im.Manifests {
		if !d.MediaType.IsImage() && !d.MediaType.IsIndex() {
			continue
		}
		if d.Platform != nil && (d.Platform.OS != runtime.GOOS || d.Platform.Architecture != runtime.GOARCH) {
			continue
		}
		match = append(match, d)
	}
	if len(match) == 0 {
		return nil, fmt.Errorf("load image %s: %w: no image for %s/%s in index.json", path, ErrNotImage, runtime.GOOS, runtime.GOARCH)
	}
	d := match[0]
	if d.MediaType.IsIndex() {
		child, err := idx.ImageIndex(d.Digest)
		if err != nil {
			return nil, fmt.Errorf("load image %s: %w", path, err)
		}
		return imageFromIndex(path, child)
	}
	img, err := idx.Image(d.Digest)
	if err != nil {
		return nil, fmt.Errorf("load image %s: %w", path, err)
	}
	return img, nil
}

// Stamp changes when the image at path changes: the size and mtime of a
// layout's index.json or of a tarball. Launchers key what they unpack or
// load from an image by it.
func Stamp(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if fi.IsDir() {
		if fi, err = os.Stat(filepath.Join(path, "index.json")); err != nil {
			return "", fmt.Errorf("not an OCI image layout (no index.json): %w", err)
		}
	}
	return fmt.Sprintf("%d-%d", fi.Size(), fi.ModTime().UnixNano()), nil
}
