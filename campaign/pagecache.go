package campaign

import (
	"context"
	"errors"
	"fmt"

	"github.com/coldstart-go/coldstart/internal/pagecache"
	"github.com/coldstart-go/coldstart/record"
)

// PageCache says what a cold start finds in the page cache.
type PageCache string

const (
	// Warm leaves the page cache as it is: after the warm-up round the
	// arm's files are cached, as on a node that started it before.
	Warm PageCache = "warm"
	// Cold evicts the arm's files (binary, shared libraries, an image's
	// root filesystem and the runtime's binary) before each start, as on
	// the first start after a pull or after memory pressure.
	Cold PageCache = "cold"
)

// ParsePageCache reads "warm" or "cold" ("" = warm).
func ParsePageCache(s string) (PageCache, error) {
	switch PageCache(s) {
	case "", Warm:
		return Warm, nil
	case Cold:
		return Cold, nil
	}
	return "", fmt.Errorf("%q, want warm or cold", s)
}

// CacheFiler is a launcher that knows which files starting path reads:
// for an image, its unpacked root filesystem and the runtime's binary.
type CacheFiler interface {
	CacheFiles(ctx context.Context, path string) ([]string, error)
}

// ErrNoCacheFiles is returned for an arm whose launcher cannot say which
// files it reads (a docker or podman engine keeps them in its own store).
var ErrNoCacheFiles = errors.New("cannot evict this arm's files from the page cache")

// cacheFiles lists what starting arm a reads: its binary and the shared
// libraries it loads, or what its launcher names.
func (a Arm) cacheFiles(ctx context.Context) ([]string, error) {
	if a.Launcher == nil {
		return pagecache.Files(a.Path)
	}
	if cf, ok := a.Launcher.(CacheFiler); ok {
		return cf.CacheFiles(ctx, a.Path)
	}
	return nil, fmt.Errorf("%s: %w (launcher %T)", a.Name, ErrNoCacheFiles, a.Launcher)
}

// evict drops arm a's files from the page cache (fadvise DONTNEED, file by
// file: nothing else on the machine loses its cache) and counts their
// resident pages before and after.
func (a Arm) evict(ctx context.Context) (*record.PageCacheEviction, error) {
	files, err := a.cacheFiles(ctx)
	if err != nil {
		return nil, err
	}
	e, err := pagecache.EvictCounted(files...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", a.Name, err)
	}
	return &record.PageCacheEviction{FilePages: e.Before.Total, ResidentBefore: e.Before.Resident, ResidentAfter: e.After.Resident}, nil
}
