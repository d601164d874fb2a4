package builds

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/coldstart-go/coldstart/internal/elfdeps"
	"github.com/coldstart-go/coldstart/internal/ociimage"
)

// The image arm's fixed settings. The top-level Dockerfile states the same
// (a test compares them), so an image built with a Docker daemon and one built
// by coldstart start the same way.
const (
	// ImageArm is the arm name.
	ImageArm = "image"
	// ImageEntrypoint is where the server binary sits in the image and the
	// image's entrypoint.
	ImageEntrypoint = "/server"
	// ImageUser is the non-root user:group the server runs as (65532 is
	// the distroless "nonroot" user; an empty base has no /etc/passwd, so
	// it is numeric).
	ImageUser = "65532:65532"
	// ImagePort is the port the server listens on: $PORT, the Knative
	// convention, and the exposed port.
	ImagePort = "8080"
	// ImageLabelPrefix starts every label holding the build record.
	ImageLabelPrefix = "com.github.coldstart-go.coldstart."
)

// ImageOptions configure BuildImage. The zero value builds on an empty base
// into the static binary's directory, without pushing.
type ImageOptions struct {
	// Dir receives NAME.oci/ (an OCI image layout) and NAME.image.tar (a
	// `docker load`/`podman load` tarball), NAME being the binary's base
	// name ("" = the binary's directory).
	Dir string
	// Base is a base image: an OCI image layout directory or an image
	// tarball ("" = an empty base, like FROM scratch).
	Base string
	// Push is REGISTRY/REPO[:TAG] to push the image to ("" = no push).
	Push string
	// Tag is the image's name in the tarball and the layout's ref.name
	// annotation ("" = coldstart/NAME:DIGEST12).
	Tag string
	// Created is the image's creation time and every file's mtime, fixed so
	// that the digest is reproducible (zero = $SOURCE_DATE_EPOCH, else the
	// Unix epoch).
	Created time.Time
	// Labels are added to the build-record labels.
	Labels map[string]string
	// Remote are extra options for the push (auth, transport, ...); the
	// default keychain (~/.docker/config.json) and ctx are always used.
	Remote []remote.Option
}

// ImageResult is everything one image build produced. Artifact is what the
// Builder returns; the rest is for callers that want more (the deploy wants
// Ref).
type ImageResult struct {
	Artifact Artifact
	// Layout is the OCI image layout directory (also Artifact.Image).
	Layout string
	// Tarball is the `docker load` tarball (also Artifact.Path).
	Tarball string
	// Tag is the name the tarball and the layout carry.
	Tag string
	// Ref is REPO@sha256:... after a push ("" without one): what a Knative
	// Service should reference.
	Ref string
	// LayerBytes is the compressed size of all layers, base included: what
	// a node pulls (also Artifact.SizeBytes).
	LayerBytes int64
	// TarballBytes is the tarball file's size.
	TarballBytes int64
}

// ErrNotImage is returned when a base image path holds no image.
var ErrNotImage = ociimage.ErrNotImage

// ImageOption configures NewImage.
type ImageOption func(*ImageOptions)

// WithImageDir sets ImageOptions.Dir.
func WithImageDir(dir string) ImageOption { return func(o *ImageOptions) { o.Dir = dir } }

// WithBase sets ImageOptions.Base.
func WithBase(path string) ImageOption { return func(o *ImageOptions) { o.Base = path } }

// WithPush sets ImageOptions.Push.
func WithPush(repo string) ImageOption { return func(o *ImageOptions) { o.Push = repo } }

// WithTag sets ImageOptions.Tag.
func WithTag(tag string) ImageOption { return func(o *ImageOptions) { o.Tag = tag } }

// WithCreated sets ImageOptions.Created.
func WithCreated(t time.Time) ImageOption { return func(o *ImageOptions) { o.Created = t } }

// WithRemote adds ImageOptions.Remote options.
func WithRemote(opts ...remote.Option) ImageOption {
	return func(o *ImageOptions) { o.Remote = append(o.Remote, opts...) }
}

// NewImage returns the image arm: it builds src with static (which must
// produce a static binary; nil = src.Bin is used as it is) and wraps the
// binary in an OCI image.
func NewImage(static Builder, opts ...ImageOption) Builder {
	b := &imageBuilder{static: static}
	for _, opt := range opts {
		opt(&b.o)
	}
	return b
}

type imageBuilder struct {
	static Builder
	o      ImageOptions
	// Set when the registry made it (image_registry.go).
	cacheDir string
	progress func(format string, args ...any)
}

var _ Builder = (*imageBuilder)(nil)

func (b *imageBuilder) Arm() string { return ImageArm }

func (b *imageBuilder) Build(ctx context.Context, src Source) (Artifact, error) {
	var bin Artifact
	switch {
	case b.static != nil:
		a, err := b.static.Build(ctx, src)
		if err != nil {
			return Artifact{}, fmt.Errorf("build image: %w", err)
		}
		bin = a
	case src.Bin != "":
		a, err := BinaryArtifact(src.Bin)
		if err != nil {
			return Artifact{}, fmt.Errorf("build image: %w", err)
		}
		bin = a
	default:
		return Artifact{}, fmt.Errorf("build image from %s: no static builder and no prebuilt binary", src.Pkg)
	}
	if bin.SHA256 == "" {
		d, err := BinaryArtifact(bin.Path)
		if err != nil {
			return Artifact{}, fmt.Errorf("build image: %w", err)
		}
		bin.SHA256 = d.SHA256
	}
	o := b.o
	o.Dir = b.dirFor(bin)
	r, err := BuildImage(ctx, bin, o)
	if err != nil {
		return Artifact{}, err
	}
	if b.progress != nil {
		b.progress("%s: built in %s: %s", ImageArm, fmtMs(r.Artifact.BuildMs), homeRel(r.Layout))
		if r.Ref != "" {
			b.progress("%s: pushed %s", ImageArm, r.Ref)
		}
	}
	a := r.Artifact
	a.Ref = r.Ref
	return a, nil
}

// BinaryArtifact describes a prebuilt binary at path (its size, SHA-256 and
// the Go version from its build info, when it has one), so that BuildImage
// can take it.
func BinaryArtifact(path string) (Artifact, error) {
	f, err := os.Open(path)
	if err != nil {
		return Artifact{}, fmt.Errorf("read binary %s: %w", path, err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return Artifact{}, fmt.Errorf("read binary %s: %w", path, err)
	}
	a := Artifact{Arm: "binary", Path: path, SizeBytes: n, SHA256: hex.EncodeToString(h.Sum(nil))}
	if bi, err := buildinfo.ReadFile(path); err == nil {
		a.GoVersion = bi.GoVersion
	}
	return a, nil
}

// BuildImage wraps the static binary bin.Path in an OCI image: one layer
// holding it at ImageEntrypoint (mode 0755, owned by root, mtime Created),
// on an empty base or o.Base; config with ImageEntrypoint, ImageUser, port
// ImagePort exposed and in $PORT, and labels with the build record. It
// writes the image as an OCI layout and as a tarball, and pushes it when
// o.Push is set. The same binary and options give the same digest.
func BuildImage(ctx context.Context, bin Artifact, o ImageOptions) (ImageResult, error) {
	r, err := buildImage(ctx, bin, o)
	if err != nil {
		return r, fmt.Errorf("build image: %w", err)
	}
	return r, nil
}

// imageSteps records what a build did, one line a step, as the artifact's
// Command.
type imageSteps [][]string

func (s *imageSteps) add(step ...string) { *s = append(*s, step) }

func (s imageSteps) lines() []string {
	out := make([]string, len(s))
	for i, c := range s {
		out[i] = strings.Join(c, " ")
	}
	return out
}

// buildImage is BuildImage without the "build image: " prefix on its
// errors.
func buildImage(ctx context.Context, bin Artifact, o ImageOptions) (ImageResult, error) {
	start := time.Now()
	var r ImageResult
	if bin.Path == "" {
		return r, errors.New("no binary")
	}
	bin, err := completeBinary(bin)
	if err != nil {
		return r, err
	}
	created, err := imageCreated(o.Created)
	if err != nil {
		return r, err
	}
	binName := filepath.Base(bin.Path)
	dir := o.Dir
	if dir == "" {
		dir = filepath.Dir(bin.Path)
	}
	var steps imageSteps
	img, err := assembleImage(bin, o, created, &steps)
	if err != nil {
		return r, err
	}
	r, digest, tarSum, err := writeImage(ctx, img, o.Tag, dir, binName, &steps)
	if err != nil {
		return r, err
	}
	if o.Push != "" {
		ref, err := PushImage(ctx, img, o.Push, o.Remote...)
		if err != nil {
			return r, err
		}
		r.Ref = ref
		steps.add("push", o.Push, "# "+ref)
	}
	flags := "base=" + baseName(o.Base) + " user=" + ImageUser + " port=" + ImagePort
	if bin.Flags != "" {
		flags = bin.Flags + " " + flags
	}
	r.Artifact = Artifact{
		Arm:       ImageArm,
		Path:      r.Tarball,
		SizeBytes: r.LayerBytes,
		BuildMs:   float64(time.Since(start)) / float64(time.Millisecond),
		Command:   steps.lines(),
		Flags:     flags,
		GoVersion: bin.GoVersion,
		SHA256:    tarSum,
		Image:     r.Layout,
		Digest:    digest.String(),
		Package:   bin.Package,
		BuiltAt:   time.Now().UTC().Format(time.RFC3339),
	}
	return r, nil
}

// writeImage tags img (tag, else coldstart/NAME:DIGEST12) and writes it
// into dir as NAME.oci and NAME.image.tar. It returns the result so far,
// img's digest and the tarball's SHA-256.
func writeImage(ctx context.Context, img v1.Image, tag, dir, binName string, steps *imageSteps) (r ImageResult, digest v1.Hash, tarSum string, err error) {
	digest, err = img.Digest()
	if err != nil {
		return r, digest, "", fmt.Errorf("digest: %w", err)
	}
	if tag == "" {
		tag = "coldstart/" + repoName(binName) + ":" + digest.Hex[:12]
	}
	ref, err := name.NewTag(tag)
	if err != nil {
		return r, digest, "", fmt.Errorf("tag %q: %w", tag, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return r, digest, "", err
	}
	if err := ctx.Err(); err != nil {
		return r, digest, "", err
	}
	if err := saveImage(&r, img, ref, filepath.Join(dir, binName), steps); err != nil {
		return r, digest, "", err
	}
	if r.LayerBytes, err = layerBytes(img); err != nil {
		return r, digest, "", err
	}
	tarSum, r.TarballBytes, err = fileSHA256(r.Tarball)
	if err != nil {
		return r, digest, "", err
	}
	return r, digest, tarSum, nil
}

// completeBinary fills in the SHA-256 and Go version a caller left out (a
// bare path).
func completeBinary(bin Artifact) (Artifact, error) {
	if bin.SHA256 != "" && bin.GoVersion != "" {
		return bin, nil
	}
	d, err := BinaryArtifact(bin.Path)
	if err != nil {
		return bin, err
	}
	if bin.SHA256 == "" {
		bin.SHA256 = d.SHA256
	}
	if bin.GoVersion == "" {
		bin.GoVersion = d.GoVersion
	}
	return bin, nil
}

// imageCreated is the image's creation time in UTC: created, else
// $SOURCE_DATE_EPOCH, else the Unix epoch.
func imageCreated(created time.Time) (time.Time, error) {
	if created.IsZero() {
		var err error
		if created, err = sourceDateEpoch(); err != nil {
			return time.Time{}, err
		}
	}
	return created.UTC(), nil
}

// assembleImage is the base with the binary's layer appended and the
// config set.
func assembleImage(bin Artifact, o ImageOptions, created time.Time, steps *imageSteps) (v1.Image, error) {
	base, baseDesc, err := loadBase(o.Base)
	if err != nil {
		return nil, err
	}
	steps.add("base", baseDesc)
	img, err := appendBinaryLayer(base, bin.Path, o.Base != "", created, steps)
	if err != nil {
		return nil, err
	}
	return configureImage(img, bin, o, created, steps)
}

// appendBinaryLayer appends to base one layer holding the binary at
// ImageEntrypoint, with the libraries it needs when there is no base image
// (hasBase false).
func appendBinaryLayer(base v1.Image, path string, hasBase bool, created time.Time, steps *imageSteps) (v1.Image, error) {
	layerType := types.OCILayer
	if hasBase {
		if mt, err := base.MediaType(); err == nil && mt == types.DockerManifestSchema2 {
			layerType = types.DockerLayer
		}
	}
	// A dynamically linked binary (the default arm: cgo links libc) on an
	// empty base would not start: its ELF interpreter and shared libraries
	// come from this host into the same layer, at the paths the loader
	// looks in. A base image brings its own.
	var libs []elfdeps.File
	if !hasBase {
		var missing []string
		var err error
		libs, missing, err = elfdeps.Needed(path)
		if err != nil {
			return nil, err
		}
		if len(missing) > 0 {
			return nil, fmt.Errorf("%s needs %s, not found on this host (give a base image with --image-base)", path, strings.Join(missing, ", "))
		}
	}
	layerTar, err := binaryLayerTar(path, libs, created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(layerType), tarball.WithCompressedCaching)
	if err != nil {
		return nil, fmt.Errorf("layer from %s: %w", path, err)
	}
	img, err := mutate.Append(base, mutate.Addendum{
		Layer: layer,
		History: v1.History{
			Created:   v1.Time{Time: created},
			CreatedBy: "COPY " + filepath.Base(path) + " " + ImageEntrypoint + " # coldstart image arm",
		},
	})
	if err != nil {
		return nil, fmt.Errorf("append layer: %w", err)
	}
	steps.add("layer", path+" -> "+ImageEntrypoint, "mode=0755", "uid=0", "gid=0", "mtime="+created.Format(time.RFC3339))
	for _, l := range libs {
		steps.add("layer", l.Real+" -> "+l.Path, "mode=0755", "# needed by the dynamic loader")
	}
	return img, nil
}

// configureImage sets the entrypoint, user, port, platform and build-record
// labels in img's config.
func configureImage(img v1.Image, bin Artifact, o ImageOptions, created time.Time, steps *imageSteps) (v1.Image, error) {
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	cf = cf.DeepCopy()
	arch, goos := binaryPlatform(bin.Path)
	cf.OS, cf.Architecture = goos, arch
	cf.Created = v1.Time{Time: created}
	cf.Config.Entrypoint = []string{ImageEntrypoint}
	cf.Config.Cmd = nil // a base image's Cmd would become the server's arguments
	cf.Config.User = ImageUser
	cf.Config.WorkingDir = "/"
	if cf.Config.ExposedPorts == nil {
		cf.Config.ExposedPorts = map[string]struct{}{}
	}
	cf.Config.ExposedPorts[ImagePort+"/tcp"] = struct{}{}
	cf.Config.Env = setEnv(cf.Config.Env, "PORT", ImagePort)
	if cf.Config.Labels == nil {
		cf.Config.Labels = map[string]string{}
	}
	for k, v := range imageLabels(bin, o.Labels) {
		cf.Config.Labels[k] = v
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("set config: %w", err)
	}
	if o.Base == "" {
		img = mutate.MediaType(img, types.OCIManifestSchema1)
		img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	}
	steps.add("config", "entrypoint="+ImageEntrypoint, "user="+ImageUser, "expose="+ImagePort+"/tcp", "env=PORT="+ImagePort, "created="+created.Format(time.RFC3339))
	return img, nil
}

// saveImage writes img as the OCI layout PREFIX.oci and the tarball
// PREFIX.image.tar, setting r's Layout, Tarball and Tag.
func saveImage(r *ImageResult, img v1.Image, ref name.Tag, prefix string, steps *imageSteps) error {
	r.Layout = prefix + ".oci"
	if err := writeLayout(r.Layout, img, ref.String()); err != nil {
		return err
	}
	steps.add("oci-layout", r.Layout)
	r.Tarball = prefix + ".image.tar"
	if err := writeTarball(r.Tarball, ref, img); err != nil {
		return err
	}
	steps.add("tarball", r.Tarball, "# docker load -i "+r.Tarball)
	r.Tag = ref.String()
	return nil
}

// layerBytes is the compressed size of img's layers.
func layerBytes(img v1.Image) (int64, error) {
	layers, err := img.Layers()
	if err != nil {
		return 0, fmt.Errorf("layers: %w", err)
	}
	var total int64
	for _, l := range layers {
		n, err := l.Size()
		if err != nil {
			return 0, fmt.Errorf("layer size: %w", err)
		}
		total += n
	}
	return total, nil
}

// PushImage pushes img to repo (REGISTRY/REPO[:TAG]) and returns the
// digest reference REPO@sha256:... A registry on localhost or a loopback
// address is spoken to over plain HTTP.
func PushImage(ctx context.Context, img v1.Image, repo string, opts ...remote.Option) (string, error) {
	ref, err := name.ParseReference(repo)
	if err != nil {
		return "", fmt.Errorf("push to %q: want REGISTRY/REPO[:TAG]: %w", repo, err)
	}
	if _, ok := ref.(name.Digest); ok {
		return "", fmt.Errorf("push to %q: want REGISTRY/REPO[:TAG], not a digest reference", repo)
	}
	ro := append([]remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}, opts...)
	if err := remote.Write(ref, img, ro...); err != nil {
		return "", fmt.Errorf("push image to %s (registry %s): %w", repo, ref.Context().RegistryStr(), err)
	}
	d, err := img.Digest()
	if err != nil {
		return "", fmt.Errorf("push image to %s: %w", repo, err)
	}
	return ref.Context().Digest(d.String()).String(), nil
}

func loadBase(path string) (v1.Image, string, error) {
	if path == "" {
		return empty.Image, "scratch", nil
	}
	img, err := ociimage.Load(path)
	if err != nil {
		return nil, "", fmt.Errorf("base image: %w", err)
	}
	d, err := img.Digest()
	if err != nil {
		return nil, "", fmt.Errorf("base image %s: %w", path, err)
	}
	return img, path + "@" + d.String(), nil
}

func baseName(path string) string {
	if path == "" {
		return "scratch"
	}
	return filepath.Base(path)
}

// binaryLayerTar is a tar stream holding the binary at ImageEntrypoint and
// each library at its Path (with its parent directories), all owned by root.
func binaryLayerTar(path string, libs []elfdeps.File, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	add := func(src, dst string) error {
		data, err := os.ReadFile(src)
		if err != nil {
			return fmt.Errorf("read %s: %w", src, err)
		}
		dst = strings.TrimPrefix(filepath.Clean(dst), "/")
		var parents []string
		for d := filepath.Dir(dst); d != "." && d != "/" && !dirs[d]; d = filepath.Dir(d) {
			dirs[d] = true
			parents = append(parents, d)
		}
		for i := len(parents) - 1; i >= 0; i-- {
			h := &tar.Header{Typeflag: tar.TypeDir, Name: parents[i] + "/", Mode: 0o755, ModTime: mtime, Format: tar.FormatPAX}
			if err := tw.WriteHeader(h); err != nil {
				return fmt.Errorf("tar %s: %w", parents[i], err)
			}
		}
		hdr := &tar.Header{
			Typeflag: tar.TypeReg,
			Name:     dst,
			Mode:     0o755,
			Size:     int64(len(data)),
			ModTime:  mtime,
			Format:   tar.FormatPAX,
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("tar %s: %w", src, err)
		}
		if _, err := tw.Write(data); err != nil {
			return fmt.Errorf("tar %s: %w", src, err)
		}
		return nil
	}
	if err := add(path, ImageEntrypoint); err != nil {
		return nil, err
	}
	for _, l := range libs {
		if err := add(l.Real, l.Path); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("tar %s: %w", path, err)
	}
	return buf.Bytes(), nil
}

// binaryPlatform is the binary's GOARCH and GOOS from its build info, else
// this machine's.
func binaryPlatform(path string) (arch, goos string) {
	arch, goos = runtime.GOARCH, runtime.GOOS
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		return arch, goos
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "GOARCH":
			arch = s.Value
		case "GOOS":
			goos = s.Value
		}
	}
	return arch, goos
}

// imageLabels is the build record as labels.
func imageLabels(bin Artifact, extra map[string]string) map[string]string {
	l := map[string]string{
		ImageLabelPrefix + "arm":           ImageArm,
		ImageLabelPrefix + "binary-arm":    bin.Arm,
		ImageLabelPrefix + "go-version":    bin.GoVersion,
		ImageLabelPrefix + "binary-sha256": bin.SHA256,
		ImageLabelPrefix + "flags":         bin.Flags,
	}
	for k, v := range extra {
		l[k] = v
	}
	for k, v := range l {
		if v == "" {
			delete(l, k)
		}
	}
	return l
}

// setEnv sets key=value in env, replacing an earlier value.
func setEnv(env []string, key, value string) []string {
	out := make([]string, 0, len(env)+1)
	for _, e := range env {
		if !strings.HasPrefix(e, key+"=") {
			out = append(out, e)
		}
	}
	return append(out, key+"="+value)
}

var repoUnsafe = regexp.MustCompile(`[^a-z0-9._-]+`)

// repoName makes a binary name usable as a repository path component.
func repoName(s string) string {
	s = repoUnsafe.ReplaceAllString(strings.ToLower(s), "-")
	s = strings.Trim(s, "._-")
	if s == "" {
		return "server"
	}
	return s
}

// sourceDateEpoch is $SOURCE_DATE_EPOCH (reproducible-builds.org), else
// the Unix epoch.
func sourceDateEpoch() (time.Time, error) {
	v := os.Getenv("SOURCE_DATE_EPOCH")
	if v == "" {
		return time.Unix(0, 0), nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: want seconds since 1970: %w", v, err)
	}
	return time.Unix(n, 0), nil
}

// writeLayout writes img as the only image of a fresh OCI layout at dir,
// replacing an earlier one (whose blobs might otherwise accumulate).
func writeLayout(dir string, img v1.Image, refName string) error {
	tmp := dir + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("write layout %s: %w", dir, err)
	}
	p, err := layout.Write(tmp, empty.Index)
	if err != nil {
		return fmt.Errorf("write layout %s: %w", dir, err)
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": refName,
	})); err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("write layout %s: %w", dir, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("write layout %s: %w", dir, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("write layout %s: %w", dir, err)
	}
	return nil
}

func writeTarball(path string, ref name.Reference, img v1.Image) error {
	tmp := path + ".tmp"
	if err := tarball.WriteToFile(tmp, ref, img); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write tarball %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write tarball %s: %w", path, err)
	}
	return nil
}

func fileSHA256(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, fmt.Errorf("read %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}
