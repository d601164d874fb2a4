package pull

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/compression"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/coldstart-go/coldstart/builds"
	"github.com/coldstart-go/coldstart/record"
)

// Binary is one arm's server binary, to be put in images.
type Binary struct {
	Arm  string // "static", "upx", ...
	Path string
}

// repo is variant v's repository in the local registry.
func repo(v record.PullVariant) string {
	return "coldstart/" + repoUnsafe.ReplaceAllString(strings.ToLower(v.Arm), "-") + "-" + string(v.Compression) + "-" + string(v.Layering)
}

var repoUnsafe = regexp.MustCompile(`[^a-z0-9_-]+`)

// baseTime is every base file's mtime: the base does not change between
// deploys, so its layer keeps its digest. The binary's layer gets a time per
// deploy instead (deployTime), so the second deploy's binary layer has a new
// digest, as any rebuild that changes one byte of the binary would.
var baseTime = time.Unix(0, 0).UTC()

func deployTime(deploy int) time.Time { return baseTime.Add(time.Duration(deploy) * time.Hour) }

// baseFiles are what a minimal static base image (distroless/static)
// carries beside the binary: the nonroot user's passwd and group entries,
// the CA bundle and the time zone database, taken from this machine where
// present. They are the part of the image that a new build does not change.
func baseFiles() []file {
	fs := []file{
		{name: "etc/passwd", data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"), mode: 0o644},
		{name: "etc/group", data: []byte("root:x:0:\nnonroot:x:65532:\n"), mode: 0o644},
	}
	for _, c := range []struct{ name, from string }{
		{"etc/ssl/certs/ca-certificates.crt", "/etc/ssl/certs/ca-certificates.crt"},
		{"usr/local/go/lib/time/zoneinfo.zip", filepath.Join(runtime.GOROOT(), "lib", "time", "zoneinfo.zip")},
	} {
		if b, err := os.ReadFile(c.from); err == nil {
			fs = append(fs, file{name: c.name, data: b, mode: 0o644})
		}
	}
	return fs
}

type file struct {
	name string
	data []byte
	mode int64
	path string // read from here when data is nil
}

// layerTar is a tar stream of fs, each with mtime.
func layerTar(fs []file, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	for _, f := range fs {
		data := f.data
		if data == nil {
			b, err := os.ReadFile(f.path)
			if err != nil {
				return nil, fmt.Errorf("read %s: %w", f.path, err)
			}
			data = b
		}
		for d := filepath.Dir(f.name); d != "." && !dirs[d]; d = filepath.Dir(d) {
			dirs[d] = true
		}
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: f.mode, Size: int64(len(data)), ModTime: mtime, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("tar %s: %w", f.name, err)
		}
		if _, err := tw.Write(data); err != nil {
			return nil, fmt.Errorf("tar %s: %w", f.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("tar: %w", err)
	}
	return buf.Bytes(), nil
}

func newLayer(tarBytes []byte, c record.Compression) (v1.Layer, error) {
	opts := []tarball.LayerOption{tarball.WithCompressedCaching}
	switch c {
	case record.Zstd:
		opts = append(opts, tarball.WithCompression(compression.ZStd), tarball.WithMediaType(types.OCILayerZStd))
	default:
		opts = append(opts, tarball.WithCompression(compression.GZip), tarball.WithMediaType(types.OCILayer))
	}
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(tarBytes)), nil
	}, opts...)
}

// BuildVariant is the image of variant v around bin for the given deploy
// (1, 2, ...): the base files and the binary at builds.ImageEntrypoint, in
// one layer (record.SingleLayer) or a base layer and a binary layer (record.SplitLayers); config as
// the image arm's (entrypoint, nonroot user, $PORT). Deploys differ only in
// the binary layer.
func BuildVariant(bin Binary, v record.PullVariant, deploy int) (v1.Image, error) {
	binFile := file{name: "server", path: bin.Path, mode: 0o755}
	var tars [][]byte
	switch v.Layering {
	case record.SplitLayers:
		base, err := layerTar(baseFiles(), baseTime)
		if err != nil {
			return nil, fmt.Errorf("build %s image: %w", v, err)
		}
		top, err := layerTar([]file{binFile}, deployTime(deploy))
		if err != nil {
			return nil, fmt.Errorf("build %s image: %w", v, err)
		}
		tars = [][]byte{base, top}
	default:
		one, err := layerTar(append(baseFiles(), binFile), deployTime(deploy))
		if err != nil {
			return nil, fmt.Errorf("build %s image: %w", v, err)
		}
		tars = [][]byte{one}
	}
	img := empty.Image
	for _, t := range tars {
		l, err := newLayer(t, v.Compression)
		if err != nil {
			return nil, fmt.Errorf("build %s image: %w", v, err)
		}
		if img, err = mutate.AppendLayers(img, l); err != nil {
			return nil, fmt.Errorf("build %s image: %w", v, err)
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("build %s image: %w", v, err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = runtime.GOOS, runtime.GOARCH
	cf.Created = v1.Time{Time: deployTime(deploy)}
	cf.Config.Entrypoint = []string{builds.ImageEntrypoint}
	cf.Config.User = builds.ImageUser
	cf.Config.Env = []string{"PORT=" + builds.ImagePort}
	cf.Config.Labels = map[string]string{builds.ImageLabelPrefix + "binary-arm": bin.Arm}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return nil, fmt.Errorf("build %s image: %w", v, err)
	}
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	return img, nil
}

// Push writes img to the registry as the variant's repository, tagged
// with the deploy number, and returns the digest reference a node pulls.
func (r *Registry) Push(ctx context.Context, v record.PullVariant, deploy int, img v1.Image) (string, error) {
	ref, err := r.PushImage(ctx, repo(v), fmt.Sprint(deploy), img)
	if err != nil {
		return "", fmt.Errorf("push %s: %w", v, err)
	}
	return ref, nil
}

// LayerSizes is each layer's compressed size in bytes, bottom first.
func LayerSizes(img v1.Image) ([]int64, error) {
	ls, err := img.Layers()
	if err != nil {
		return nil, err
	}
	out := make([]int64, len(ls))
	for i, l := range ls {
		if out[i], err = l.Size(); err != nil {
			return nil, err
		}
	}
	return out, nil
}
