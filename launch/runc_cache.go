package launch

import (
	"context"

	"github.com/coldstart-go/coldstart/internal/pagecache"
)

// CacheFiles lists what starting the image at path reads from disk: the
// unpacked root filesystem (unpacking it first, as Launch would) and the
// runc binary with its shared libraries.
func (r *Runc) CacheFiles(ctx context.Context, path string) ([]string, error) {
	fs, err := r.Prepare(ctx, path)
	if err != nil {
		return nil, err
	}
	files, err := pagecache.Tree(fs.Dir)
	if err != nil {
		return nil, err
	}
	bin, err := r.binary()
	if err != nil {
		return nil, err
	}
	rf, err := pagecache.Files(bin)
	if err != nil {
		return nil, err
	}
	return append(files, rf...), nil
}
