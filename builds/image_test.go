package builds

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/coldstart-go/coldstart/internal/elfdeps"
	"github.com/coldstart-go/coldstart/internal/ociimage"
)

// staticEcho builds examples/echo statically, with the static arm's flags,
// into a temp dir of t. It does not use the other arms' builders, so these
// tests stand alone; the Go build cache makes the rebuilds cheap (~1.5 s).
// (Not a TestMain: the package's other tests may need theirs.)
func staticEcho(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "echo")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "./examples/echo")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build echo: %v\n%s", err, out)
	}
	return bin
}

func staticArtifact(t *testing.T) Artifact {
	t.Helper()
	a, err := BinaryArtifact(staticEcho(t))
	if err != nil {
		t.Fatal(err)
	}
	a.Arm = "static"
	a.Flags = "CGO_ENABLED=0 -trimpath -ldflags=-s -w"
	return a
}

// TestBuildImage builds images around one static echo binary; the subtests
// share it (building it takes ~2 s).
func TestBuildImage(t *testing.T) {
	bin := staticArtifact(t)
	t.Run("Reproducible", func(t *testing.T) { testReproducible(t, bin) })
	t.Run("Contents", func(t *testing.T) { testContents(t, bin) })
	t.Run("OnBase", func(t *testing.T) { testOnBase(t, bin) })
	t.Run("BadBase", func(t *testing.T) { testBadBase(t, bin) })
	t.Run("PushUnreachable", func(t *testing.T) { testPushUnreachable(t, bin) })
	t.Run("Push", func(t *testing.T) { testPush(t, bin) })
	t.Run("NewImage", func(t *testing.T) { testNewImage(t, bin) })
}

func testReproducible(t *testing.T, bin Artifact) {
	ctx := context.Background()
	var got []ImageResult
	for i := 0; i < 2; i++ {
		r, err := BuildImage(ctx, bin, ImageOptions{Dir: filepath.Join(t.TempDir(), "out")})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("build %d: %s in %.0f ms, layers %d B, tarball %d B", i, r.Artifact.Digest, r.Artifact.BuildMs, r.LayerBytes, r.TarballBytes)
		got = append(got, r)
	}
	if got[0].Artifact.Digest != got[1].Artifact.Digest {
		t.Errorf("digest differs between two builds: %s, %s", got[0].Artifact.Digest, got[1].Artifact.Digest)
	}
	if got[0].Artifact.SHA256 != got[1].Artifact.SHA256 {
		t.Errorf("tarball sha256 differs between two builds: %s, %s", got[0].Artifact.SHA256, got[1].Artifact.SHA256)
	}
	a := got[0].Artifact
	if a.Arm != ImageArm || a.Path != got[0].Tarball || a.Image != got[0].Layout || a.SizeBytes != got[0].LayerBytes {
		t.Errorf("artifact = %+v, want arm image, path the tarball, image the layout, size the layers", a)
	}
	if !strings.HasPrefix(a.Digest, "sha256:") || a.GoVersion == "" || len(a.Command) == 0 {
		t.Errorf("artifact = %+v: want digest, go version and command", a)
	}

	// A changed input changes the digest: a different creation time.
	r3, err := BuildImage(ctx, bin, ImageOptions{Dir: t.TempDir(), Created: time.Unix(1e9, 0)})
	if err != nil {
		t.Fatal(err)
	}
	if r3.Artifact.Digest == a.Digest {
		t.Errorf("digest with Created=2001 = %s, same as with the epoch", r3.Artifact.Digest)
	}
}

func testContents(t *testing.T, bin Artifact) {
	r, err := BuildImage(context.Background(), bin, ImageOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	// The layout and the tarball hold the same image.
	p, err := layout.FromPath(r.Layout)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 || im.Manifests[0].Digest.String() != r.Artifact.Digest {
		t.Fatalf("layout index = %+v, want one manifest %s", im.Manifests, r.Artifact.Digest)
	}
	if got := im.Manifests[0].Annotations["org.opencontainers.image.ref.name"]; got != r.Tag {
		t.Errorf("layout ref.name = %q, want %q", got, r.Tag)
	}
	tb, err := tarball.ImageFromPath(r.Tarball, nil)
	if err != nil {
		t.Fatal(err)
	}
	img, err := ociimage.Load(r.Layout)
	if err != nil {
		t.Fatal(err)
	}
	c1, _ := img.ConfigName()
	c2, _ := tb.ConfigName()
	if c1 != c2 {
		t.Errorf("config digest: layout %s, tarball %s", c1, c2)
	}
	mt, _ := img.MediaType()
	if mt != types.OCIManifestSchema1 {
		t.Errorf("manifest media type = %s, want %s", mt, types.OCIManifestSchema1)
	}
	m, _ := img.Manifest()
	if m.Config.MediaType != types.OCIConfigJSON || len(m.Layers) != 1 || m.Layers[0].MediaType != types.OCILayer {
		t.Errorf("manifest = %+v, want OCI config and one OCI layer", m)
	}

	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	type summary struct {
		Entrypoint, Cmd, Env, Ports []string
		User, OS, Arch              string
		Created                     time.Time
		Labels                      map[string]string
	}
	var ports []string
	for p := range cf.Config.ExposedPorts {
		ports = append(ports, p)
	}
	sort.Strings(ports)
	got := summary{cf.Config.Entrypoint, cf.Config.Cmd, cf.Config.Env, ports, cf.Config.User, cf.OS, cf.Architecture, cf.Created.Time.UTC(), cf.Config.Labels}
	want := summary{
		Entrypoint: []string{"/server"}, Env: []string{"PORT=8080"}, Ports: []string{"8080/tcp"},
		User: "65532:65532", OS: "linux", Arch: cf.Architecture, Created: time.Unix(0, 0).UTC(),
		Labels: map[string]string{
			ImageLabelPrefix + "arm":           "image",
			ImageLabelPrefix + "binary-arm":    "static",
			ImageLabelPrefix + "go-version":    bin.GoVersion,
			ImageLabelPrefix + "binary-sha256": bin.SHA256,
			ImageLabelPrefix + "flags":         bin.Flags,
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("image config (-want +got):\n%s", diff)
	}

	// The layer holds exactly /server, 0755, root-owned, mtime the epoch.
	layers, _ := img.Layers()
	files := extractedFiles(t, img)
	if len(layers) != 1 || cmp.Diff([]string{"server 0755 0:0 1970-01-01T00:00:00Z " + fmt.Sprint(bin.SizeBytes)}, files) != "" {
		t.Errorf("layers = %d, files = %q, want one layer holding server", len(layers), files)
	}
}

func testOnBase(t *testing.T, bin Artifact) {
	// The first image becomes the base of the second: a local OCI layout,
	// then the tarball.
	base, err := BuildImage(context.Background(), bin, ImageOptions{Dir: t.TempDir(), Labels: map[string]string{"base-label": "kept"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{base.Layout, base.Tarball} {
		t.Run(filepath.Ext(path), func(t *testing.T) {
			r, err := BuildImage(context.Background(), bin, ImageOptions{Dir: t.TempDir(), Base: path})
			if err != nil {
				t.Fatal(err)
			}
			img, err := ociimage.Load(r.Layout)
			if err != nil {
				t.Fatal(err)
			}
			layers, _ := img.Layers()
			cf, _ := img.ConfigFile()
			if len(layers) != 2 || cf.Config.Labels["base-label"] != "kept" || len(cf.Config.Env) != 1 {
				t.Errorf("on base %s: %d layers, labels %v, env %v; want 2 layers, the base's label kept, one PORT", path, len(layers), cf.Config.Labels, cf.Config.Env)
			}
			if r.LayerBytes <= base.LayerBytes {
				t.Errorf("layer bytes on base = %d, want more than the base's %d", r.LayerBytes, base.LayerBytes)
			}
		})
	}
}

func testBadBase(t *testing.T, bin Artifact) {
	dir := t.TempDir()
	notImage := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notImage, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	emptyDir := filepath.Join(dir, "emptydir")
	if err := os.Mkdir(emptyDir, 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, base string
		want       error
	}{
		{"plain file", notImage, ErrNotImage},
		{"dir without index.json", emptyDir, ErrNotImage},
		{"missing", filepath.Join(dir, "nope"), os.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := BuildImage(context.Background(), bin, ImageOptions{Dir: t.TempDir(), Base: tt.base})
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.base) {
				t.Errorf("BuildImage(base %s) = %v, want %v naming the path", tt.base, err, tt.want)
			}
		})
	}
}

func testPushUnreachable(t *testing.T, bin Artifact) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	_, err := BuildImage(ctx, bin, ImageOptions{Dir: t.TempDir(), Push: "127.0.0.1:1/coldstart/echo"})
	t.Logf("push failed after %v: %v", time.Since(start).Round(time.Millisecond), err)
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") || !strings.Contains(err.Error(), "push") {
		t.Errorf("push to 127.0.0.1:1 = %v, want an error naming the registry", err)
	}
	_, err = BuildImage(ctx, bin, ImageOptions{Dir: t.TempDir(), Push: "Not A Repo"})
	if err == nil || !strings.Contains(err.Error(), "REGISTRY/REPO") {
		t.Errorf("push to a bad name = %v, want the expected form", err)
	}
}

// testPush pushes to go-containerregistry's in-memory registry on a
// loopback port and pulls the image back by the returned reference.
func testPush(t *testing.T, bin Artifact) {
	srv := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	repo := strings.TrimPrefix(srv.URL, "http://") + "/coldstart/echo"
	r, err := BuildImage(context.Background(), bin, ImageOptions{Dir: t.TempDir(), Push: repo})
	if err != nil {
		t.Fatal(err)
	}
	if want := repo + "@" + r.Artifact.Digest; r.Ref != want {
		t.Errorf("Ref = %q, want %q", r.Ref, want)
	}
	ref, err := name.ParseReference(r.Ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(ref)
	if err != nil {
		t.Fatalf("pull %s: %v", r.Ref, err)
	}
	if d, _ := img.Digest(); d.String() != r.Artifact.Digest {
		t.Errorf("pulled digest %s, want %s", d, r.Artifact.Digest)
	}
}

func testNewImage(t *testing.T, bin Artifact) {
	dir := t.TempDir()
	b := NewImage(nil, WithImageDir(dir), WithTag("example.com/echo:test"))
	if b.Arm() != "image" {
		t.Errorf("Arm() = %q", b.Arm())
	}
	a, err := b.Build(context.Background(), Source{Bin: bin.Path})
	if err != nil {
		t.Fatal(err)
	}
	if a.Path != filepath.Join(dir, "echo.image.tar") || a.Image != filepath.Join(dir, "echo.oci") {
		t.Errorf("artifact paths %s, %s; want them in %s", a.Path, a.Image, dir)
	}
	if _, err := NewImage(nil).Build(context.Background(), Source{Pkg: "./examples/echo"}); err == nil {
		t.Error("Build without a static builder or binary succeeded")
	}
}

// extractedFiles lists the flattened filesystem of img as
// "name mode uid:gid mtime size".
func extractedFiles(t *testing.T, img v1.Image) []string {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	var files []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, fmt.Sprintf("%s %04o %d:%d %s %d", h.Name, h.Mode, h.Uid, h.Gid, h.ModTime.UTC().Format(time.RFC3339), h.Size))
	}
}

func TestImageArmRegistered(t *testing.T) {
	if !strings.Contains(strings.Join(Known(), ","), "image") {
		t.Fatalf("Known() = %v, want image", Known())
	}
	if testing.Short() {
		t.Skip("builds the static arm with the go command")
	}
	o := Options{CacheDir: t.TempDir()}
	var got []Artifact
	for i := 0; i < 2; i++ {
		b, err := New("image", o)
		if err != nil {
			t.Fatal(err)
		}
		a, err := b.Build(context.Background(), Source{Pkg: "./examples/echo", Dir: ".."})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, a)
	}
	a := got[0]
	if a.Arm != "image" || !strings.HasPrefix(a.Image, filepath.Join(o.CacheDir, "image")+string(filepath.Separator)) {
		t.Errorf("artifact = %+v, want the image arm's, in the cache dir", a)
	}
	if got[1].Digest != a.Digest {
		t.Errorf("digests of two builds through the registry: %s, %s", a.Digest, got[1].Digest)
	}
	if !strings.Contains(a.Flags, "-trimpath") {
		t.Errorf("flags = %q, want the static arm's", a.Flags)
	}
}

// TestBuildImageDynamic: a dynamically linked binary (the default arm links
// libc through cgo) on an empty base gets its ELF interpreter and shared
// libraries in the layer, at the paths the loader looks in; else the image
// could not start.
func TestBuildImageDynamic(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	want, _, err := elfdeps.Needed(sh)
	if err != nil || len(want) == 0 {
		t.Skipf("sh is not dynamically linked here (%v)", err)
	}
	r, err := BuildImage(context.Background(), Artifact{Path: sh, SHA256: "x", GoVersion: "none"}, ImageOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	img, err := ociimage.Load(r.Layout)
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers %d, %v; want 1", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	got := map[string]int64{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			got["/"+h.Name] = h.Size
		}
	}
	if _, ok := got[ImageEntrypoint]; !ok {
		t.Errorf("layer %v lacks %s", got, ImageEntrypoint)
	}
	for _, f := range want {
		fi, err := os.Stat(f.Real)
		if err != nil {
			t.Fatal(err)
		}
		if got[f.Path] != fi.Size() {
			t.Errorf("layer holds %s with %d bytes, want %d (from %s)", f.Path, got[f.Path], fi.Size(), f.Real)
		}
	}
}
