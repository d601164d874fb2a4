// Package pull measures what an image costs a node before the server's
// process starts: it serves each arm's image from a registry on 127.0.0.1
// with the node's link speed capped in the serving path, pulls it as a node
// does (manifest, config, then the layers the node lacks), unpacks the
// layers into a root filesystem, and starts the server from there, so that
// "node without the image → first RPC" is one figure. Its rows are
// record.PullRow; record.PullBreakEvens derives from them, for each pair of
// images, how many starts one pull must serve before the smaller image
// stops paying.
package pull

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/coldstart-go/coldstart/builds"
	"github.com/coldstart-go/coldstart/internal/pagecache"
	"github.com/coldstart-go/coldstart/internal/progress"
	"github.com/coldstart-go/coldstart/record"
)

// Starter starts the server binary bin (inside an unpacked root filesystem)
// once, waits for its first RPC, stops it, and returns the time from spawn
// to first RPC.
type Starter interface {
	Start(ctx context.Context, arm, bin string) (time.Duration, error)
}

// Config is one pull campaign.
type Config struct {
	Binaries     []Binary
	Compressions []record.Compression
	Layerings    []record.Layering
	Bandwidths   []Bandwidth
	// Iterations is how many times each variant is pulled at each
	// bandwidth (0 = 1).
	Iterations int
	// Registry serves the images (nil = Run starts one on 127.0.0.1:Port
	// and stops it before it returns; a caller's stays running).
	Registry *Registry
	// Port is the port of the registry Run starts (0 = any free port).
	Port int
	// WorkDir holds the nodes' directories ("" = the system temp dir).
	WorkDir string
	// Starter starts the server after each pull (nil = pull and unpack
	// only; the start columns stay zero).
	Starter Starter
	// Record gets each row as it is measured (nil = none).
	Record func(record.PullRow) error
	// Progress gets a line per image built, then each pull as it is done
	// through progress.For: a line per pull, or a live bar when it is a
	// progress.Terminal; the total is Iterations × Bandwidths × images
	// (nil = quiet).
	Progress io.Writer
}

type image struct {
	v      record.PullVariant
	bin    Binary
	refs   [3]string // by deploy
	size   [3]int64
	digest [3]v1.Hash
}

// Run builds every variant's image for two deploys, serves them from the
// registry, and pulls each at each bandwidth, Iterations times,
// variants interleaved (their order rotates each round). It returns the
// rows measured (also when interrupted: then with ctx's error). Every node
// directory is removed, and a registry Run started is stopped, before it
// returns.
func Run(ctx context.Context, c Config) (rows []record.PullRow, err error) {
	defer func() {
		// Interrupted: say why, whichever step saw it. An HTTP transfer's
		// error names the cause (a signal, for coldstart pull); a check
		// between two requests says only "context canceled".
		if cause := context.Cause(ctx); err != nil && cause != nil && !errors.Is(err, cause) {
			err = fmt.Errorf("%w: %w", cause, err)
		}
	}()
	if c.Iterations <= 0 {
		c.Iterations = 1
	}
	note := func(format string, args ...any) {
		if c.Progress != nil {
			fmt.Fprintf(c.Progress, format+"\n", args...)
		}
	}
	reg := c.Registry
	if reg == nil {
		if reg, err = StartRegistry(c.Port); err != nil {
			return nil, err
		}
		defer func() {
			if cerr := reg.Close(); err == nil {
				err = cerr
			}
		}()
	}
	var imgs []*image
	for _, b := range c.Binaries {
		for _, comp := range c.Compressions {
			for _, lay := range c.Layerings {
				im := &image{v: record.PullVariant{Arm: b.Arm, Compression: comp, Layering: lay}, bin: b}
				for d := 1; d <= 2; d++ {
					img, err := BuildVariant(b, im.v, d)
					if err != nil {
						return nil, err
					}
					if im.refs[d], err = reg.Push(ctx, im.v, d, img); err != nil {
						return nil, err
					}
					sizes, err := LayerSizes(img)
					if err != nil {
						return nil, fmt.Errorf("image %s: %w", im.v, err)
					}
					for _, s := range sizes {
						im.size[d] += s
					}
					if im.digest[d], err = img.Digest(); err != nil {
						return nil, fmt.Errorf("image %s: %w", im.v, err)
					}
				}
				note("pull: image %s: %d bytes (deploy 2: %s)", im.v, im.size[1], im.refs[2])
				imgs = append(imgs, im)
			}
		}
	}
	prog := progress.For(c.Progress)
	prog.Start(c.Iterations*len(c.Bandwidths)*len(imgs), "pulls")
	defer prog.Done() // before the caller prints results or the error
	for it := 1; it <= c.Iterations; it++ {
		for _, bw := range c.Bandwidths {
			for k := range imgs {
				im := imgs[(k+it-1)%len(imgs)]
				rs, err := c.pullOne(ctx, reg, im, bw, it)
				for _, r := range rs {
					rows = append(rows, r)
					if c.Record != nil {
						if rerr := c.Record(r); rerr != nil {
							return rows, rerr
						}
					}
				}
				if err != nil {
					return rows, err
				}
				if len(rs) > 0 {
					r := rs[0]
					prog.Step(fmt.Sprintf("pull: %s at %s: %d wire bytes, pull %.0f ms, unpack %.1f ms, cold start %.1f ms", im.v, bw, r.WireBytes, r.PullMs, r.UnpackMs, r.ColdStartMs))
				} else {
					prog.Skip(1)
				}
			}
		}
	}
	return rows, nil
}

// pullOne pulls deploy 1 of im into a fresh node, starts it, then pulls
// deploy 2 into the same node; the node is removed afterwards.
func (c Config) pullOne(ctx context.Context, reg *Registry, im *image, bw Bandwidth, it int) (rows []record.PullRow, err error) {
	node, err := NewNode(c.WorkDir)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := node.Close(); err == nil {
			err = cerr
		}
	}()
	defer reg.SetBandwidth(Max)
	for d := 1; d <= 2; d++ {
		r := record.PullRow{PullVariant: im.v, Deploy: d, Bandwidth: bw.String(), BandwidthBits: int64(bw), Iteration: it, ImageBytes: im.size[d]}
		reg.SetBandwidth(bw) // an empty bucket: nothing saved up while the node unpacked
		before := reg.Served()
		p, err := node.Pull(ctx, im.refs[d])
		if err != nil {
			return rows, err
		}
		r.WireBytes = reg.Served() - before
		var only []v1.Hash
		if d > 1 {
			only = p.New
		}
		u, err := node.Unpack(ctx, p.Digest, only)
		if err != nil {
			return rows, err
		}
		r.LayerBytes, r.LayersPulled, r.LayersReused = p.LayerBytes, p.LayersPulled, p.LayersReused
		r.ManifestMs, r.LayersMs = ms(p.Manifest), ms(p.Layers)
		r.PullMs = r.ManifestMs + r.LayersMs
		r.UnpackMs, r.UnpackedBytes = ms(u.Duration), u.Bytes
		r.ImageReadyMs = r.PullMs + r.UnpackMs
		if p.Layers > 0 {
			r.MeasuredBits = float64(p.LayerBytes) * 8 / p.Layers.Seconds()
		}
		if d == 1 && c.Starter != nil {
			if err := c.starts(ctx, &r, u.Rootfs); err != nil {
				return rows, err
			}
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// starts fills r's start columns: right after the unpack, after evicting
// the root filesystem, and once more warm.
func (c Config) starts(ctx context.Context, r *record.PullRow, rootfs string) error {
	bin := filepath.Join(rootfs, filepath.Base(builds.ImageEntrypoint))
	d, err := c.Starter.Start(ctx, r.Arm, bin)
	if err != nil {
		return fmt.Errorf("start %s after pull: %w", r.PullVariant, err)
	}
	r.AfterPullStartMs = ms(d)
	files, err := pagecache.Tree(rootfs)
	if err != nil {
		return err
	}
	e, err := pagecache.EvictCounted(files...)
	if err != nil {
		return err
	}
	r.ResidentBefore, r.ResidentAfter = &e.Before, &e.After
	if d, err = c.Starter.Start(ctx, r.Arm, bin); err != nil {
		return fmt.Errorf("start %s with a cold page cache: %w", r.PullVariant, err)
	}
	r.ColdStartMs = ms(d)
	if d, err = c.Starter.Start(ctx, r.Arm, bin); err != nil {
		return fmt.Errorf("start %s warm: %w", r.PullVariant, err)
	}
	r.WarmStartMs = ms(d)
	r.NodeToFirstRPCMs = r.ImageReadyMs + r.ColdStartMs
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
