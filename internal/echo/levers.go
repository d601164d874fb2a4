package echo

import (
	"flag"
	"fmt"
	"math"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"
)

// Levers are the grpc-go server settings a service owner can reach,
// exposed by the sample server as flags so a campaign can vary them
// (coldstart run -- --num-stream-workers=2). Each zero value leaves
// grpc-go's own default in place, so the zero Levers is grpc-go's server.
type Levers struct {
	// NumStreamWorkers serves streams on a fixed pool of this many
	// goroutines instead of one goroutine per stream (0 = per stream).
	NumStreamWorkers uint
	// MaxConcurrentStreams caps the streams each client connection may
	// have open at once (0 = grpc-go's default, unlimited).
	MaxConcurrentStreams uint
	// InitialWindowSize and InitialConnWindowSize are the HTTP/2 flow
	// control windows per stream and per connection, in bytes (0 =
	// grpc-go's 64 KiB with its bandwidth-delay estimator; grpc-go ignores
	// values below 64 KiB, and a value it takes turns the estimator off).
	InitialWindowSize, InitialConnWindowSize int
	// ReadBufferSize and WriteBufferSize are the connection's buffers in
	// bytes (0 = grpc-go's 32 KiB; -1 = none, reads and writes straight to
	// the socket, which grpc-go spells 0).
	ReadBufferSize, WriteBufferSize int
	// SharedWriteBuffer releases a connection's write buffer between
	// flushes instead of keeping one per connection.
	SharedWriteBuffer bool
	// KeepaliveTime pings a client connection idle this long, and
	// KeepaliveTimeout closes it when the ack does not come within that
	// long (0 = grpc-go's 2 h and 20 s).
	KeepaliveTime, KeepaliveTimeout time.Duration
	// MaxConnectionIdle closes a connection without streams this long
	// (0 = never).
	MaxConnectionIdle time.Duration
}

// Bind adds one flag per lever to fs, named as grpc-go's options are
// (--num-stream-workers for grpc.NumStreamWorkers), bound to l.
func (l *Levers) Bind(fs *flag.FlagSet) {
	fs.UintVar(&l.NumStreamWorkers, "num-stream-workers", l.NumStreamWorkers, "serve streams on a fixed pool of N goroutines (grpc.NumStreamWorkers; 0 = a goroutine per stream)")
	fs.UintVar(&l.MaxConcurrentStreams, "max-concurrent-streams", l.MaxConcurrentStreams, "streams a client connection may have open at once (grpc.MaxConcurrentStreams; 0 = unlimited)")
	fs.IntVar(&l.InitialWindowSize, "initial-window-size", l.InitialWindowSize, "HTTP/2 flow-control window per stream, bytes (grpc.InitialWindowSize; 0 = 64 KiB with the BDP estimator)")
	fs.IntVar(&l.InitialConnWindowSize, "initial-conn-window-size", l.InitialConnWindowSize, "HTTP/2 flow-control window per connection, bytes (grpc.InitialConnWindowSize; 0 = 64 KiB with the BDP estimator)")
	fs.IntVar(&l.ReadBufferSize, "read-buffer-size", l.ReadBufferSize, "connection read buffer, bytes (grpc.ReadBufferSize; 0 = 32 KiB, -1 = none)")
	fs.IntVar(&l.WriteBufferSize, "write-buffer-size", l.WriteBufferSize, "connection write buffer, bytes (grpc.WriteBufferSize; 0 = 32 KiB, -1 = none)")
	fs.BoolVar(&l.SharedWriteBuffer, "shared-write-buffer", l.SharedWriteBuffer, "release each connection's write buffer between flushes (grpc.SharedWriteBuffer)")
	fs.DurationVar(&l.KeepaliveTime, "keepalive-time", l.KeepaliveTime, "ping a client connection idle this long (keepalive.ServerParameters.Time; 0 = 2h)")
	fs.DurationVar(&l.KeepaliveTimeout, "keepalive-timeout", l.KeepaliveTimeout, "close a connection whose ping is not acked within this (keepalive.ServerParameters.Timeout; 0 = 20s)")
	fs.DurationVar(&l.MaxConnectionIdle, "max-connection-idle", l.MaxConnectionIdle, "close a connection without streams after this long (keepalive.ServerParameters.MaxConnectionIdle; 0 = never)")
}

// Check reports the first lever grpc-go would reject or silently
// misread, naming it as its flag.
func (l Levers) Check() error {
	for _, c := range []struct {
		name string
		v    int
		min  int
	}{
		{"initial-window-size", l.InitialWindowSize, 0},
		{"initial-conn-window-size", l.InitialConnWindowSize, 0},
		{"read-buffer-size", l.ReadBufferSize, -1},
		{"write-buffer-size", l.WriteBufferSize, -1},
	} {
		if c.v < c.min || c.v > math.MaxInt32 {
			return fmt.Errorf("--%s %d: want %d to %d", c.name, c.v, c.min, math.MaxInt32)
		}
	}
	if l.NumStreamWorkers > math.MaxUint32 || l.MaxConcurrentStreams > math.MaxUint32 {
		return fmt.Errorf("--num-stream-workers and --max-concurrent-streams: at most %d", uint32(math.MaxUint32))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"keepalive-time", l.KeepaliveTime}, {"keepalive-timeout", l.KeepaliveTimeout}, {"max-connection-idle", l.MaxConnectionIdle}} {
		if d.v < 0 {
			return fmt.Errorf("--%s %v: want a positive duration or 0", d.name, d.v)
		}
	}
	return nil
}

// ServerOptions are the grpc.ServerOptions for the levers that differ
// from grpc-go's defaults; none for the zero Levers.
func (l Levers) ServerOptions() []grpc.ServerOption {
	var opts []grpc.ServerOption
	if l.NumStreamWorkers > 0 {
		opts = append(opts, grpc.NumStreamWorkers(uint32(l.NumStreamWorkers)))
	}
	if l.MaxConcurrentStreams > 0 {
		opts = append(opts, grpc.MaxConcurrentStreams(uint32(l.MaxConcurrentStreams)))
	}
	if l.InitialWindowSize > 0 {
		opts = append(opts, grpc.InitialWindowSize(int32(l.InitialWindowSize)))
	}
	if l.InitialConnWindowSize > 0 {
		opts = append(opts, grpc.InitialConnWindowSize(int32(l.InitialConnWindowSize)))
	}
	if l.ReadBufferSize != 0 {
		opts = append(opts, grpc.ReadBufferSize(max(l.ReadBufferSize, 0)))
	}
	if l.WriteBufferSize != 0 {
		opts = append(opts, grpc.WriteBufferSize(max(l.WriteBufferSize, 0)))
	}
	if l.SharedWriteBuffer {
		opts = append(opts, grpc.SharedWriteBuffer(true))
	}
	if l.KeepaliveTime > 0 || l.KeepaliveTimeout > 0 || l.MaxConnectionIdle > 0 {
		opts = append(opts, grpc.KeepaliveParams(keepalive.ServerParameters{Time: l.KeepaliveTime, Timeout: l.KeepaliveTimeout, MaxConnectionIdle: l.MaxConnectionIdle}))
	}
	return opts
}
