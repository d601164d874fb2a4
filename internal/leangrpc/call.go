package leangrpc

import (
	"context"
	"io"

	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Unary is one unary method with one request, ready to be called again and
// again: the header block and the framed request are built once. A Unary
// belongs to one goroutine at a time.
type Unary struct {
	c      *Conn
	method string
	hb     headerBlock // its encoded header block, while valid
	req    []byte      // the request, framed by Encode
	s      *stream
	resp   []byte
}

// NewUnary prepares calls of method (a full path, "/pkg.Service/Method")
// with the marshalled request msg.
func (c *Conn) NewUnary(method string, msg []byte) *Unary {
	return &Unary{c: c, method: method, req: Encode(msg), s: newStream()}
}

// KeepMetadata makes the following calls record the response's header and
// trailer fields (Header, Trailer); off by default, as it allocates.
func (u *Unary) KeepMetadata(on bool) { u.s.keepMeta = on }

// Call sends the request and waits for the response message and the
// status. The message returned is valid until the next Call. A non-OK
// status is returned as a *status.Status error, as grpc-go returns it.
func (u *Unary) Call(ctx context.Context) ([]byte, error) {
	c := u.c
	c.mu.Lock()
	c.active++
	msg, err := u.callLocked(ctx)
	c.active--
	c.mu.Unlock()
	return msg, err
}

// callLocked is Call with c.mu held (released while waiting).
func (u *Unary) callLocked(ctx context.Context) ([]byte, error) {
	c, s := u.c, u.s
	if err := ctx.Err(); err != nil {
		// As grpc-go: a context already done sends nothing. (Otherwise the
		// answer and the context race in the select below.)
		return nil, status.FromContextError(err).Err()
	}
	if err := c.openLocked(s, u.method, &u.hb, false); err != nil {
		return nil, err
	}
	if err := c.sendLocked(s, u.req, true); err != nil {
		c.cancelLocked(s)
		return nil, err
	}
	if err := c.flushLocked(); err != nil {
		return nil, status.Error(codes.Unavailable, err.Error())
	}
	for !s.done {
		s.wait = true
		c.mu.Unlock()
		select {
		case <-s.wake:
			c.mu.Lock()
		case <-ctx.Done():
			c.mu.Lock()
			c.cancelLocked(s)
			return nil, status.FromContextError(ctx.Err()).Err()
		}
	}
	if err := s.st.Err(); err != nil {
		return nil, err
	}
	msg, ok, err := s.message()
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, status.Error(codes.Internal, "server returned no response message for a unary call")
	}
	if _, more, _ := s.message(); more || s.off != len(s.buf) {
		return nil, status.Error(codes.Internal, "server sent more than one response message for a unary call")
	}
	u.resp = append(u.resp[:0], msg...)
	return u.resp, nil
}

// Header is the last call's response header fields (with KeepMetadata).
func (u *Unary) Header() []hpack.HeaderField { return u.s.header }

// Trailer is the last call's trailer fields (with KeepMetadata).
func (u *Unary) Trailer() []hpack.HeaderField { return u.s.trailer }

// ServerStream is one server-streaming method with one request, ready to
// be called again and again like a Unary: each Call opens a stream, sends
// the request with the end of the client's side in one write, and reads
// every response message until the status. A ServerStream belongs to one
// goroutine at a time.
type ServerStream struct {
	c      *Conn
	method string
	hb     headerBlock
	req    []byte
	s      *stream
}

// NewServerStream prepares server-streaming calls of method with the
// marshalled request msg.
func (c *Conn) NewServerStream(method string, msg []byte) *ServerStream {
	return &ServerStream{c: c, method: method, req: Encode(msg), s: newStream()}
}

// Call makes one call and returns the number of response messages; each
// message, valid only until each returns, goes to each (nil = discarded),
// which runs with the connection locked and must not call it. A non-OK
// status is returned as a *status.Status error, with the count of the
// messages received before it.
func (ss *ServerStream) Call(ctx context.Context, each func([]byte)) (int, error) {
	c := ss.c
	if err := ctx.Err(); err != nil {
		return 0, status.FromContextError(err).Err()
	}
	c.mu.Lock()
	c.active++
	n, err := ss.callLocked(ctx, each)
	c.active--
	c.mu.Unlock()
	return n, err
}

// callLocked is Call with c.mu held (released while waiting).
func (ss *ServerStream) callLocked(ctx context.Context, each func([]byte)) (int, error) {
	c, s := ss.c, ss.s
	if err := c.openLocked(s, ss.method, &ss.hb, false); err != nil {
		return 0, err
	}
	if err := c.sendLocked(s, ss.req, true); err != nil {
		c.cancelLocked(s)
		return 0, err
	}
	if err := c.flushLocked(); err != nil {
		return 0, status.Error(codes.Unavailable, err.Error())
	}
	n := 0
	for {
		msg, ok, err := s.message()
		if err != nil {
			c.cancelLocked(s)
			return n, err
		}
		if ok {
			n++
			if each != nil {
				each(msg)
			}
			continue
		}
		if s.done {
			return n, s.st.Err()
		}
		s.wait = true
		c.mu.Unlock()
		select {
		case <-s.wake:
			c.mu.Lock()
		case <-ctx.Done():
			c.mu.Lock()
			c.cancelLocked(s)
			return n, status.FromContextError(ctx.Err()).Err()
		}
	}
}

// Stream is one bidirectional-streaming call. Send and Recv may be called
// from different goroutines, but neither from two at once.
type Stream struct {
	c      *Conn
	s      *stream
	closed bool
	resp   []byte
}

// NewStream opens a streaming call of method. Its HEADERS go out with the
// first Send (or at once, if flush).
func (c *Conn) NewStream(ctx context.Context, method string) (*Stream, error) {
	st := &Stream{c: c, s: newStream()}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.openLocked(st.s, method, new(headerBlock), false); err != nil {
		return nil, err
	}
	if err := c.flushLocked(); err != nil {
		return nil, status.Error(codes.Unavailable, err.Error())
	}
	return st, nil
}

// KeepMetadata makes the stream record the response's header and trailer
// fields (Header, Trailer).
func (st *Stream) KeepMetadata(on bool) {
	st.c.mu.Lock()
	st.s.keepMeta = on
	st.c.mu.Unlock()
}

// Send sends one message already framed by Encode. After the server ended
// the call, Send returns io.EOF; Recv then returns the status.
func (st *Stream) Send(framed []byte) error {
	c, s := st.c, st.s
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.done {
		return io.EOF
	}
	if err := c.sendLocked(s, framed, false); err != nil {
		if s.done {
			return io.EOF
		}
		return err
	}
	if err := c.flushLocked(); err != nil {
		return io.EOF
	}
	return nil
}

// CloseSend ends the client's side of the stream.
func (st *Stream) CloseSend() error {
	c, s := st.c, st.s
	c.mu.Lock()
	defer c.mu.Unlock()
	if st.closed || s.done {
		return nil
	}
	st.closed = true
	if err := c.sendLocked(s, nil, true); err != nil {
		return err
	}
	return c.flushLocked()
}

// Recv waits for the next message. The slice is valid until the next Recv.
// When the server ends the call it returns io.EOF for an OK status, else
// the status as an error.
func (st *Stream) Recv(ctx context.Context) ([]byte, error) {
	c, s := st.c, st.s
	c.mu.Lock()
	for {
		msg, ok, err := s.message()
		if err != nil {
			c.cancelLocked(s)
			c.mu.Unlock()
			return nil, err
		}
		if ok {
			st.resp = append(st.resp[:0], msg...)
			c.mu.Unlock()
			return st.resp, nil
		}
		if s.done {
			c.mu.Unlock()
			if err := s.st.Err(); err != nil {
				return nil, err
			}
			return nil, io.EOF
		}
		s.wait = true
		c.mu.Unlock()
		select {
		case <-s.wake:
		case <-ctx.Done():
			c.mu.Lock()
			c.cancelLocked(s)
			c.mu.Unlock()
			return nil, status.FromContextError(ctx.Err()).Err()
		}
		c.mu.Lock()
	}
}

// Close abandons the stream (RST_STREAM CANCEL if still open).
func (st *Stream) Close() {
	st.c.mu.Lock()
	st.c.cancelLocked(st.s)
	st.c.mu.Unlock()
}

// Header is the response header fields (with KeepMetadata).
func (st *Stream) Header() []hpack.HeaderField { return st.s.header }

// Trailer is the trailer fields, once Recv has returned the end (with
// KeepMetadata).
func (st *Stream) Trailer() []hpack.HeaderField { return st.s.trailer }
