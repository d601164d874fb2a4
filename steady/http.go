package steady

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/coldstart-go/coldstart/prober"
)

// jsonBody is the REST echo's request: {"payload": "<base64>"}, the same
// bytes the gRPC arm sends, as the sample server's POST /echo reads them.
func jsonBody(payload []byte) []byte {
	var b bytes.Buffer
	b.WriteString(`{"payload":"`)
	b.WriteString(base64.StdEncoding.EncodeToString(payload))
	b.WriteString(`"}`)
	return b.Bytes()
}

// h1Transport is keep-alive HTTP/1.1 connections written by hand, so that
// a connection can carry several requests in flight (pipelining), which
// net/http's client does not do, and so that a call costs one write and a
// buffered read with no allocation. Worker i uses connection i%conns.
// With TLS each connection is a TLS client offering http/1.1 by ALPN.
type h1Transport struct {
	target prober.Target
	req    []byte // the whole request, head and body, written as is
	conns  []*h1Conn
}

func newHTTP1(ctx context.Context, t prober.Target, path string, conns, depth int, payload []byte, tl *prober.TLS, hs *atomic.Int64) (*h1Transport, error) {
	body := jsonBody(payload)
	host := t.Address
	if t.Network == "unix" {
		host = "localhost" // a socket path is no valid Host
	}
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", path, host, len(body))
	h := &h1Transport{target: t, req: append([]byte(head), body...)}
	for i := 0; i < conns; i++ {
		c := &h1Conn{target: t, req: h.req, depth: depth, tl: tl, tls: httpTLS(tl, t, "http/1.1"), hs: hs}
		if err := c.dial(ctx); err != nil {
			h.close()
			return nil, err
		}
		h.conns = append(h.conns, c)
	}
	return h, nil
}

func (h *h1Transport) caller(_ context.Context, i int) (caller, error) {
	return &h1Caller{c: h.conns[i%len(h.conns)], done: make(chan error, 1)}, nil
}

func (h *h1Transport) close() {
	for _, c := range h.conns {
		c.shut()
	}
}

// h1Conn is one keep-alive connection. Callers write their request under
// mu and queue their answer channel; the reader goroutine reads responses
// in order and answers the queue: HTTP/1.1 answers pipelined requests in
// the order they were sent.
type h1Conn struct {
	target prober.Target
	req    []byte
	depth  int
	tl     *prober.TLS   // nil = cleartext
	tls    *tls.Config   // tl's, offering http/1.1
	hs     *atomic.Int64 // counts TLS handshakes

	mu      sync.Mutex
	conn    net.Conn
	pending chan chan error // in order of sending
	err     error           // the connection is broken; the next call redials
	closed  bool
}

func (c *h1Conn) dial(ctx context.Context) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, c.target.Network, c.target.Address)
	if err != nil {
		return fmt.Errorf("connect %s: %w", c.target, err)
	}
	if c.tls != nil {
		// A server that chooses no protocol by ALPN speaks HTTP/1.1.
		tc, err := tlsHandshake(ctx, conn, c.tls, c.target, "", c.hs)
		if err != nil {
			return tlsFailure(c.tl, c.target, err)
		}
		if p := tc.ConnectionState().NegotiatedProtocol; p != "" && p != "http/1.1" {
			tc.Close()
			return fmt.Errorf("TLS with %s: the server chose ALPN %q, want http/1.1", c.target, p)
		}
		conn = tc
	}
	c.conn, c.err = conn, nil
	c.pending = make(chan chan error, c.depth)
	go c.read(conn, c.pending)
	return nil
}

func (c *h1Conn) read(conn net.Conn, pending chan chan error) {
	br := bufio.NewReaderSize(conn, 64<<10)
	for w := range pending {
		closeConn, err := readResponse(br)
		var se statusError
		if err != nil && !errors.As(err, &se) {
			w <- err
			c.fail(conn, pending, err)
			return
		}
		if closeConn {
			// A whole answer, and the server's last on this connection:
			// marked broken before the caller hears, so that its next
			// call dials a new one, as any HTTP/1.1 client would; calls
			// pipelined behind it get no answer.
			c.broken(conn, errServerClosed)
			w <- err
			c.fail(conn, pending, errServerClosed)
			return
		}
		w <- err
	}
}

// broken marks conn broken with err, unless one broke it first: no call
// queues on it any more.
func (c *h1Conn) broken(conn net.Conn, err error) {
	c.mu.Lock()
	if c.conn == conn && c.err == nil {
		c.err = err
	}
	c.mu.Unlock()
}

// fail marks conn broken and answers every queued caller with err.
func (c *h1Conn) fail(conn net.Conn, pending chan chan error, err error) {
	c.broken(conn, err)
	conn.Close()
	// No caller queues on this connection any more (c.err is set under
	// mu before they queue), so what is queued now is all there is.
	for {
		select {
		case w := <-pending:
			w <- err
		default:
			return
		}
	}
}

func (c *h1Conn) shut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.conn != nil {
		c.conn.Close()
	}
}

// errClosed is returned by a call on a transport that was closed.
var errClosed = errors.New("connection closed by steady")

// errServerClosed answers the calls pipelined behind a response that
// said Connection: close.
var errServerClosed = errors.New("the server closed the connection (Connection: close) before answering this pipelined request")

type h1Caller struct {
	c    *h1Conn
	done chan error
}

func (k *h1Caller) call(ctx context.Context) error {
	c := k.c
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return errClosed
	}
	if c.err != nil {
		// The connection broke (the reason was counted then): open a new one.
		if err := c.dial(ctx); err != nil {
			c.mu.Unlock()
			return err
		}
	}
	conn, pending := c.conn, c.pending
	pending <- k.done
	_, err := conn.Write(c.req)
	c.mu.Unlock()
	if err != nil {
		err = fmt.Errorf("write request to %s: %w", c.target, err)
		conn.Close() // the reader fails and answers every queued caller
	}
	select {
	case err := <-k.done:
		return err
	case <-ctx.Done():
		conn.Close()
		return ctx.Err()
	}
}

// readResponse reads one HTTP/1.1 response and discards its body: a 2xx is
// nil, anything else an error quoting the status line and the body's start.
// closeConn says the server closes the connection after it (Connection:
// close), which makes it no less an answer.
func readResponse(br *bufio.Reader) (closeConn bool, err error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return false, fmt.Errorf("read response: %w", err)
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return false, fmt.Errorf("read response: bad status line %q", trimCRLF(line))
	}
	code := int(line[9]-'0')*100 + int(line[10]-'0')*10 + int(line[11]-'0')
	var status string
	if code < 200 || code > 299 {
		status = string(trimCRLF(line))
	}
	length, chunked := int64(-1), false
	for {
		h, err := br.ReadSlice('\n')
		if err != nil {
			return false, fmt.Errorf("read response header: %w", err)
		}
		h = trimCRLF(h)
		if len(h) == 0 {
			break
		}
		name, value, ok := bytes.Cut(h, []byte(":"))
		if !ok {
			continue
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			length, err = strconv.ParseInt(string(value), 10, 64)
			if err != nil {
				return false, fmt.Errorf("read response: bad Content-Length %q", value)
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			chunked = bytes.EqualFold(value, []byte("chunked"))
		case bytes.EqualFold(name, []byte("Connection")):
			closeConn = bytes.EqualFold(value, []byte("close"))
		}
	}
	var body bytes.Buffer
	var sink io.Writer = io.Discard
	if status != "" {
		sink = &limitedWriter{w: &body, n: 200}
	}
	switch {
	case chunked:
		for {
			l, err := br.ReadSlice('\n')
			if err != nil {
				return false, fmt.Errorf("read chunk size: %w", err)
			}
			l = trimCRLF(l)
			if i := bytes.IndexByte(l, ';'); i >= 0 {
				l = l[:i]
			}
			n, err := strconv.ParseInt(string(bytes.TrimSpace(l)), 16, 64)
			if err != nil {
				return false, fmt.Errorf("read response: bad chunk size %q", l)
			}
			if n == 0 {
				for { // trailers, then the blank line
					t, err := br.ReadSlice('\n')
					if err != nil {
						return false, fmt.Errorf("read trailer: %w", err)
					}
					if len(trimCRLF(t)) == 0 {
						break
					}
				}
				break
			}
			if _, err := io.CopyN(sink, br, n); err != nil {
				return false, fmt.Errorf("read chunk: %w", err)
			}
			if _, err := br.Discard(2); err != nil {
				return false, fmt.Errorf("read chunk end: %w", err)
			}
		}
	case length >= 0:
		if _, err := io.CopyN(sink, br, length); err != nil {
			return false, fmt.Errorf("read response body: %w", err)
		}
	case closeConn:
		// The body runs to the end of the connection.
		if _, err := io.Copy(sink, br); err != nil {
			return false, fmt.Errorf("read response body: %w", err)
		}
	default:
		return false, errors.New("read response: neither Content-Length nor chunked (keep-alive impossible)")
	}
	if status != "" {
		return closeConn, statusError(fmt.Sprintf("%s: %s", status, bytes.TrimSpace(body.Bytes())))
	}
	return closeConn, nil
}

// statusError is a whole response with a status other than 2xx: counted
// as an error, but the connection stays usable.
type statusError string

func (e statusError) Error() string { return string(e) }

func trimCRLF(b []byte) []byte {
	return bytes.TrimRight(b, "\r\n")
}

type limitedWriter struct {
	w io.Writer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		q := p[:min(len(p), l.n)]
		l.n -= len(q)
		l.w.Write(q)
	}
	return len(p), nil
}

// h2cTransport is HTTP/2 connections from net/http's own ClientConn (one
// TCP connection each, streams multiplexed): cleartext with prior
// knowledge (h2c), or over TLS with h2 chosen by ALPN (h2). Worker i uses
// connection i%conns.
type h2cTransport struct {
	url   string
	body  []byte
	tr    *http.Transport
	conns []*http.ClientConn
	proto Protocol // H2C or H2, for errors
}

func newH2C(ctx context.Context, t prober.Target, path string, conns int, payload []byte, tl *prober.TLS, hs *atomic.Int64) (*h2cTransport, error) {
	var p http.Protocols
	h := &h2cTransport{body: jsonBody(payload), proto: H2C}
	scheme := "http"
	if tl == nil {
		p.SetUnencryptedHTTP2(true)
		h.tr = &http.Transport{Protocols: &p}
	} else {
		scheme, h.proto = "https", H2
		p.SetHTTP2(true)
		cfg := httpTLS(tl, t, "h2")
		h.tr = &http.Transport{Protocols: &p, DialTLSContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			raw, err := d.DialContext(ctx, t.Network, t.Address)
			if err != nil {
				return nil, err
			}
			c, err := tlsHandshake(ctx, raw, cfg, t, "h2", hs)
			if err != nil {
				return nil, err // not a typed nil in the interface
			}
			return c, nil
		}}
	}
	h.url = scheme + "://" + t.Address + path
	for i := 0; i < conns; i++ {
		cc, err := h.tr.NewClientConn(ctx, scheme, t.Address)
		if err != nil {
			h.close()
			return nil, fmt.Errorf("connect %s %s: %w", h.proto, t, tlsFailure(tl, t, err))
		}
		h.conns = append(h.conns, cc)
	}
	return h, nil
}

func (h *h2cTransport) caller(ctx context.Context, i int) (caller, error) {
	k := &h2cCaller{cc: h.conns[i%len(h.conns)], body: h.body, proto: h.proto}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.ContentLength = int64(len(h.body))
	k.req = req
	return k, nil
}

func (h *h2cTransport) close() {
	for _, cc := range h.conns {
		cc.Close()
	}
	h.tr.CloseIdleConnections()
}

// roundTripper is one HTTP/2 or HTTP/3 connection.
type roundTripper interface {
	RoundTrip(*http.Request) (*http.Response, error)
}

// h2cCaller is one worker's calls on one HTTP/2 (h2c, h2) or HTTP/3
// connection.
type h2cCaller struct {
	cc    roundTripper
	req   *http.Request // each call sends a copy
	body  []byte
	proto Protocol
}

// call sends a request of its own with a body reader of its own: a
// RoundTripper may go on reading the last request's body, and close it,
// after that call's response came (net/http's contract allows it, and an
// HTTP/2 or HTTP/3 client does it when the server answers before reading
// the body to its end), so a reused one could lend part of the next body
// to the last request.
func (k *h2cCaller) call(context.Context) error {
	req := *k.req
	req.Body = io.NopCloser(bytes.NewReader(k.body))
	resp, err := k.cc.RoundTrip(&req)
	if err != nil {
		// "client conn not usable" here most often means the server does
		// not speak HTTP/2 without TLS (prior knowledge) on this address.
		return fmt.Errorf("%s POST %s: %w", k.proto, k.req.URL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		return fmt.Errorf("%s %s: %s", resp.Proto, resp.Status, bytes.TrimSpace(b))
	}
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

// httpReady is a readiness check for servers measured over HTTP only: a
// POST of an empty payload to the echo path over a fresh connection, ready
// on any 2xx.
type httpReady struct{ path string }

func (httpReady) Name() string { return "http" }

func (r httpReady) Check(ctx context.Context, t prober.Target) (prober.Answer, error) {
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	host := t.Address
	if t.Network == "unix" {
		var d net.Dialer
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) { return d.DialContext(ctx, "unix", t.Address) }
		host = "localhost"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+host+r.path, bytes.NewReader(jsonBody(nil)))
	if err != nil {
		return prober.Answer{}, err
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return prober.Answer{}, err
	}
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return prober.Answer{Answered: true, Detail: resp.Status}, nil
	}
	return prober.Answer{Answered: true, Ready: true}, nil
}
