package prober

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/coldstart-go/coldstart/record"
)

// TLSOptions are a TLS probe's inputs, as given: files are PEM.
type TLSOptions struct {
	// CAFile holds the CAs the server's certificate must chain to ("" =
	// the system's roots).
	CAFile string
	// ServerName is the name sent (SNI) and verified ("" = the probe
	// URL's host name, else the host dialled: an IP address is verified
	// against the certificate's IP addresses).
	ServerName string
	// InsecureSkipVerify accepts any server certificate: figures taken so
	// are labelled unverified.
	InsecureSkipVerify bool
	// CertFile and KeyFile are the client's certificate and key (mTLS).
	CertFile, KeyFile string
}

// TLS is a loaded TLS client configuration. Every probe attempt makes a
// new client from it, with no session cache and session tickets off: no
// attempt resumes another's session, as a new instance's first caller has
// none to resume.
type TLS struct {
	Options TLSOptions
	roots   *x509.CertPool // nil: the system's roots
	cert    *tls.Certificate
	// Record is what the results file carries: paths and fingerprints,
	// never a key.
	Record record.TLSClient
}

// LoadTLS reads o's files. Its errors are *OptionError naming the input
// at fault ("cacert", "cert", "key") and the file.
func LoadTLS(o TLSOptions) (*TLS, error) {
	t := &TLS{Options: o, Record: record.TLSClient{
		CAFile: o.CAFile, ServerName: o.ServerName, InsecureSkipVerify: o.InsecureSkipVerify,
		CertFile: o.CertFile, KeyFile: o.KeyFile,
	}}
	if o.CAFile != "" {
		b, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, &OptionError{Option: "cacert", Err: err}
		}
		certs, err := parsePEMCerts(b)
		if err != nil {
			return nil, optionf("cacert", "%s: %v", o.CAFile, err)
		}
		t.roots = x509.NewCertPool()
		for _, c := range certs {
			t.roots.AddCert(c)
			t.Record.CASHA256 = append(t.Record.CASHA256, Fingerprint(c))
		}
	}
	switch {
	case o.CertFile != "" && o.KeyFile == "":
		return nil, optionf("key", "none given for the client certificate %s", o.CertFile)
	case o.CertFile == "" && o.KeyFile != "":
		return nil, optionf("cert", "none given for the client key %s", o.KeyFile)
	case o.CertFile != "":
		cb, err := os.ReadFile(o.CertFile)
		if err != nil {
			return nil, &OptionError{Option: "cert", Err: err}
		}
		if _, err := parsePEMCerts(cb); err != nil {
			return nil, optionf("cert", "%s: %v", o.CertFile, err)
		}
		kb, err := os.ReadFile(o.KeyFile)
		if err != nil {
			return nil, &OptionError{Option: "key", Err: err}
		}
		pair, err := tls.X509KeyPair(cb, kb)
		if err != nil {
			if strings.Contains(err.Error(), "does not match") {
				return nil, optionf("key", "%s does not match the certificate in %s (%v)", o.KeyFile, o.CertFile, err)
			}
			return nil, optionf("key", "%s: %v", o.KeyFile, err)
		}
		t.cert = &pair
		t.Record.CertSHA256 = Fingerprint(pair.Leaf)
	}
	return t, nil
}

func parsePEMCerts(b []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			break
		}
		if blk.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("a certificate that does not parse: %v", err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("no PEM certificate in it")
	}
	return certs, nil
}

// Fingerprint is a certificate's SHA-256, in hex.
func Fingerprint(c *x509.Certificate) string {
	sum := sha256.Sum256(c.Raw)
	return hex.EncodeToString(sum[:])
}

// Unverified reports whether the server's certificate is not verified.
func (t *TLS) Unverified() bool { return t != nil && t.Options.InsecureSkipVerify }

// ClientConfig is a new client configuration from t: its roots, its
// client certificate (mTLS) when it has one, TLS 1.2 or later, and the
// server name TLSOptions gives, else name ("" = whoever dials fills it in,
// as grpc-go does from the authority). It resumes no session: session
// tickets are off and there is no ClientSessionCache, so every connection
// made with it pays a full handshake; a caller that wants resumption
// turns tickets on and sets a cache on its own copy. NextProtos is left
// to the caller (ALPN "h2" for HTTP/2).
func (t *TLS) ClientConfig(name string) *tls.Config {
	c := &tls.Config{
		RootCAs:                t.roots,
		ServerName:             t.Options.ServerName,
		InsecureSkipVerify:     t.Options.InsecureSkipVerify,
		MinVersion:             tls.VersionTLS12,
		SessionTicketsDisabled: true, // and no ClientSessionCache: never resume
	}
	if t.cert != nil {
		c.Certificates = []tls.Certificate{*t.cert}
	}
	if c.ServerName == "" {
		c.ServerName = name
	}
	return c
}

// config is a new client configuration for one attempt (ClientConfig's),
// noting in at whether the server asked for a client certificate.
func (t *TLS) config(name string, at *attemptTLS) *tls.Config {
	c := t.ClientConfig(name)
	c.Certificates = nil
	c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		at.mu.Lock()
		at.asked = true
		at.mu.Unlock()
		if t.cert == nil {
			return &tls.Certificate{}, nil // none: the server decides
		}
		return t.cert, nil
	}
	return c
}

// Handshake is one probe attempt's TLS handshake, on its own connection.
type Handshake struct {
	// Start is when the ClientHello was written; Done when the handshake
	// completed.
	Start, Done time.Time
	State       tls.ConnectionState
}

// Record is what a sample carries of it.
func (h *Handshake) Record() *record.TLSHandshake {
	r := &record.TLSHandshake{
		Ms:      ms(h.Done.Sub(h.Start)),
		Version: tls.VersionName(h.State.Version),
		Cipher:  tls.CipherSuiteName(h.State.CipherSuite),
		Resumed: h.State.DidResume,
		ALPN:    h.State.NegotiatedProtocol,
	}
	if len(h.State.PeerCertificates) > 0 {
		leaf := h.State.PeerCertificates[0]
		r.ServerCertSHA256, r.ServerKey = Fingerprint(leaf), KeyName(leaf)
	}
	return r
}

// KeyName names a certificate's public key: "ECDSA P-256", "RSA-2048".
func KeyName(c *x509.Certificate) string {
	switch k := c.PublicKey.(type) {
	case *ecdsa.PublicKey:
		return "ECDSA " + k.Curve.Params().Name
	case *rsa.PublicKey:
		return fmt.Sprintf("RSA-%d", k.N.BitLen())
	case ed25519.PublicKey:
		return "Ed25519"
	}
	return c.PublicKeyAlgorithm.String()
}

// attemptTLS is what one attempt's TLS connection saw: its handshake, or
// why it failed, and what failed after it.
type attemptTLS struct {
	mu     sync.Mutex
	hs     *Handshake
	hsErr  error
	asked  bool   // the server asked for a client certificate
	first  []byte // the server's first bytes, for a non-TLS reply
	after  error  // the first read or write error after the handshake
	target Target
}

// handshake runs the client side of TLS on raw, timing it from the
// ClientHello's write.
func (at *attemptTLS) handshake(ctx context.Context, raw net.Conn, cfg *tls.Config) (*tls.Conn, error) {
	w := &wireConn{Conn: raw, at: at}
	c := tls.Client(w, cfg)
	err := c.HandshakeContext(ctx)
	done := time.Now()
	at.mu.Lock()
	defer at.mu.Unlock()
	if err != nil {
		if at.hsErr == nil && at.hs == nil {
			at.hsErr = err
		}
		return nil, err
	}
	if at.hs == nil {
		at.hs = &Handshake{Start: w.wrote, Done: done, State: c.ConnectionState()}
	}
	return c, nil
}

// wireConn is the raw connection under TLS: it notes when the first byte
// (the ClientHello) was written and keeps the server's first bytes.
type wireConn struct {
	net.Conn
	at    *attemptTLS
	wrote time.Time
}

func (w *wireConn) Write(b []byte) (int, error) {
	if w.wrote.IsZero() {
		w.wrote = time.Now()
	}
	n, err := w.Conn.Write(b)
	w.note(err)
	return n, err
}

func (w *wireConn) Read(b []byte) (int, error) {
	n, err := w.Conn.Read(b)
	if n > 0 {
		w.at.mu.Lock()
		if len(w.at.first) < 16 {
			w.at.first = append(w.at.first, b[:min(n, 16-len(w.at.first))]...)
		}
		w.at.mu.Unlock()
	}
	w.note(err)
	return n, err
}

// note keeps the first error after the handshake.
func (w *wireConn) note(err error) {
	if err == nil || errors.Is(err, net.ErrClosed) {
		return
	}
	w.at.mu.Lock()
	if w.at.hs != nil && w.at.after == nil {
		w.at.after = err
	}
	w.at.mu.Unlock()
}

// afterConn is the TLS connection after its handshake: it keeps the first
// error, which may be the server's alert (a client certificate refused).
type afterConn struct {
	net.Conn
	at *attemptTLS
}

func (a *afterConn) note(err error) {
	if err == nil || errors.Is(err, net.ErrClosed) {
		return
	}
	a.at.mu.Lock()
	if a.at.after == nil || isRemoteAlert(err) && !isRemoteAlert(a.at.after) {
		a.at.after = err
	}
	a.at.mu.Unlock()
}

func (a *afterConn) Read(b []byte) (int, error) {
	n, err := a.Conn.Read(b)
	a.note(err)
	return n, err
}

func (a *afterConn) Write(b []byte) (int, error) {
	n, err := a.Conn.Write(b)
	a.note(err)
	return n, err
}

func isRemoteAlert(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "remote error"
}

// failure turns what the attempt saw into an error retrying does not
// mend (wrapping ErrBadProbe, an *OptionError naming the input at fault),
// or nil when nothing final went wrong: the server is not up yet, say.
func (at *attemptTLS) failure(t *TLS) error {
	at.mu.Lock()
	defer at.mu.Unlock()
	if at.hsErr != nil {
		return at.handshakeFailure(t)
	}
	if at.hs == nil || at.after == nil || !at.asked {
		return nil
	}
	// The handshake completed and the server asked for a client
	// certificate; then the connection failed: the server refused what
	// it got (TLS 1.3 says so only after the client's handshake ends,
	// and the alert may be lost to a write that failed first).
	if t.cert == nil {
		return badTLS("cert", "the server at %s demands a client certificate, and none was given (%v)", at.target, at.after)
	}
	return badTLS("cert", "the server at %s refused the client certificate %s (%v)", at.target, t.Options.CertFile, at.after)
}

func (at *attemptTLS) handshakeFailure(t *TLS) error {
	err := at.hsErr
	var rh tls.RecordHeaderError
	if errors.As(err, &rh) {
		return badTLS("tls", "the server at %s answered in plaintext, not TLS (%s): it does not serve TLS there", at.target, plainReply(at.first))
	}
	if len(at.first) == 0 && (errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)) {
		// Accepted, then closed on the ClientHello with no reply: what a
		// plaintext gRPC (h2c) server does with one.
		return &OptionError{Option: "tls", Err: &tlsError{fmt.Errorf("the server at %s closed the connection on the TLS ClientHello without a TLS reply (%w%w): a plaintext server?", at.target, errClosedOnHello, err)}}
	}
	var ve *tls.CertificateVerificationError
	if errors.As(err, &ve) {
		return verifyFailure(t, ve, at.target)
	}
	if isRemoteAlert(err) {
		if at.asked && t.cert == nil {
			return badTLS("cert", "the server at %s demands a client certificate, and none was given (%v)", at.target, err)
		}
		if at.asked {
			return badTLS("cert", "the server at %s refused the client certificate %s (%v)", at.target, t.Options.CertFile, err)
		}
		return badTLS("tls", "the server at %s refused the TLS handshake: %v", at.target, err)
	}
	return nil // a connection error: perhaps it is not up yet
}

func verifyFailure(t *TLS, ve *tls.CertificateVerificationError, target Target) error {
	var leaf *x509.Certificate
	if len(ve.UnverifiedCertificates) > 0 {
		leaf = ve.UnverifiedCertificates[0]
	}
	what := "the server's certificate"
	if leaf != nil {
		what = fmt.Sprintf("the server's certificate (subject %q, issuer %q, SHA-256 %.16s…)", leaf.Subject.String(), leaf.Issuer.String(), Fingerprint(leaf))
	}
	against := "the system's roots"
	opt := "tls"
	if t.Options.CAFile != "" {
		against, opt = t.Options.CAFile, "cacert"
	}
	var (
		ua x509.UnknownAuthorityError
		he x509.HostnameError
		ci x509.CertificateInvalidError
	)
	switch {
	case errors.As(ve.Err, &ua):
		return badTLS(opt, "%s at %s does not verify against %s: signed by an unknown authority (%v)", what, target, against, ve.Err)
	case errors.As(ve.Err, &he):
		if t.Options.ServerName != "" {
			opt = "tls-server-name"
		}
		return badTLS(opt, "%s at %s does not verify against %s: the wrong name: it is for %s, not %s", what, target, against, certNames(he.Certificate), he.Host)
	case errors.As(ve.Err, &ci) && ci.Reason == x509.Expired:
		reason := "expired"
		if leaf != nil {
			now := time.Now().UTC().Format(time.RFC3339)
			if time.Now().Before(leaf.NotBefore) {
				reason = fmt.Sprintf("not yet valid (from %s, now %s)", leaf.NotBefore.UTC().Format(time.RFC3339), now)
			} else {
				reason = fmt.Sprintf("expired (valid until %s, now %s)", leaf.NotAfter.UTC().Format(time.RFC3339), now)
			}
		}
		return badTLS(opt, "%s at %s does not verify against %s: %s", what, target, against, reason)
	}
	return badTLS(opt, "%s at %s does not verify against %s: %v", what, target, against, ve.Err)
}

// plainReply says what a non-TLS reply looks like.
func plainReply(b []byte) string {
	switch {
	case len(b) >= 9 && b[3] == 0x04 && b[4]&^1 == 0:
		return fmt.Sprintf("an HTTP/2 SETTINGS frame: a cleartext gRPC or h2c server; first bytes %q", b)
	case strings.HasPrefix(string(b), "HTTP/"):
		return fmt.Sprintf("an HTTP/1 response: %q", b)
	}
	return fmt.Sprintf("its first bytes: %q", b)
}

// certNames lists the names a certificate is for.
func certNames(c *x509.Certificate) string {
	names := append([]string(nil), c.DNSNames...)
	for _, ip := range c.IPAddresses {
		names = append(names, ip.String())
	}
	if len(names) == 0 {
		return "no name (no DNS or IP subject alternative names)"
	}
	return strings.Join(names, ", ")
}

// errClosedOnHello marks the one TLS failure that has two causes: a
// plaintext server closing on the ClientHello, and a server that is
// exiting (its listener closed under the connection). WaitReady names it a
// bad probe only once it repeats while the instance lives; an exiting
// server is reported by its exit instead. It prints as nothing.
var errClosedOnHello = emptyError{}

type emptyError struct{}

func (emptyError) Error() string { return "" }

// tlsError is a TLS failure retrying does not mend: a bad probe.
type tlsError struct{ err error }

func (e *tlsError) Error() string   { return e.err.Error() }
func (e *tlsError) Unwrap() []error { return []error{ErrBadProbe, e.err} }

func badTLS(option, format string, args ...any) error {
	return &OptionError{Option: option, Err: &tlsError{fmt.Errorf(format, args...)}}
}

// grpcCreds are the transport credentials of one gRPC attempt: grpc-go's
// TLS credentials, run on a connection this package times and watches.
type grpcCreds struct {
	credentials.TransportCredentials
	at *attemptTLS
	// ownAuthority: the channel has an :authority of its own (a Knative
	// Service's host), which need not be serverName, the name sent and
	// verified (--tls-server-name). grpc-go refuses a channel whose
	// credentials name a server other than its authority, and its TLS
	// credentials send and verify the authority: Info names no server
	// and the handshake is given serverName.
	ownAuthority bool
	serverName   string
}

func (t *TLS) grpcCredentials(name string, ownAuthority bool, at *attemptTLS) credentials.TransportCredentials {
	cfg := t.config(name, at)
	return &grpcCreds{TransportCredentials: credentials.NewTLS(cfg), at: at, ownAuthority: ownAuthority, serverName: cfg.ServerName}
}

// Info is the TLS credentials' own, without the server name when the
// channel sets its :authority.
func (g *grpcCreds) Info() credentials.ProtocolInfo {
	i := g.TransportCredentials.Info()
	if g.ownAuthority {
		i.ServerName = ""
	}
	return i
}

func (g *grpcCreds) ClientHandshake(ctx context.Context, authority string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	w := &wireConn{Conn: raw, at: g.at}
	if g.ownAuthority && g.serverName != "" {
		authority = g.serverName // the name sent and verified, not the :authority
	}
	conn, info, err := g.TransportCredentials.ClientHandshake(ctx, authority, w)
	done := time.Now()
	g.at.mu.Lock()
	defer g.at.mu.Unlock()
	if err != nil {
		if g.at.hsErr == nil && g.at.hs == nil {
			g.at.hsErr = err
		}
		return nil, nil, err
	}
	if g.at.hs == nil {
		hs := &Handshake{Start: w.wrote, Done: done}
		if ti, ok := info.(credentials.TLSInfo); ok {
			hs.State = ti.State
		}
		g.at.hs = hs
	}
	return &afterConn{Conn: conn, at: g.at}, info, nil
}

func (g *grpcCreds) Clone() credentials.TransportCredentials {
	return &grpcCreds{TransportCredentials: g.TransportCredentials.Clone(), at: g.at, ownAuthority: g.ownAuthority, serverName: g.serverName}
}

// grpcTransport is one gRPC attempt's dial options, its :authority
// ("" = the target's) and its credentials, and, over TLS, what watches
// its handshake (nil over plaintext). Over TLS the name sent and verified
// is the TLS options' server name, else name, else the :authority.
func grpcTransport(tl *TLS, name, authority string, t Target) ([]grpc.DialOption, *attemptTLS) {
	var opts []grpc.DialOption
	if authority != "" {
		opts = append(opts, grpc.WithAuthority(authority))
	}
	if tl == nil {
		return append(opts, grpc.WithTransportCredentials(insecure.NewCredentials())), nil
	}
	at := &attemptTLS{target: t}
	return append(opts, grpc.WithTransportCredentials(tl.grpcCredentials(name, authority != "", at))), at
}

// finish runs call, gives its Answer the attempt's handshake and, when
// call failed, returns the final TLS failure behind it if there is one.
// A nil at (plaintext) runs call alone.
func (at *attemptTLS) finish(tl *TLS, call func() (Answer, error)) (Answer, error) {
	a, err := call()
	if at == nil {
		return a, err
	}
	at.mu.Lock()
	a.TLS = at.hs
	if at.hs != nil && isRemoteAlert(err) && !isRemoteAlert(at.after) {
		at.after = err
	}
	at.mu.Unlock()
	if err != nil {
		if f := at.failure(tl); f != nil {
			return a, f
		}
	}
	return a, err
}

// scheme is plain, or secure over TLS.
func scheme(plain, secure string, tl *TLS) string {
	if tl == nil {
		return plain
	}
	return secure
}

// UnverifiedNote labels a probe name when the server's certificate is not
// verified (--insecure-skip-verify).
const UnverifiedNote = " (TLS certificate NOT verified)"

func unverified(tl *TLS) string {
	if tl.Unverified() {
		return UnverifiedNote
	}
	return ""
}
