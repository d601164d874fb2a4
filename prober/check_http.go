package prober

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// HTTP checks a URL over a fresh connection per attempt (a new transport
// each time, no keep-alive): the first 2xx means ready; any other status
// (503 while starting) means answered, not ready. Redirects are not
// followed. With H2C it speaks HTTP/2 without TLS (prior knowledge); with
// TLS (https://) each attempt is a new TLS client offering h2 and
// http/1.1 by ALPN; with H3 (h3://) each attempt is a new QUIC connection
// by UDP to the same host:port, TLS being part of QUIC.
type HTTP struct {
	// H2C selects HTTP/2 over cleartext instead of HTTP/1.1.
	H2C bool
	// H3 selects HTTP/3 over QUIC (UDP); TLS is then always set.
	H3 bool
	// Path is the request path with its query ("/healthz?full=1").
	Path string
	// Fixed is the address the URL names, when it names a port; zero when
	// the probe follows the instance's target.
	Fixed Target
	// Host is the Host header ("" = the address dialled, or "localhost"
	// for a Unix socket).
	Host string
	// Body, when set, is POSTed with ContentType; else the request is a GET.
	Body        []byte
	ContentType string
	// TLS, when set, makes each attempt a new TLS client (https://);
	// TLSName is the server name from the URL's host.
	TLS     *TLS
	TLSName string
}

var _ Checker = (*HTTP)(nil)

// NewHTTP parses a probe URL: http://HOST:PORT/path, h2c://HOST:PORT/path,
// https://HOST:PORT/path or h3://HOST:PORT/path (these two over TLS with
// the system's roots until WithTLS gives others; HOST, when the URL names
// one, is the name verified; h3 dials the UDP port of that number).
// HOST must be loopback (127.0.0.0/8, ::1, localhost); a non-loopback URL is
// refused, so a probe never leaves the machine. The address part may be
// left to the instance: "http:///healthz", "http://{addr}/healthz",
// "http://127.0.0.1:{port}/healthz" and a host without a port all dial the
// instance's target (its $PORT, or its Unix socket). A literal port is a
// fixed address (see Fixed).
func NewHTTP(raw string) (*HTTP, error) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok || (scheme != "http" && scheme != "h2c" && scheme != "https" && scheme != "h3") {
		return nil, fmt.Errorf("%q is not an http://, https://, h2c:// or h3:// URL", raw)
	}
	hostport, path := rest, "/"
	if i := strings.IndexAny(rest, "/?"); i >= 0 {
		hostport, path = rest[:i], rest[i:]
		if strings.HasPrefix(path, "?") {
			path = "/" + path
		}
	}
	u, err := url.Parse("http://localhost" + path)
	if err != nil || u.Host != "localhost" {
		return nil, fmt.Errorf("bad path in %q: %v", raw, err)
	}
	h := &HTTP{H2C: scheme == "h2c", H3: scheme == "h3", Path: u.RequestURI()}
	if scheme == "https" || scheme == "h3" {
		h.TLS = &TLS{}
	}
	switch {
	case hostport == "" || hostport == "{addr}":
		return h, nil
	case strings.HasSuffix(hostport, ":{port}"):
		host := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSuffix(hostport, ":{port}"), "["), "]")
		if err := checkLoopback(raw, host); err != nil {
			return nil, err
		}
		if h.TLS != nil {
			h.TLSName = host
		}
		return h, nil
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		// No port: the host alone, the instance's port.
		host, port = strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]"), ""
	}
	if strings.ContainsAny(host+port, "{}") {
		return nil, fmt.Errorf("%q: only {addr} or HOST:{port} may stand for the address", raw)
	}
	if err := checkLoopback(raw, host); err != nil {
		return nil, err
	}
	if h.TLS != nil {
		h.TLSName = host
	}
	if port != "" {
		h.Fixed = Target{Network: "tcp", Address: net.JoinHostPort(host, port)}
	}
	return h, nil
}

// IsLoopback reports whether host is localhost or a loopback IP
// (127.0.0.0/8, ::1).
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func checkLoopback(raw, host string) error {
	if !IsLoopback(host) {
		return fmt.Errorf("%q: host %q is not loopback; coldstart probes only 127.0.0.0/8, ::1, localhost or a Unix socket", raw, host)
	}
	return nil
}

// Name labels the probe in results: "http /healthz", "h2c /healthz",
// "https /healthz" or "h3 /healthz".
func (h *HTTP) Name() string {
	if h.H2C {
		return "h2c " + h.Path
	}
	if h.H3 {
		return "h3 " + h.Path + unverified(h.TLS)
	}
	return scheme("http", "https", h.TLS) + " " + h.Path + unverified(h.TLS)
}

// Check makes one request over a new connection to h.Fixed or, when that
// is zero, to t (with H3, to the UDP port of that host:port).
func (h *HTTP) Check(ctx context.Context, t Target) (Answer, error) {
	dst := t
	if h.Fixed.Address != "" {
		dst = h.Fixed
	}
	if h.H3 {
		return h.checkH3(ctx, dst)
	}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, dst.Network, dst.Address)
		},
		DisableKeepAlives:  true,
		DisableCompression: true,
	}
	if h.H2C {
		tr.Protocols = new(http.Protocols)
		tr.Protocols.SetUnencryptedHTTP2(true)
	}
	var at *attemptTLS
	scheme := "http"
	if h.TLS != nil {
		scheme = "https"
		at = &attemptTLS{target: dst}
		cfg := h.TLS.config(h.tlsName(dst), at)
		cfg.NextProtos = []string{"h2", "http/1.1"}
		tr.DialTLSContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			raw, err := d.DialContext(ctx, dst.Network, dst.Address)
			if err != nil {
				return nil, err
			}
			c, err := at.handshake(ctx, raw, cfg)
			if err != nil {
				raw.Close()
				return nil, err
			}
			return c, nil
		}
		tr.ForceAttemptHTTP2 = true
	}
	defer tr.CloseIdleConnections()
	return at.finish(h.TLS, func() (Answer, error) { return h.check(ctx, client(tr), dst, scheme) })
}

func client(tr *http.Transport) *http.Client {
	return &http.Client{
		Transport:     tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// doer sends one request: an *http.Client, or one HTTP/3 connection.
type doer interface {
	Do(*http.Request) (*http.Response, error)
}

func (h *HTTP) check(ctx context.Context, client doer, dst Target, scheme string) (Answer, error) {
	host := h.Host
	if host == "" {
		host = dst.Address
		if dst.Network == "unix" {
			host = "localhost"
		}
	}
	method, body := http.MethodGet, io.Reader(nil)
	if h.Body != nil {
		method, body = http.MethodPost, bytes.NewReader(h.Body)
	}
	req, err := http.NewRequestWithContext(ctx, method, scheme+"://"+host+h.Path, body)
	if err != nil {
		return Answer{}, fmt.Errorf("build request for %s: %w", h.Name(), err)
	}
	if h.Body != nil && h.ContentType != "" {
		req.Header.Set("Content-Type", h.ContentType)
	}
	for k, vs := range headers(ctx) {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := client.Do(req)
	if err != nil {
		return Answer{}, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return Answer{Answered: true, Ready: true, Detail: resp.Proto}, nil
	}
	return Answer{Answered: true, Detail: resp.Status}, nil
}
