package builds

import (
	"path/filepath"
	"sync"
)

// The image arm in the registry: New("image", o) and BuildAll build the
// static arm (cached like any other) and wrap it in an image under
// o.CacheDir/image/<binary sha256 prefix>/, with the options last given to
// SetImageOptions.
func init() {
	Register(ImageArm, func(o Options) (Builder, error) {
		imageArmOpts.Lock()
		opts := append([]ImageOption{}, imageArmOpts.opts...)
		imageArmOpts.Unlock()
		b := NewImage(Cached(newStatic(o), o), opts...).(*imageBuilder)
		b.cacheDir = filepath.Join(o.CacheDir, "image")
		b.progress = o.progress
		return b, nil
	})
}

var imageArmOpts struct {
	sync.Mutex
	opts []ImageOption
}

// SetImageOptions sets the options of the registered image arm (a base
// image, a push target, ...), for New and BuildAll; each call replaces the
// previous options. A command sets them from its flags before building:
//
//	builds.SetImageOptions(builds.WithBase(o.ImageBase), builds.WithPush(o.Push))
func SetImageOptions(opts ...ImageOption) {
	imageArmOpts.Lock()
	defer imageArmOpts.Unlock()
	imageArmOpts.opts = append([]ImageOption{}, opts...)
}

// dirFor is where the image of bin goes: ImageOptions.Dir, else (when the
// registry made the builder) the cache directory, keyed by the binary.
func (b *imageBuilder) dirFor(bin Artifact) string {
	if b.o.Dir != "" || b.cacheDir == "" {
		return b.o.Dir
	}
	key := bin.SHA256
	if len(key) > 16 {
		key = key[:16]
	}
	return filepath.Join(b.cacheDir, key)
}
