package prober

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
)

// checkH3 makes one HTTP/3 request over a new QUIC connection to dst's
// host:port by UDP: a new UDP socket, a new TLS client from h.TLS (no
// session ticket, so no resumption and no 0-RTT) and no address
// validation token, as a new instance's first caller has none of them.
// The QUIC handshake (Initial sent → handshake complete) is the attempt's
// Handshake; the server's first datagram back is its Answer.Reached.
func (h *HTTP) checkH3(ctx context.Context, dst Target) (Answer, error) {
	if dst.Network != "tcp" {
		return Answer{}, &OptionError{Option: "probe", Err: &tlsError{fmt.Errorf("%s probes a UDP port, and the instance listens on %s: give the probe a host:port (h3://127.0.0.1:PORT/path)", h.Name(), dst)}}
	}
	ua, err := net.ResolveUDPAddr("udp", dst.Address)
	if err != nil {
		return Answer{}, fmt.Errorf("resolve udp %s: %w", dst.Address, err)
	}
	// A connected socket: an ICMP port unreachable comes back as
	// ECONNREFUSED on its next read, so a port nothing listens on is said
	// at once instead of waited out until the handshake times out.
	uc, err := net.DialUDP("udp", nil, ua)
	if err != nil {
		return Answer{}, fmt.Errorf("dial udp %s: %w", dst.Address, err)
	}
	defer uc.Close()
	at := &attemptTLS{target: udpTarget(dst)}
	pc := &connectedUDP{uc: uc, remote: ua}
	tr := &quic.Transport{Conn: pc}
	defer tr.Close()
	cfg := h.TLS.config(h.tlsName(dst), at)
	cfg.NextProtos = []string{http3.NextProtoH3}
	a, err := at.finish(h.TLS, func() (Answer, error) {
		conn, err := tr.Dial(ctx, ua, cfg, &quic.Config{})
		done := time.Now()
		if err != nil {
			if errors.Is(err, syscall.ECONNREFUSED) {
				return Answer{}, &udpRefusedError{target: at.target, err: err}
			}
			at.mu.Lock()
			if at.hsErr == nil {
				at.hsErr = err
			}
			at.mu.Unlock()
			return Answer{}, err
		}
		defer conn.CloseWithError(0, "")
		at.mu.Lock()
		at.hs = &Handshake{Start: pc.firstWrite(), Done: done, State: conn.ConnectionState().TLS}
		at.mu.Unlock()
		cc := (&http3.Transport{DisableCompression: true}).NewClientConn(conn)
		a, err := h.check(ctx, roundTripper{cc}, dst, "https")
		if err != nil {
			at.mu.Lock()
			at.after = err
			at.mu.Unlock()
		}
		return a, err
	})
	a.Reached = pc.firstRead()
	return a, h3Failure(err, at, h.TLS)
}

// tlsName is the server name an attempt on dst sends and verifies when
// the TLS options give none: the URL's host, else the host dialled.
func (h *HTTP) tlsName(dst Target) string {
	if h.TLSName != "" {
		return h.TLSName
	}
	if host, _, err := net.SplitHostPort(dst.Address); err == nil && dst.Network == "tcp" {
		return host
	}
	return "localhost"
}

// roundTripper lets HTTP.check send its request on one HTTP/3 connection.
type roundTripper struct{ cc *http3.ClientConn }

func (r roundTripper) Do(req *http.Request) (*http.Response, error) { return r.cc.RoundTrip(req) }

// udpTarget is dst's host:port by UDP, as errors name it.
func udpTarget(dst Target) Target { return Target{Network: "udp", Address: dst.Address} }

// h3Failure turns what failed after the QUIC handshake into the TLS
// failure behind it: a server that asked for a client certificate and
// closed the connection with a TLS alert refused the one it got (or
// demanded one), which QUIC reports as a CRYPTO_ERROR.
func h3Failure(err error, at *attemptTLS, tl *TLS) error {
	if err == nil || errors.Is(err, ErrBadProbe) {
		return err
	}
	if !QUICRefused(err) {
		return err
	}
	at.mu.Lock()
	asked := at.asked
	at.mu.Unlock()
	switch {
	case asked && tl.cert == nil:
		return badTLS("cert", "the server at %s demands a client certificate, and none was given (%v)", at.target, err)
	case asked:
		return badTLS("cert", "the server at %s refused the client certificate %s (%v)", at.target, tl.Options.CertFile, err)
	}
	return badTLS("tls", "the server at %s refused the QUIC handshake: %v", at.target, err)
}

// QUICRefused reports whether err is the peer closing a QUIC connection
// with a CRYPTO_ERROR (transport error codes 0x100–0x1ff, RFC 9001 §4.8):
// a TLS alert, such as a server refusing a client certificate, or
// demanding one.
func QUICRefused(err error) bool {
	var te *quic.TransportError
	return errors.As(err, &te) && te.Remote && te.ErrorCode >= 0x100 && te.ErrorCode <= 0x1ff
}

// ErrNoUDPListener marks an HTTP/3 attempt whose UDP port answered with
// ICMP port unreachable: nothing listens there (yet). WaitReady retries
// it while the server starts, and names it a bad probe once the server
// accepts TCP at its address and the UDP port still refuses (see
// udpGrace).
var ErrNoUDPListener = errors.New("nothing listens on the UDP port")

type udpRefusedError struct {
	target Target
	err    error
}

func (e *udpRefusedError) Error() string {
	return fmt.Sprintf("nothing listens on %s: the port answered the QUIC Initial with ICMP port unreachable (%v)", e.target, e.err)
}

func (e *udpRefusedError) Unwrap() []error { return []error{ErrNoUDPListener, e.err} }

// connectedUDP is a connected UDP socket as the net.PacketConn quic-go
// reads and writes: every datagram goes to remote, and the times of the
// first one written (the client's Initial) and read (the server's first
// answer) are kept. It holds the socket rather than embedding it, so
// that quic-go sees a plain net.PacketConn and writes with WriteTo, not
// with WriteMsgUDP to an address (refused on a connected socket); it
// offers no batching (GSO, ECN), which a probe's handful of packets does
// without.
type connectedUDP struct {
	uc     *net.UDPConn
	remote *net.UDPAddr

	mu           sync.Mutex
	wrote, heard time.Time
}

func (c *connectedUDP) WriteTo(b []byte, _ net.Addr) (int, error) {
	c.mu.Lock()
	if c.wrote.IsZero() {
		c.wrote = time.Now()
	}
	c.mu.Unlock()
	return c.uc.Write(b)
}

func (c *connectedUDP) ReadFrom(b []byte) (int, net.Addr, error) {
	n, err := c.uc.Read(b)
	if err == nil {
		c.mu.Lock()
		if c.heard.IsZero() {
			c.heard = time.Now()
		}
		c.mu.Unlock()
	}
	return n, c.remote, err
}

func (c *connectedUDP) Close() error               { return c.uc.Close() }
func (c *connectedUDP) SetReadBuffer(n int) error  { return c.uc.SetReadBuffer(n) }
func (c *connectedUDP) SetWriteBuffer(n int) error { return c.uc.SetWriteBuffer(n) }
func (c *connectedUDP) SyscallConn() (syscall.RawConn, error) {
	return c.uc.SyscallConn()
}
func (c *connectedUDP) LocalAddr() net.Addr                { return c.uc.LocalAddr() }
func (c *connectedUDP) SetDeadline(t time.Time) error      { return c.uc.SetDeadline(t) }
func (c *connectedUDP) SetReadDeadline(t time.Time) error  { return c.uc.SetReadDeadline(t) }
func (c *connectedUDP) SetWriteDeadline(t time.Time) error { return c.uc.SetWriteDeadline(t) }

func (c *connectedUDP) firstWrite() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.wrote
}

func (c *connectedUDP) firstRead() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.heard
}

// connectless is a Checker that reaches the server by UDP: WaitReady
// makes no TCP connect before its attempts, and takes the accepting phase
// from the first datagram the server sent back (Answer.Reached).
type connectless interface {
	udp() bool
}

func (h *HTTP) udp() bool { return h.H3 }
