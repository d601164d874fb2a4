package pull

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	"golang.org/x/time/rate"
)

// ErrPortInUse is returned by StartRegistry when its port is taken.
var ErrPortInUse = errors.New("port in use")

// Registry is an OCI registry (go-containerregistry's pkg/registry, blobs
// in memory) served on 127.0.0.1 by this process, with every response body
// sent through one token bucket: the node's link. All connections share the
// bucket, as they would share a node's network.
type Registry struct {
	srv  *http.Server
	ln   net.Listener
	done chan struct{}

	mu  sync.Mutex
	lim *rate.Limiter // nil = no cap
	bw  Bandwidth

	served atomic.Int64 // response body bytes written

	// blobs is the registry's blob store, kept to drop an image's blobs
	// once no node will pull it again (DeleteBlobs).
	blobs registry.BlobHandler
}

// StartRegistry serves a fresh, empty registry on 127.0.0.1:port (0 = any
// free port). A port already taken returns ErrPortInUse, naming it. Close
// stops it.
func StartRegistry(port int) (*Registry, error) {
	if port < 0 || port > 65535 {
		return nil, fmt.Errorf("registry port %d: want 0..65535 (0 = any free port)", port)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("serve registry on %s: %w", addr, ErrPortInUse)
		}
		return nil, fmt.Errorf("serve registry on %s: %w", addr, err)
	}
	r := &Registry{ln: ln, done: make(chan struct{}), blobs: registry.NewInMemoryBlobHandler()}
	h := registry.New(registry.Logger(log.New(io.Discard, "", 0)), registry.WithBlobHandler(r.blobs))
	r.srv = &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) { h.ServeHTTP(r.wrap(w, req), req) }),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() {
		defer close(r.done)
		_ = r.srv.Serve(ln) // ErrServerClosed after Close
	}()
	return r, nil
}

// Host is the registry's host:port, for image references.
func (r *Registry) Host() string { return r.ln.Addr().String() }

// SetBandwidth caps every response body from now on at b (Max = no cap).
// The bucket starts empty (and is emptied again at the start of every
// response), so the first bytes wait like the rest and a transfer of n bytes
// takes n/rate, not (n-burst)/rate.
func (r *Registry) SetBandwidth(b Bandwidth) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bw = b
	if b == Max {
		r.lim = nil
		return
	}
	bps := b.BytesPerSecond()
	lim := rate.NewLimiter(rate.Limit(bps), burstFor(bps))
	lim.AllowN(time.Now(), lim.Burst()) // empty the bucket
	r.lim = lim
}

// Bandwidth is the current cap.
func (r *Registry) Bandwidth() Bandwidth {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bw
}

// Served is how many response body bytes the registry has written so far:
// manifests, configs and layers as they went over the wire (HTTP headers
// not counted).
func (r *Registry) Served() int64 { return r.served.Load() }

// burstFor is the bucket's size: 20 ms of traffic, at least 64 KiB. A
// write that sleeps past its time on a busy machine leaves tokens behind,
// and the next writes use them, so the average holds to the cap; the bucket
// is emptied at the start of every response (wrap), so a link that idled
// between requests does not send a burst above the cap.
func burstFor(bytesPerSecond float64) int {
	return max(int(bytesPerSecond/50), 64<<10)
}

// chunk is the most one write sends at once.
const chunk = 32 << 10

// Close stops the registry: the listener and every open connection. Its
// blobs were in memory and go with it. Safe to call more than once.
func (r *Registry) Close() error {
	err := r.srv.Close()
	<-r.done
	if err != nil {
		return fmt.Errorf("stop registry %s: %w", r.Host(), err)
	}
	return nil
}

func (r *Registry) wrap(w http.ResponseWriter, req *http.Request) http.ResponseWriter {
	r.mu.Lock()
	lim := r.lim
	r.mu.Unlock()
	if lim != nil {
		// Empty the bucket: what it saved while the link idled would go
		// out above the cap. (Pulls here are one request at a time; with
		// concurrent ones this would also take a running response's
		// savings, slowing it, never speeding anything past the cap.)
		now := time.Now()
		if n := int(lim.TokensAt(now)); n > 0 {
			lim.AllowN(now, n)
		}
	}
	return &throttled{w: w, ctx: req.Context(), lim: lim, served: &r.served}
}

// throttled writes a response body through the token bucket. It offers only
// Header, Write and WriteHeader, so io.Copy cannot bypass it with sendfile.
type throttled struct {
	w      http.ResponseWriter
	ctx    context.Context
	lim    *rate.Limiter
	served *atomic.Int64
}

func (t *throttled) Header() http.Header { return t.w.Header() }

func (t *throttled) WriteHeader(code int) { t.w.WriteHeader(code) }

func (t *throttled) Write(p []byte) (int, error) {
	var written int
	for len(p) > 0 {
		n := len(p)
		if t.lim != nil {
			n = min(n, chunk)
			if err := t.lim.WaitN(t.ctx, n); err != nil {
				return written, err
			}
		}
		// Count before writing: the write returns only after the client
		// has taken the bytes, and by then the client may already ask
		// Served how much it got.
		t.served.Add(int64(n))
		m, err := t.w.Write(p[:n])
		written += m
		t.served.Add(int64(m - n))
		if err != nil {
			return written, err
		}
		p = p[n:]
	}
	return written, nil
}
