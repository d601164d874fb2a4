// Package leangrpc is a lean gRPC client: unary calls and bidirectional
// streams over one cleartext HTTP/2 connection, written directly as frames
// with golang.org/x/net/http2's Framer and hpack, as h2load does in C. It
// exists so that a load generator's own CPU per call stays small: no
// per-call goroutines, no per-call header encoding (a method's request
// header block is HPACK-encoded once it is a few indexes into the server's
// decoder table, and re-sent while that table stays as it is), each call's
// HEADERS and DATA in one write, requests
// from concurrent callers coalesced into one write, responses read in
// large buffered reads (raw read system calls for a lone call, see
// source), flow-control updates and PING acks batched with requests.
//
// It speaks the gRPC-over-HTTP/2 protocol with messages as raw bytes
// (already marshalled protobuf), in clear text or over TLS (WithTLS),
// without compression, retries, name resolution or load balancing: one
// Conn is one connection to one address.
// Errors the server sends are *status.Status errors from grpc's status
// package, as grpc-go's client returns them.
package leangrpc

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Defaults for the windows this client advertises. They match steady's
// grpc-go options (4 MiB per stream, 16 MiB per connection), so the two
// clients see the same flow control.
const (
	DefaultStreamWindow = 4 << 20
	DefaultConnWindow   = 16 << 20
)

// statusOK is every successful call's status, allocated once.
var statusOK = status.New(codes.OK, "")

// ErrClosed is returned by calls on a connection after Close.
var ErrClosed = errors.New("leangrpc: connection closed")

// Option configures Dial.
type Option func(*options)

type options struct {
	streamWindow uint32
	connWindow   uint32
	userAgent    string
	metadata     []hpack.HeaderField
	tls          *tls.Config
}

// WithWindows sets the receive windows advertised per stream and per
// connection, in bytes (0 keeps the default; HTTP/2's own initial window is
// 65,535).
func WithWindows(stream, conn uint32) Option {
	return func(o *options) {
		if stream != 0 {
			o.streamWindow = stream
		}
		if conn != 0 {
			o.connWindow = conn
		}
	}
}

// WithTLS makes Dial a TLS client with cfg (a copy, its NextProtos set
// to "h2" alone) before the HTTP/2 preface, and the calls' :scheme
// "https". A server that does not choose h2 by ALPN is an error of Dial:
// gRPC over TLS is HTTP/2 negotiated so. Over TLS the *tls.Conn reads and
// writes its records through the socket's raw system calls, as a
// cleartext connection's frames go (see write and source).
func WithTLS(cfg *tls.Config) Option { return func(o *options) { o.tls = cfg } }

// WithUserAgent sets the user-agent header sent with every call.
func WithUserAgent(ua string) Option { return func(o *options) { o.userAgent = ua } }

// WithMetadata sends md with every call, keys in sorted order, after the
// reserved headers. As grpc-go does, values of keys ending in "-bin" are
// sent base64-encoded (unpadded); other values go as they are. Keys must
// be lowercase (metadata.MD's own constructors make them so).
func WithMetadata(md metadata.MD) Option {
	return func(o *options) {
		keys := make([]string, 0, len(md))
		for k := range md {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		o.metadata = nil
		for _, k := range keys {
			for _, v := range md[k] {
				if strings.HasSuffix(k, "-bin") {
					v = base64.RawStdEncoding.EncodeToString([]byte(v))
				}
				o.metadata = append(o.metadata, hpack.HeaderField{Name: k, Value: v})
			}
		}
	}
}

// Conn is one HTTP/2 connection carrying gRPC calls. Its methods are safe
// for concurrent use; the Unary and Stream values it hands out are not.
type Conn struct {
	// conn carries the HTTP/2 frames: sock itself, or the *tls.Conn
	// over it (WithTLS), whose records go through (*under)(c) to sock.
	conn      net.Conn
	sock      net.Conn
	fr        *http2.Framer
	br        *bufio.Reader
	raw       syscall.RawConn // sock's; nil: read and write through sock
	authority string
	scheme    string // :scheme, "http" or "https" (WithTLS)
	opts      options
	dec       *hpack.Decoder
	enc       *hpack.Encoder // request header blocks, under mu, in wire order
	hbuf      []byte         // enc's output: the block being queued
	hgen      uint64         // counts enc's changes to the server's decoder table
	decInto   *stream        // the stream whose header block dec is decoding (nil = discard)
	contID    uint32         // stream of a header block continued in CONTINUATION frames
	contEnd   bool           // that block's HEADERS frame ended the stream

	mu       sync.Mutex
	cond     sync.Cond // window grew, a stream ended, or the connection failed
	wbuf     []byte    // frames waiting to be written
	spare    []byte
	flushing bool // a caller is writing wbuf; others append and leave
	err      error
	nextID   uint32
	streams  map[uint32]*stream
	goAway   bool
	// ctrl: the reader queued control frames (acks, window updates) that
	// go out with the next write, at the latest when it has read all it
	// can.
	ctrl bool
	// Flow control. sendWin is what the server lets us send on the
	// connection; peerStreamWin its initial window for each new stream.
	sendWin       int64
	peerStreamWin int64
	peerMaxFrame  int
	peerMaxStream uint32
	recvUnacked   int64 // DATA bytes received on the connection, not yet returned by WINDOW_UPDATE
	// active counts the Unary and ServerStream calls in progress: a call
	// that is the only one writes at once, having nobody to share its
	// write with.
	active int

	// The one write in progress (see write): its bytes and error, and
	// the function RawConn.Write runs, made once so a write allocates
	// nothing.
	wout  []byte
	werr  error
	wfunc func(fd uintptr) bool
	// The same for the one read in progress (see source), by the reader
	// (or Dial, before the reader starts); rawReads says whether reads
	// are raw system calls, set by the reader under mu.
	rin      []byte
	rn       int
	rerr     error
	rfunc    func(fd uintptr) bool
	rawReads bool

	readDone chan struct{}
}

// Dial connects to address over network ("tcp" or "unix"), makes the TLS
// handshake when WithTLS asks for one, sends the HTTP/2 preface and
// settings, and waits for the server's SETTINGS, so a server that does not
// speak HTTP/2 (in clear text, or over TLS by ALPN) fails here. authority
// is the :authority of every call (for a Unix socket, "localhost" is
// usual). A TLS handshake's error is a *TLSError.
func Dial(ctx context.Context, network, address, authority string, opt ...Option) (*Conn, error) {
	o := options{streamWindow: DefaultStreamWindow, connWindow: DefaultConnWindow, userAgent: "coldstart-leangrpc"}
	for _, f := range opt {
		f(&o)
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, network, address)
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", address, err)
	}
	scheme := "http"
	if o.tls != nil {
		scheme = "https"
	}
	c := &Conn{
		conn:          nc,
		sock:          nc,
		authority:     authority,
		scheme:        scheme,
		opts:          o,
		nextID:        1,
		streams:       map[uint32]*stream{},
		sendWin:       65535,
		peerStreamWin: 65535,
		peerMaxFrame:  16384,
		peerMaxStream: math.MaxUint32,
		readDone:      make(chan struct{}),
	}
	c.cond.L = &c.mu
	if sc, ok := nc.(syscall.Conn); ok {
		c.raw, _ = sc.SyscallConn()
	}
	c.wfunc, c.rfunc = c.rawWrite, c.rawRead
	if o.tls != nil {
		if c.conn, err = tlsClient(ctx, (*under)(c), address, o.tls); err != nil {
			return nil, err
		}
	}
	c.br = bufio.NewReaderSize((*source)(c), 64<<10)
	c.fr = http2.NewFramer((*appender)(c), c.br)
	c.fr.SetReuseFrames()
	c.dec = hpack.NewDecoder(4096, c.emit)
	c.enc = hpack.NewEncoder((*hpackOut)(c))
	c.dec.SetMaxStringLength(1 << 20)

	if err := c.handshake(ctx); err != nil {
		nc.Close()
		return nil, fmt.Errorf("HTTP/2 handshake with %s: %w", address, err)
	}
	go c.readLoop()
	return c, nil
}

// TLSError is a TLS handshake that failed, or that agreed on a protocol
// other than h2 (Err says which): the connection never carried HTTP/2.
type TLSError struct {
	Address string
	// State is the handshake's outcome when it completed (ALPN other
	// than h2); zero when it failed.
	State tls.ConnectionState
	Err   error
}

func (e *TLSError) Error() string { return fmt.Sprintf("TLS handshake with %s: %v", e.Address, e.Err) }

func (e *TLSError) Unwrap() error { return e.Err }

// ErrNotH2 is a TLS handshake that completed without the server choosing
// h2 by ALPN.
var ErrNotH2 = errors.New("the server did not choose h2 by ALPN")

// tlsClient runs the client side of TLS on nc with a copy of cfg offering
// h2 alone, bounded as the HTTP/2 handshake is (ctx's deadline, else
// 10 s), and closes nc when it fails.
func tlsClient(ctx context.Context, nc net.Conn, address string, cfg *tls.Config) (net.Conn, error) {
	cfg = cfg.Clone()
	cfg.NextProtos = []string{"h2"}
	if dl, ok := ctx.Deadline(); ok {
		nc.SetDeadline(dl)
	} else {
		nc.SetDeadline(time.Now().Add(10 * time.Second))
	}
	tc := tls.Client(nc, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		nc.Close()
		return nil, &TLSError{Address: address, Err: err}
	}
	nc.SetDeadline(time.Time{})
	st := tc.ConnectionState()
	if st.NegotiatedProtocol != "h2" {
		tc.Close()
		proto := "none"
		if st.NegotiatedProtocol != "" {
			proto = strconv.Quote(st.NegotiatedProtocol)
		}
		return nil, &TLSError{Address: address, State: st, Err: fmt.Errorf("%w (it chose %s): it does not serve gRPC over TLS there", ErrNotH2, proto)}
	}
	return tc, nil
}

func (c *Conn) handshake(ctx context.Context) error {
	if dl, ok := ctx.Deadline(); ok {
		c.conn.SetDeadline(dl)
	} else {
		c.conn.SetDeadline(time.Now().Add(10 * time.Second))
	}
	defer c.conn.SetDeadline(time.Time{})
	stop := context.AfterFunc(ctx, func() { c.conn.SetDeadline(time.Now()) })
	defer stop()

	c.mu.Lock()
	c.wbuf = append(c.wbuf, http2.ClientPreface...)
	c.fr.WriteSettings(
		http2.Setting{ID: http2.SettingEnablePush, Val: 0},
		http2.Setting{ID: http2.SettingInitialWindowSize, Val: c.opts.streamWindow},
	)
	if c.opts.connWindow > 65535 {
		c.fr.WriteWindowUpdate(0, c.opts.connWindow-65535)
	}
	err := c.flushLocked()
	c.mu.Unlock()
	if err != nil {
		return err
	}
	f, err := c.fr.ReadFrame()
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if c.scheme == "https" {
			return fmt.Errorf("read the server's SETTINGS after the TLS handshake: %w", err)
		}
		return fmt.Errorf("read the server's SETTINGS (does it speak HTTP/2 without TLS?): %w", err)
	}
	sf, ok := f.(*http2.SettingsFrame)
	if !ok || sf.IsAck() {
		return fmt.Errorf("first frame from the server is %v, want SETTINGS", f.Header())
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.handleSettingsLocked(sf); err != nil {
		return err
	}
	c.ctrl = false
	return c.flushLocked()
}

// appender is the Framer's writer: frames are appended to wbuf under mu
// and written by flushLocked.
type appender Conn

func (a *appender) Write(p []byte) (int, error) {
	a.wbuf = append(a.wbuf, p...)
	return len(p), nil
}

// flushLocked writes wbuf. Called with mu held; it releases mu during the
// write. If another caller is already writing, the frames just appended
// go out with its next write, so concurrent callers share write calls.
func (c *Conn) flushLocked() error {
	if c.flushing {
		return nil
	}
	c.flushing = true
	if c.active != 1 || len(c.streams) > 1 {
		// Let the other runnable callers (typically those the reader just
		// answered) queue their frames first, so they share this write:
		// one write per batch rather than per call, as an event loop does.
		// A lone call has nobody to wait for.
		c.mu.Unlock()
		runtime.Gosched()
		c.mu.Lock()
	}
	for len(c.wbuf) > 0 && c.err == nil {
		buf := c.wbuf
		c.wbuf = c.spare[:0]
		c.mu.Unlock()
		err := c.write(buf)
		c.mu.Lock()
		c.spare = buf[:0]
		if err != nil {
			c.failLocked(fmt.Errorf("write to server: %w", err))
		}
	}
	c.flushing = false
	return c.err
}

// write writes buf whole. Where the connection gives its descriptor, the
// write is a raw system call (RawSyscall): for a loopback write, which runs
// the receiver's TCP path on this CPU for tens of microseconds, the Go
// scheduler would otherwise hand this thread's P to another thread (a
// futex wake-up and a thread switch per call on a one-CPU generator). A
// full socket buffer (EAGAIN) waits on the netpoller as usual. Only the
// caller that set flushing writes, so wout and werr need no lock.
func (c *Conn) write(buf []byte) error {
	if c.conn != c.sock {
		_, err := c.conn.Write(buf) // TLS: its records come to writeSock
		return err
	}
	return c.writeSock(buf)
}

// writeSock writes buf whole to the socket (see write).
func (c *Conn) writeSock(buf []byte) error {
	if c.raw == nil {
		_, err := c.sock.Write(buf)
		return err
	}
	c.wout, c.werr = buf, nil
	err := c.raw.Write(c.wfunc)
	c.wout = nil
	if err != nil {
		return err
	}
	return c.werr
}

// rawWrite writes c.wout; false means the socket buffer is full (wait).
func (c *Conn) rawWrite(fd uintptr) bool {
	for len(c.wout) > 0 {
		n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&c.wout[0])), uintptr(len(c.wout)))
		switch e {
		case 0:
			c.wout = c.wout[n:]
		case syscall.EAGAIN:
			return false
		case syscall.EINTR:
		default:
			c.werr = e
			return true
		}
	}
	return true
}

// failLocked ends the connection: every open stream fails with err.
func (c *Conn) failLocked(err error) {
	if c.err != nil {
		return
	}
	c.err = err
	c.conn.Close()
	for id, s := range c.streams {
		s.endLocked(status.New(codes.Unavailable, err.Error()))
		delete(c.streams, id)
	}
	c.cond.Broadcast()
}

// Err is the reason the connection cannot take new calls, or nil.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close closes the connection; calls in progress fail.
func (c *Conn) Close() error {
	c.mu.Lock()
	c.failLocked(ErrClosed)
	c.mu.Unlock()
	<-c.readDone
	return nil
}

// headerBlock is a request header block encoded for the server's decoder
// table as it stood at generation gen (see Conn.hgen).
type headerBlock struct {
	gen uint64
	b   []byte
}

// headerBlockLocked returns the header block of a request to path, the
// next block on the wire (c.mu held, the block queued before c.mu is
// released), encoded with the connection's HPACK encoder: fields the
// server's decoder table holds go as one-byte indexes, the others as
// literals that enter its table, so from the second call of a method on its
// block is seven one-byte indexes the server looks up instead of strings
// it decodes and allocates, as h2load's and grpc-go's blocks are: never
// indexed literals made the server decode and allocate every field on
// every call. A block that changed nothing in the table
// is kept in *hb and sent again while the table stays as it is, so a
// method's calls encode nothing after the first.
func (c *Conn) headerBlockLocked(path string, hb *headerBlock) []byte {
	if hb.b != nil && hb.gen == c.hgen {
		return hb.b
	}
	gen := c.hgen
	c.hbuf = c.hbuf[:0]
	for _, f := range [...]hpack.HeaderField{
		{Name: ":method", Value: "POST"},
		{Name: ":scheme", Value: c.scheme},
		{Name: ":path", Value: path},
		{Name: ":authority", Value: c.authority},
		{Name: "content-type", Value: "application/grpc"},
		{Name: "te", Value: "trailers"},
		{Name: "user-agent", Value: c.opts.userAgent},
	} {
		c.enc.WriteField(f)
	}
	for _, f := range c.opts.metadata {
		c.enc.WriteField(f)
	}
	if c.hgen != gen {
		*hb = headerBlock{} // it changed the table: the next block differs
		return c.hbuf
	}
	*hb = headerBlock{gen: gen, b: append(hb.b[:0], c.hbuf...)}
	return hb.b
}

// hpackOut receives the encoder's output, one field's representation per
// Write, and counts the writes that change the server's decoder table: a
// literal with incremental indexing (first bits 01) or a dynamic table size
// update (001, written before the field it precedes).
type hpackOut Conn

func (o *hpackOut) Write(p []byte) (int, error) {
	if len(p) > 0 && (p[0]&0xc0 == 0x40 || p[0]&0xe0 == 0x20) {
		o.hgen++
	}
	o.hbuf = append(o.hbuf, p...)
	return len(p), nil
}

// Encode frames msg as one gRPC message: a zero compression flag, its
// length (4 bytes, big-endian), then its bytes.
func Encode(msg []byte) []byte {
	out := make([]byte, 5+len(msg))
	n := len(msg)
	out[1], out[2], out[3], out[4] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
	copy(out[5:], msg)
	return out
}

// openLocked registers s under a new stream ID and queues its HEADERS.
// It waits while the server's concurrent-stream limit is reached.
func (c *Conn) openLocked(s *stream, path string, hb *headerBlock, endStream bool) error {
	for c.err == nil && !c.goAway && uint32(len(c.streams)) >= c.peerMaxStream {
		c.cond.Wait()
	}
	if c.err != nil {
		return status.Error(codes.Unavailable, c.err.Error())
	}
	if c.goAway {
		return status.Error(codes.Unavailable, "server sent GOAWAY: no new calls on this connection")
	}
	s.reset(c.nextID, c.peerStreamWin)
	c.nextID += 2
	c.streams[s.id] = s
	block := c.headerBlockLocked(path, hb)
	if len(block) > c.peerMaxFrame {
		// Rare (a very long authority or path): split into CONTINUATIONs.
		c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: s.id, BlockFragment: block[:c.peerMaxFrame], EndStream: endStream})
		rest := block[c.peerMaxFrame:]
		for len(rest) > 0 {
			n := min(len(rest), c.peerMaxFrame)
			c.fr.WriteContinuation(s.id, n == len(rest), rest[:n])
			rest = rest[n:]
		}
		return nil
	}
	return c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: s.id, BlockFragment: block, EndStream: endStream, EndHeaders: true})
}

// sendLocked queues data (whole gRPC messages) on s in DATA frames as the
// flow-control windows allow, flushing and waiting for WINDOW_UPDATEs when
// they are used up.
func (c *Conn) sendLocked(s *stream, data []byte, endStream bool) error {
	for {
		if c.err != nil {
			return status.Error(codes.Unavailable, c.err.Error())
		}
		if s.done {
			return s.st.Err()
		}
		n := min(int64(len(data)), int64(c.peerMaxFrame), c.sendWin, s.sendWin)
		if n <= 0 && len(data) > 0 {
			if err := c.flushLocked(); err != nil {
				return status.Error(codes.Unavailable, err.Error())
			}
			if min(c.sendWin, s.sendWin) <= 0 && c.err == nil && !s.done {
				c.cond.Wait()
			}
			continue
		}
		last := int(n) == len(data)
		c.fr.WriteData(s.id, endStream && last, data[:n])
		c.sendWin -= n
		s.sendWin -= n
		data = data[n:]
		if last {
			return nil
		}
	}
}

// cancelLocked abandons s: RST_STREAM(CANCEL) if it is still open.
func (c *Conn) cancelLocked(s *stream) {
	if s.done {
		return
	}
	if c.streams[s.id] == s {
		delete(c.streams, s.id)
		if c.err == nil {
			c.fr.WriteRSTStream(s.id, http2.ErrCodeCancel)
			c.flushLocked()
		}
	}
	s.endLocked(status.New(codes.Canceled, context.Canceled.Error()))
	c.cond.Broadcast()
}

// stream is one HTTP/2 stream's receive side and send window. Its fields
// are guarded by Conn.mu.
type stream struct {
	id      uint32
	sendWin int64

	headers     bool // the response headers arrived; the next block is trailers
	httpStatus  string
	contentType string
	grpcStatus  string
	grpcMessage string
	trailersSet bool
	keepMeta    bool
	header      []hpack.HeaderField
	trailer     []hpack.HeaderField

	buf         []byte // received message bytes not yet consumed
	off         int
	recvUnacked int64

	done bool
	st   *status.Status
	wake chan struct{} // cap 1: the receiver is told something arrived
	wait bool          // the receiver sleeps on wake
}

func newStream() *stream { return &stream{wake: make(chan struct{}, 1)} }

func (s *stream) reset(id uint32, win int64) {
	s.id, s.sendWin = id, win
	s.headers, s.trailersSet, s.done, s.wait = false, false, false, false
	s.httpStatus, s.contentType, s.grpcStatus, s.grpcMessage = "", "", "", ""
	s.header, s.trailer = s.header[:0], s.trailer[:0]
	s.buf, s.off, s.recvUnacked = s.buf[:0], 0, 0
	s.st = nil
	select { // a wake-up left from a cancelled call
	case <-s.wake:
	default:
	}
}

// endLocked ends the stream with st and wakes its receiver.
func (s *stream) endLocked(st *status.Status) {
	if s.done {
		return
	}
	s.done, s.st = true, st
	s.notifyLocked()
}

func (s *stream) notifyLocked() {
	if s.wait {
		s.wait = false
		s.wake <- struct{}{}
	}
}

// message returns the next whole received message, if there is one.
func (s *stream) message() ([]byte, bool, error) {
	b := s.buf[s.off:]
	if len(b) < 5 {
		return nil, false, nil
	}
	n := int(uint32(b[1])<<24 | uint32(b[2])<<16 | uint32(b[3])<<8 | uint32(b[4]))
	if len(b)-5 < n {
		return nil, false, nil
	}
	if b[0] != 0 {
		return nil, false, status.Error(codes.Internal, "leangrpc: compressed message received, but no compression was offered")
	}
	s.off += 5 + n
	return b[5 : 5+n], true, nil
}

// finalStatus is the call's status from what the stream received: the
// trailers' grpc-status and grpc-message, or, lacking them, the HTTP
// status mapped as grpc-go maps it.
func (s *stream) finalStatus() *status.Status {
	if s.grpcStatus == "0" && s.grpcMessage == "" {
		return statusOK
	}
	if s.grpcStatus != "" {
		code, err := strconv.ParseUint(s.grpcStatus, 10, 32)
		if err != nil {
			return status.Newf(codes.Internal, "malformed grpc-status %q", s.grpcStatus)
		}
		msg := s.grpcMessage
		if m, err := url.PathUnescape(msg); err == nil {
			msg = m
		}
		return status.New(codes.Code(code), msg)
	}
	if s.httpStatus != "" && s.httpStatus != "200" {
		code := codes.Unknown
		switch s.httpStatus {
		case "400":
			code = codes.Internal
		case "401":
			code = codes.Unauthenticated
		case "403":
			code = codes.PermissionDenied
		case "404":
			code = codes.Unimplemented
		case "429", "502", "503", "504":
			code = codes.Unavailable
		}
		return status.Newf(code, "unexpected HTTP status code received from server: %s", s.httpStatus)
	}
	return status.New(codes.Internal, "server closed the stream without sending trailers")
}

// emit takes one decoded header field for the stream being decoded.
func (c *Conn) emit(f hpack.HeaderField) {
	s := c.decInto
	if s == nil {
		return
	}
	trailer := s.headers
	switch f.Name {
	case ":status":
		s.httpStatus = f.Value
	case "content-type":
		s.contentType = f.Value
	case "grpc-status":
		s.grpcStatus = f.Value
	case "grpc-message":
		s.grpcMessage = f.Value
	}
	if s.keepMeta {
		if trailer {
			s.trailer = append(s.trailer, f)
		} else {
			s.header = append(s.header, f)
		}
	}
}

// readLoop reads every frame the server sends and hands each to its
// stream, until the connection fails.
func (c *Conn) readLoop() {
	defer close(c.readDone)
	for {
		var err error
		if c.br.Buffered() == 0 {
			// About to wait for the server: send what we owe it first
			// (with the requests of callers about to run, see flushLocked).
			c.mu.Lock()
			// A lone call reads with raw system calls (see source).
			c.rawReads = c.active <= 1 && len(c.streams) <= 1
			if c.ctrl && len(c.streams) == 0 && c.err == nil {
				// No call open: the caller just answered is about to send
				// its next request, and our acks (grpc-go servers PING for
				// their bandwidth estimate) can go in the same write.
				c.mu.Unlock()
				runtime.Gosched()
				c.mu.Lock()
			}
			if c.ctrl {
				c.ctrl = false
				err = c.flushLocked()
			}
			c.mu.Unlock()
		}
		var f http2.Frame
		if err == nil {
			f, err = c.fr.ReadFrame()
		}
		if err == nil {
			err = c.handle(f)
		}
		if err != nil {
			c.mu.Lock()
			if errors.Is(err, io.EOF) {
				err = errors.New("server closed the connection")
			}
			c.failLocked(fmt.Errorf("read from server: %w", err))
			c.mu.Unlock()
			return
		}
	}
}

func (c *Conn) handle(f http2.Frame) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.contID != 0 {
		cf, ok := f.(*http2.ContinuationFrame)
		if !ok || cf.StreamID != c.contID {
			return fmt.Errorf("expected CONTINUATION of stream %d, got %v", c.contID, f.Header())
		}
		return c.headerFragment(cf.StreamID, cf.HeaderBlockFragment(), cf.HeadersEnded(), c.contEnd)
	}
	switch f := f.(type) {
	case *http2.DataFrame:
		return c.handleData(f)
	case *http2.HeadersFrame:
		c.decInto = c.streams[f.StreamID]
		return c.headerFragment(f.StreamID, f.HeaderBlockFragment(), f.HeadersEnded(), f.StreamEnded())
	case *http2.SettingsFrame:
		if f.IsAck() {
			return nil
		}
		return c.handleSettingsLocked(f)
	case *http2.PingFrame:
		if !f.IsAck() {
			c.fr.WritePing(true, f.Data)
			c.ctrl = true
		}
	case *http2.WindowUpdateFrame:
		if f.StreamID == 0 {
			c.sendWin += int64(f.Increment)
		} else if s := c.streams[f.StreamID]; s != nil {
			s.sendWin += int64(f.Increment)
		}
		c.cond.Broadcast()
	case *http2.RSTStreamFrame:
		if s := c.streams[f.StreamID]; s != nil {
			delete(c.streams, f.StreamID)
			s.endLocked(resetStatus(f.ErrCode))
			c.cond.Broadcast()
		}
	case *http2.GoAwayFrame:
		c.goAway = true
		msg := fmt.Sprintf("server sent GOAWAY (%v, %q)", f.ErrCode, f.DebugData())
		for id, s := range c.streams {
			if id > f.LastStreamID {
				delete(c.streams, id)
				s.endLocked(status.New(codes.Unavailable, msg))
			}
		}
		c.cond.Broadcast()
	case *http2.PushPromiseFrame:
		return errors.New("PUSH_PROMISE received although push was disabled")
	}
	return nil
}

// handleSettingsLocked applies the server's settings and acknowledges
// them.
func (c *Conn) handleSettingsLocked(f *http2.SettingsFrame) error {
	err := f.ForeachSetting(func(st http2.Setting) error {
		switch st.ID {
		case http2.SettingInitialWindowSize:
			// A change applies to every open stream's window (RFC 9113 6.9.2).
			delta := int64(st.Val) - c.peerStreamWin
			c.peerStreamWin = int64(st.Val)
			for _, s := range c.streams {
				s.sendWin += delta
			}
		case http2.SettingMaxFrameSize:
			c.peerMaxFrame = int(st.Val)
		case http2.SettingHeaderTableSize:
			// The server's decoder table: the encoder stays within it
			// (and says so in the next block when it shrinks).
			c.enc.SetMaxDynamicTableSizeLimit(st.Val)
		case http2.SettingMaxConcurrentStreams:
			c.peerMaxStream = st.Val
		}
		return nil
	})
	if err != nil {
		return err
	}
	c.fr.WriteSettingsAck()
	c.cond.Broadcast()
	c.ctrl = true
	return nil
}

// resetStatus is the status of a stream the server reset, mapped from the
// HTTP/2 error code as grpc-go maps it.
func resetStatus(code http2.ErrCode) *status.Status {
	c := codes.Internal
	switch code {
	case http2.ErrCodeRefusedStream:
		c = codes.Unavailable
	case http2.ErrCodeCancel:
		c = codes.Canceled
	case http2.ErrCodeEnhanceYourCalm:
		c = codes.ResourceExhausted
	case http2.ErrCodeInadequateSecurity:
		c = codes.PermissionDenied
	}
	return status.Newf(c, "stream terminated by RST_STREAM with error code: %v", code)
}

// headerFragment decodes one piece of a header block; at its end it closes
// the block and, when the stream ended with it, ends the stream.
func (c *Conn) headerFragment(id uint32, frag []byte, endHeaders, endStream bool) error {
	if _, err := c.dec.Write(frag); err != nil {
		return fmt.Errorf("decode headers of stream %d: %w", id, err)
	}
	if !endHeaders {
		c.contID, c.contEnd = id, endStream
		return nil
	}
	c.contID = 0
	if err := c.dec.Close(); err != nil {
		return fmt.Errorf("decode headers of stream %d: %w", id, err)
	}
	s := c.decInto
	c.decInto = nil
	if s == nil {
		return nil // a stream we abandoned
	}
	if !s.headers {
		s.headers = true
		if s.httpStatus == "200" && !strings.HasPrefix(s.contentType, "application/grpc") && s.grpcStatus == "" {
			c.finishLocked(s, status.Newf(codes.Unknown, "unexpected content-type %q", s.contentType), true)
			return nil
		}
	} else {
		s.trailersSet = true
	}
	if endStream {
		c.finishLocked(s, s.finalStatus(), false)
	}
	return nil
}

// finishLocked ends s with st; reset also resets the stream on the wire
// (the server has not ended it).
func (c *Conn) finishLocked(s *stream, st *status.Status, reset bool) {
	delete(c.streams, s.id)
	if reset && c.err == nil {
		c.fr.WriteRSTStream(s.id, http2.ErrCodeCancel)
		c.ctrl = true
	}
	s.endLocked(st)
	c.cond.Broadcast()
}

func (c *Conn) handleData(f *http2.DataFrame) error {
	// Padding counts against flow control too.
	n := int64(f.Length)
	c.recvUnacked += n
	if c.recvUnacked >= int64(c.opts.connWindow)/4 {
		c.fr.WriteWindowUpdate(0, uint32(c.recvUnacked))
		c.recvUnacked = 0
		c.ctrl = true
	}
	s := c.streams[f.StreamID]
	if s == nil {
		return nil
	}
	if !s.headers {
		return fmt.Errorf("DATA before HEADERS on stream %d", f.StreamID)
	}
	if s.off == len(s.buf) {
		s.buf, s.off = s.buf[:0], 0
	}
	s.buf = append(s.buf, f.Data()...)
	if f.StreamEnded() {
		c.finishLocked(s, status.New(codes.Internal, "server closed the stream without sending trailers"), false)
		return nil
	}
	s.recvUnacked += n
	if s.recvUnacked >= int64(c.opts.streamWindow)/4 {
		c.fr.WriteWindowUpdate(s.id, uint32(s.recvUnacked))
		s.recvUnacked = 0
		c.ctrl = true
	}
	s.notifyLocked()
	return nil
}
