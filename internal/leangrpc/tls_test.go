package leangrpc

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/coldstart-go/coldstart/internal/testservers/testcerts"
)

// tlsPair is a loopback server certificate made now and a client
// configuration that trusts its CA.
func tlsPair(t *testing.T) (server tls.Certificate, client *tls.Config) {
	t.Helper()
	ca, err := testcerts.NewCA("leangrpc test CA")
	if err != nil {
		t.Fatal(err)
	}
	p, err := ca.Leaf(testcerts.LeafOptions{})
	if err != nil {
		t.Fatal(err)
	}
	server, err = tls.X509KeyPair(p.CertPEM, p.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	return server, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
}

// TestTLS: with WithTLS the connection is a TLS client that offers h2 by
// ALPN, and calls to a grpc-go TLS server succeed.
func TestTLS(t *testing.T) {
	cert, client := tlsPair(t)
	addr := serve(t, "tcp", grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}})))
	c := dial(t, "tcp", addr, WithTLS(client))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	u := c.NewUnary("/coldstart.echo.v1.Echo/Echo", pb(t, []byte("over tls")))
	for i := 0; i < 3; i++ {
		msg, err := u.Call(ctx)
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if got := payloadOf(t, msg); got != "over tls" {
			t.Fatalf("call %d: payload %q, want %q", i, got, "over tls")
		}
	}
	if client.NextProtos != nil {
		t.Errorf("WithTLS changed the caller's configuration: NextProtos %q", client.NextProtos)
	}
	// The TLS records go through the socket's raw system calls, as
	// cleartext frames do.
	if tc, ok := c.conn.(*tls.Conn); !ok || tc.NetConn() != net.Conn((*under)(c)) || c.raw == nil {
		t.Errorf("TLS connection %T over %v (raw %v), want a *tls.Conn over the raw socket", c.conn, c.conn, c.raw)
	}
}

// TestTLSNotH2: a TLS server that does not choose h2 by ALPN is Dial's
// error (a *TLSError wrapping ErrNotH2), not a hang or a frame error.
func TestTLSNotH2(t *testing.T) {
	cert, client := tlsPair(t)
	// A server with no ALPN protocols chooses none: an HTTP/1 server's
	// TLS as often configured.
	lis, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lis.Close() })
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				defer c.Close()
				c.(*tls.Conn).Handshake()
				c.Read(make([]byte, 1))
			}(c)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = Dial(ctx, "tcp", lis.Addr().String(), lis.Addr().String(), WithTLS(client))
	var te *TLSError
	if !errors.Is(err, ErrNotH2) || !errors.As(err, &te) {
		t.Fatalf("Dial = %v, want a *TLSError wrapping ErrNotH2", err)
	}
}
