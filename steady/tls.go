package steady

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/coldstart-go/coldstart/internal/leangrpc"
	"github.com/coldstart-go/coldstart/prober"
)

// tlsName is the server name a connection to t sends and verifies when
// the TLS options give none: the host dialled (an IP address is verified
// against the certificate's IP addresses), or localhost for a Unix socket.
func tlsName(t prober.Target) string {
	if t.Network == "unix" {
		return "localhost"
	}
	if host, _, err := net.SplitHostPort(t.Address); err == nil {
		return host
	}
	return t.Address
}

// grpcDialOptions are a grpc-go client's options for the load: plaintext,
// or TLS with tl counting each completed handshake in n (nil = not
// counted), and fixed flow-control windows, which turn off grpc-go's
// bandwidth-delay estimator: it answers received data with PING frames,
// an extra write per call on a sequential channel that costs the
// generator CPU and is not part of the load.
func grpcDialOptions(tl *prober.TLS, n *atomic.Int64) []grpc.DialOption {
	creds := insecure.NewCredentials()
	if tl != nil {
		// grpc-go fills in the server name from the authority and offers
		// h2 by ALPN itself.
		creds = &countedCreds{TransportCredentials: credentials.NewTLS(tl.ClientConfig("")), n: n}
	}
	return []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithInitialWindowSize(4 << 20),
		grpc.WithInitialConnWindowSize(16 << 20),
	}
}

// countedCreds are grpc-go's TLS credentials, counting the handshakes
// that complete.
type countedCreds struct {
	credentials.TransportCredentials
	n *atomic.Int64
}

func (c *countedCreds) ClientHandshake(ctx context.Context, authority string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, info, err := c.TransportCredentials.ClientHandshake(ctx, authority, raw)
	if err == nil && c.n != nil {
		c.n.Add(1)
	}
	return conn, info, err
}

func (c *countedCreds) Clone() credentials.TransportCredentials {
	return &countedCreds{TransportCredentials: c.TransportCredentials.Clone(), n: c.n}
}

// leanOptions are the lean client's options for TLS (none in plaintext).
func leanOptions(tl *prober.TLS, t prober.Target) []leangrpc.Option {
	if tl == nil {
		return nil
	}
	return []leangrpc.Option{leangrpc.WithTLS(tl.ClientConfig(tlsName(t)))}
}

// httpTLS is the TLS configuration of an HTTP connection to t offering
// proto by ALPN (nil in plaintext).
func httpTLS(tl *prober.TLS, t prober.Target, proto string) *tls.Config {
	if tl == nil {
		return nil
	}
	c := tl.ClientConfig(tlsName(t))
	c.NextProtos = []string{proto}
	return c
}

// tlsHandshake runs the client side of TLS on raw (closing it on failure)
// and counts the handshake in n when it completes; want, when set, is the
// protocol the server must choose by ALPN.
func tlsHandshake(ctx context.Context, raw net.Conn, cfg *tls.Config, t prober.Target, want string, n *atomic.Int64) (*tls.Conn, error) {
	c := tls.Client(raw, cfg)
	if err := c.HandshakeContext(ctx); err != nil {
		raw.Close()
		return nil, &handshakeError{fmt.Errorf("TLS handshake with %s: %w", t, err)}
	}
	n.Add(1)
	if p := c.ConnectionState().NegotiatedProtocol; want != "" && p != want {
		c.Close()
		if p == "" {
			p = "none"
		}
		return nil, fmt.Errorf("TLS with %s: the server chose ALPN %q, want %q: it does not serve that protocol over TLS there", t, p, want)
	}
	return c, nil
}

// usesHTTP says the protocols load an HTTP listener over TCP (h3's is
// UDP, checked by checkH3).
func usesHTTP(ps []Protocol) bool {
	return known(ps, HTTP1) || known(ps, H2C) || known(ps, H2)
}

// readyChecker is the readiness check of a server the load reaches over
// cfg.Protocols: a gRPC health check (grpc) or a POST of an empty payload
// to the echo path, over TLS with cfg.TLS (prober's checks, whose
// failures that retrying does not mend, a certificate that does not
// verify, a plaintext server, a client certificate demanded or refused,
// wrap prober.ErrBadProbe and name the TLS input at fault). In plaintext
// an attempt that is not ready asks whether the server speaks TLS
// instead, so that a TLS server loaded without TLS is said at once rather
// than waited for until the timeout.
func readyChecker(cfg Config, grpc bool) prober.Checker {
	switch {
	case grpc && cfg.TLS != nil:
		return prober.Health{TLS: cfg.TLS}
	case grpc:
		return plainCheck{prober.Health{}}
	case cfg.TLS != nil:
		return &prober.HTTP{Path: cfg.HTTPPath, Body: jsonBody(nil), ContentType: "application/json", TLS: cfg.TLS}
	}
	return plainCheck{httpReady{path: cfg.HTTPPath}}
}

// checkOnce makes one check of the server at t: only a failure retrying
// will not mend (prober.ErrBadProbe) is an error; anything else is left
// to the load, which counts what fails.
func checkOnce(ctx context.Context, c prober.Checker, t prober.Target) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := c.Check(ctx, t); errors.Is(err, prober.ErrBadProbe) {
		return err
	}
	return nil
}

// plainCheck is a plaintext readiness check that, when the server is not
// ready, tries a TLS handshake with it: a server that completes one, or
// answers with a TLS alert, serves TLS, and loading it in plaintext
// cannot work.
type plainCheck struct{ prober.Checker }

func (p plainCheck) Check(ctx context.Context, t prober.Target) (prober.Answer, error) {
	a, err := p.Checker.Check(ctx, t)
	if a.Ready {
		return a, err
	}
	if serr := speaksTLS(ctx, t); serr != nil {
		return a, serr
	}
	return a, err
}

// speaksTLS returns an *OptionError on TLS wrapping prober.ErrBadProbe
// when the server at t answers a TLS ClientHello in TLS, nil when it does
// not or cannot be asked.
func speaksTLS(ctx context.Context, t prober.Target) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var d net.Dialer
	raw, err := d.DialContext(ctx, t.Network, t.Address)
	if err != nil {
		return nil
	}
	defer raw.Close()
	// Nothing is verified or sent over it: it only asks what the server
	// speaks.
	c := tls.Client(raw, &tls.Config{InsecureSkipVerify: true, ServerName: tlsName(t), NextProtos: []string{"h2", "http/1.1"}})
	err = c.HandshakeContext(ctx)
	var alert tls.AlertError
	if err != nil && !errors.As(err, &alert) && !isRemoteAlert(err) {
		return nil
	}
	return &OptionError{Option: "TLS", Err: final(fmt.Errorf("the server at %s serves TLS (it answered a TLS ClientHello), and the load is plaintext: load it over TLS, with the CA that signed its certificate", t))}
}

func isRemoteAlert(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "remote error"
}

// finalError is a failure retrying does not mend (prober.ErrBadProbe,
// so that a readiness wait ends at once); it prints as err.
type finalError struct{ err error }

func final(err error) error           { return &finalError{err} }
func (e *finalError) Error() string   { return e.err.Error() }
func (e *finalError) Unwrap() []error { return []error{prober.ErrBadProbe, e.err} }

// tlsFailure names the TLS setting behind err, a connection of the load
// to t that failed over TLS, as an *OptionError; err unchanged when it is
// no TLS failure it knows (a connection refused, say).
func tlsFailure(tl *prober.TLS, t prober.Target, err error) error {
	if tl == nil || err == nil {
		return err
	}
	var (
		rh    tls.RecordHeaderError
		ve    *tls.CertificateVerificationError
		notH2 = errors.Is(err, leangrpc.ErrNotH2)
	)
	switch {
	case errors.As(err, &rh):
		return optionf("TLS", "the server at %s answered the TLS ClientHello in plaintext (%q): it does not serve TLS there (%v)", t, rh.RecordHeader[:], err)
	case errors.As(err, &ve):
		opt, against := "TLS", "the system's roots"
		if tl.Options.CAFile != "" {
			opt, against = "TLS.Options.CAFile", tl.Options.CAFile
		}
		var he x509.HostnameError
		if errors.As(ve.Err, &he) && tl.Options.ServerName != "" {
			opt = "TLS.Options.ServerName"
		}
		return optionf(opt, "the server's certificate at %s does not verify against %s: %v", t, against, ve.Err)
	case isRemoteAlert(err) && tl.Options.CertFile == "":
		return optionf("TLS.Options.CertFile", "the server at %s refused the TLS connection, and no client certificate was given: does it demand one (mTLS)? (%v)", t, err)
	case isRemoteAlert(err):
		return optionf("TLS.Options.CertFile", "the server at %s refused the TLS connection with the client certificate %s (%v)", t, tl.Options.CertFile, err)
	case notH2:
		return optionf("TLS", "%v", err)
	case errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET):
		var lt *leangrpc.TLSError
		if errors.As(err, &lt) || isHandshake(err) {
			return optionf("TLS", "a plaintext server? the server at %s closed the connection on the TLS ClientHello without a TLS reply (%v)", t, err)
		}
	}
	return err
}

// isHandshake says err came from a TLS handshake of tlsHandshake.
func isHandshake(err error) bool {
	var h *handshakeError
	return errors.As(err, &h)
}

// handshakeError marks the error of a TLS handshake.
type handshakeError struct{ err error }

func (e *handshakeError) Error() string { return e.err.Error() }
func (e *handshakeError) Unwrap() error { return e.err }
