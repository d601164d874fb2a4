package echo

import (
	"flag"
	"fmt"
	"net/http"
	"time"
)

// HTTPLevers are net/http's server settings a service owner can reach
// for the sample's HTTP listener (HTTP/1.1, and HTTP/2 over TLS),
// exposed as flags so a campaign can vary them as it does grpc-go's.
// Each zero value leaves net/http's own default in place.
type HTTPLevers struct {
	// NoKeepAlives closes each HTTP/1.1 connection after its response
	// (http.Server.SetKeepAlivesEnabled(false)): every request pays a
	// new connection, as behind a proxy that does not pool.
	NoKeepAlives bool
	// IdleTimeout closes a keep-alive connection idle this long (0 =
	// net/http's ReadTimeout, none here).
	IdleTimeout time.Duration
	// MaxHeaderBytes caps a request's header (0 = net/http's 1 MiB).
	MaxHeaderBytes int
	// HTTP2MaxConcurrentStreams caps the streams of one HTTP/2
	// connection (0 = net/http's at least 100).
	HTTP2MaxConcurrentStreams int
	// HTTP2MaxReceiveBufferPerConnection and ...PerStream are HTTP/2's
	// flow-control windows for request bodies, bytes (0 = net/http's 1 MiB
	// and 1 MiB).
	HTTP2MaxReceiveBufferPerConnection, HTTP2MaxReceiveBufferPerStream int
	// HTTP2MaxReadFrameSize is the largest HTTP/2 frame the server reads,
	// bytes (0 = net/http's 1 MiB).
	HTTP2MaxReadFrameSize int
}

// Bind adds one flag per lever to fs, named --http-… and --http2-… after
// the http.Server and http.HTTP2Config fields they set.
func (l *HTTPLevers) Bind(fs *flag.FlagSet) {
	fs.BoolVar(&l.NoKeepAlives, "http-no-keepalives", l.NoKeepAlives, "close each HTTP/1.1 connection after its response (http.Server.SetKeepAlivesEnabled(false))")
	fs.DurationVar(&l.IdleTimeout, "http-idle-timeout", l.IdleTimeout, "close a keep-alive HTTP connection idle this long (http.Server.IdleTimeout; 0 = never)")
	fs.IntVar(&l.MaxHeaderBytes, "http-max-header-bytes", l.MaxHeaderBytes, "largest request header, bytes (http.Server.MaxHeaderBytes; 0 = 1 MiB)")
	fs.IntVar(&l.HTTP2MaxConcurrentStreams, "http2-max-concurrent-streams", l.HTTP2MaxConcurrentStreams, "streams one HTTP/2 connection may have open (http.HTTP2Config.MaxConcurrentStreams; 0 = at least 100)")
	fs.IntVar(&l.HTTP2MaxReceiveBufferPerConnection, "http2-max-receive-buffer-per-connection", l.HTTP2MaxReceiveBufferPerConnection, "HTTP/2 flow-control window per connection, bytes (64 KiB to 4 MiB; 0 = 1 MiB)")
	fs.IntVar(&l.HTTP2MaxReceiveBufferPerStream, "http2-max-receive-buffer-per-stream", l.HTTP2MaxReceiveBufferPerStream, "HTTP/2 flow-control window per stream, bytes (below 4 MiB; 0 = 1 MiB)")
	fs.IntVar(&l.HTTP2MaxReadFrameSize, "http2-max-read-frame-size", l.HTTP2MaxReadFrameSize, "largest HTTP/2 frame read, bytes (16 KiB to 16 MiB; 0 = 1 MiB)")
}

// Check reports the first lever net/http would silently ignore (it
// falls back to its default for a value out of range), naming its flag.
func (l HTTPLevers) Check() error {
	const kib, mib = 1 << 10, 1 << 20
	for _, c := range []struct {
		name   string
		v      int
		lo, hi int
		in     bool // hi inclusive
	}{
		{"http-max-header-bytes", l.MaxHeaderBytes, 1, 1 << 30, true},
		{"http2-max-concurrent-streams", l.HTTP2MaxConcurrentStreams, 1, 1 << 31, false},
		{"http2-max-receive-buffer-per-connection", l.HTTP2MaxReceiveBufferPerConnection, 64 * kib, 4 * mib, false},
		{"http2-max-receive-buffer-per-stream", l.HTTP2MaxReceiveBufferPerStream, 1, 4 * mib, false},
		{"http2-max-read-frame-size", l.HTTP2MaxReadFrameSize, 16 * kib, 16 * mib, true},
	} {
		if c.v == 0 { // net/http's default
			continue
		}
		if c.v < c.lo || c.v > c.hi || (!c.in && c.v == c.hi) {
			rng := fmt.Sprintf("%d to %d", c.lo, c.hi)
			if !c.in {
				rng = fmt.Sprintf("%d to below %d", c.lo, c.hi)
			}
			return fmt.Errorf("--%s %d: want %s, or 0 for net/http's default (it ignores other values)", c.name, c.v, rng)
		}
	}
	if l.IdleTimeout < 0 {
		return fmt.Errorf("--http-idle-timeout %v: want a positive duration or 0", l.IdleTimeout)
	}
	return nil
}

// apply sets the levers that differ from net/http's defaults on s.
func (l HTTPLevers) apply(s *http.Server) {
	if l.NoKeepAlives {
		s.SetKeepAlivesEnabled(false)
	}
	s.IdleTimeout = l.IdleTimeout
	s.MaxHeaderBytes = l.MaxHeaderBytes
	// A zero field of http.HTTP2Config is net/http's default.
	s.HTTP2 = &http.HTTP2Config{
		MaxConcurrentStreams:          l.HTTP2MaxConcurrentStreams,
		MaxReceiveBufferPerConnection: l.HTTP2MaxReceiveBufferPerConnection,
		MaxReceiveBufferPerStream:     l.HTTP2MaxReceiveBufferPerStream,
		MaxReadFrameSize:              l.HTTP2MaxReadFrameSize,
	}
}
