package echo

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/coldstart-go/coldstart/internal/testservers/testcerts"
)

// TestServeTLS serves gRPC and HTTP over TLS, with and without client
// certificates required, and checks what a client with and without one
// gets.
func TestServeTLS(t *testing.T) {
	dir := t.TempDir()
	ca, certFile, keyFile := serverCert(t, dir)
	cliPair, err := ca.Leaf(testcerts.LeafOptions{Client: true, Names: []string{"client"}})
	if err != nil {
		t.Fatal(err)
	}
	caFile := dir + "/ca.crt"
	if err := os.WriteFile(caFile, ca.PEM, 0o644); err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.PEM)
	cliCert, err := tls.X509KeyPair(cliPair.CertPEM, cliPair.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	for _, mtls := range []bool{false, true} {
		lis, httpAddr := listeners(t)
		o := Options{Listener: lis, HTTPAddr: httpAddr, TLSCert: certFile, TLSKey: keyFile}
		if mtls {
			o.ClientCA = caFile
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- Serve(ctx, o) }()
		check := func(withCert bool) error {
			c := &tls.Config{RootCAs: roots}
			if withCert {
				c.Certificates = []tls.Certificate{cliCert}
			}
			cc, err := grpc.NewClient("passthrough:///"+lis.Addr().String(), grpc.WithTransportCredentials(credentials.NewTLS(c)))
			if err != nil {
				return err
			}
			defer cc.Close()
			cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
			defer ccancel()
			// Without WaitForReady: a refused client fails at once.
			_, err = healthpb.NewHealthClient(cc).Check(cctx, &healthpb.HealthCheckRequest{})
			if err != nil {
				return err
			}
			hc := &http.Client{Transport: &http.Transport{TLSClientConfig: c, ForceAttemptHTTP2: true}}
			resp, err := hc.Get("https://" + httpAddr + "/healthz")
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.ProtoMajor != 2 {
				t.Errorf("HTTP over TLS: %s, want HTTP/2 by ALPN", resp.Proto)
			}
			return nil
		}
		if err := check(true); err != nil {
			t.Errorf("mTLS %v, with a client certificate: %v", mtls, err)
		}
		err = check(false)
		switch {
		case mtls && err == nil:
			t.Errorf("mTLS: a client without a certificate was served")
		case !mtls && err != nil:
			t.Errorf("TLS without a client certificate: %v", err)
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}
}

// serverCert makes a CA and a loopback server certificate it signs,
// written to dir as server.crt and server.key.
// listeners are a gRPC listener on a free local port and a free local
// address for the HTTP listener, which the server opens itself.
func listeners(t *testing.T) (net.Listener, string) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lis.Close() })
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hl.Close()
	return lis, hl.Addr().String()
}

func serverCert(t *testing.T, dir string) (ca *testcerts.CA, certFile, keyFile string) {
	t.Helper()
	ca, err := testcerts.NewCA("test CA")
	if err != nil {
		t.Fatal(err)
	}
	pair, err := ca.Leaf(testcerts.LeafOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if certFile, keyFile, err = pair.Write(dir, "server"); err != nil {
		t.Fatal(err)
	}
	return ca, certFile, keyFile
}

func TestServeTLSBadFiles(t *testing.T) {
	dir := t.TempDir()
	ca, _ := testcerts.NewCA("a")
	p1, _ := ca.Leaf(testcerts.LeafOptions{})
	p2, _ := ca.Leaf(testcerts.LeafOptions{})
	cert, _, _ := p1.Write(dir, "one")
	_, key, _ := p2.Write(dir, "two")
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	err = Serve(context.Background(), Options{Listener: lis, TLSCert: cert, TLSKey: key})
	if err == nil || !strings.Contains(err.Error(), "two.key") || !strings.Contains(err.Error(), "does not match") {
		t.Errorf("Serve with a key of another certificate: %v, want the file named and 'does not match'", err)
	}
}
