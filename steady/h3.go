package steady

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"github.com/coldstart-go/coldstart/prober"
)

// h3Transport is HTTP/3 connections from quic-go's http3 package: one
// QUIC connection (its own UDP socket) each to the UDP port of the HTTP
// address's host:port, requests multiplexed as streams. Worker i uses
// connection i%conns, so a step of C connections and N workers carries
// N/C streams in flight on each.
type h3Transport struct {
	url   string
	body  []byte
	tr    *http3.Transport
	conns []*quic.Conn
	ccs   []*http3.ClientConn
}

func newH3(ctx context.Context, t prober.Target, path string, conns int, payload []byte, tl *prober.TLS, hs *atomic.Int64) (*h3Transport, error) {
	if t.Network != "tcp" {
		return nil, fmt.Errorf("h3 loads a UDP port, and the server's HTTP address is %s: give it a host:port", t)
	}
	h := &h3Transport{url: "https://" + t.Address + path, body: jsonBody(payload), tr: &http3.Transport{DisableCompression: true}}
	cfg := tl.ClientConfig(tlsName(t))
	cfg.NextProtos = []string{http3.NextProtoH3}
	for i := 0; i < conns; i++ {
		// A step's connections stay open while the other units of its
		// rounds (arms, protocols) are measured: keep-alive PINGs keep
		// an idle timeout (quic-go's default 30 s, either side) from
		// closing them in between.
		conn, err := quic.DialAddr(ctx, t.Address, cfg, &quic.Config{HandshakeIdleTimeout: 5 * time.Second, KeepAlivePeriod: h3KeepAlive})
		if err != nil {
			h.close()
			return nil, fmt.Errorf("connect h3 udp://%s: %w", t.Address, quicFailure(tl, t, err))
		}
		hs.Add(1)
		h.conns = append(h.conns, conn)
		h.ccs = append(h.ccs, h.tr.NewClientConn(conn))
	}
	return h, nil
}

func (h *h3Transport) caller(ctx context.Context, i int) (caller, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.ContentLength = int64(len(h.body))
	return &h2cCaller{cc: h.ccs[i%len(h.ccs)], req: req, body: h.body, proto: H3}, nil
}

func (h *h3Transport) close() {
	for _, c := range h.conns {
		c.CloseWithError(0, "")
	}
	h.tr.Close()
}

// quicFailure names the TLS setting behind err, a QUIC connection to t's
// UDP port that failed, as tlsFailure does for TCP: a certificate that
// does not verify, a client certificate demanded or refused (the server's
// CRYPTO_ERROR), or a handshake that timed out (nothing answered on the
// UDP port).
func quicFailure(tl *prober.TLS, t prober.Target, err error) error {
	var ht *quic.HandshakeTimeoutError
	switch {
	case prober.QUICRefused(err) && tl.Options.CertFile == "":
		return optionf("TLS.Options.CertFile", "the server at udp://%s refused the QUIC handshake, and no client certificate was given: does it demand one (mTLS)? (%v)", t.Address, err)
	case prober.QUICRefused(err):
		return optionf("TLS.Options.CertFile", "the server at udp://%s refused the QUIC handshake with the client certificate %s (%v)", t.Address, tl.Options.CertFile, err)
	case errors.As(err, &ht):
		return fmt.Errorf("no QUIC answer from udp://%s: does the server serve HTTP/3 on that UDP port? (%w)", t.Address, err)
	}
	return tlsFailure(tl, t, err)
}

// checkH3 makes sure something serves HTTP/3 on the UDP port of t's
// host:port before the load, over prober's h3 check (a new QUIC
// connection on a connected socket, so that ICMP port unreachable is
// seen): a TLS setting that cannot work is its final error; a port that
// still refuses after h3Grace (a server binds its sockets one by one as
// it starts) is said, rather than counted as every call's error.
func checkH3(ctx context.Context, cfg Config, t prober.Target) error {
	c := &prober.HTTP{H3: true, Path: cfg.HTTPPath, Body: jsonBody(nil), ContentType: "application/json", TLS: cfg.TLS}
	deadline := time.Now().Add(h3Grace)
	for {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := c.Check(actx, t)
		cancel()
		switch {
		case errors.Is(err, prober.ErrBadProbe):
			return err
		case errors.Is(err, prober.ErrNoUDPListener) && time.Now().Before(deadline) && ctx.Err() == nil:
			time.Sleep(20 * time.Millisecond)
			continue
		case errors.Is(err, prober.ErrNoUDPListener):
			return fmt.Errorf("%w: does the server serve HTTP/3 there (the sample server: --http3-addr)?", err)
		}
		return nil // anything else is the load's to count
	}
}

// h3KeepAlive is how often an idle QUIC connection of the load PINGs the
// server.
const h3KeepAlive = 10 * time.Second

// h3Grace is how long checkH3 waits for a UDP port that refuses.
const h3Grace = time.Second
