package echo

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/quic-go/quic-go/http3"
)

// TestServeHTTP3 serves the HTTP handler over HTTP/3 on the HTTP
// listener's own host:port (UDP beside TCP) and echoes a POST over a real
// QUIC connection.
func TestServeHTTP3(t *testing.T) {
	ca, certFile, keyFile := serverCert(t, t.TempDir())
	lis, httpAddr := listeners(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, Options{Listener: lis, HTTPAddr: httpAddr, HTTP3Addr: httpAddr, TLSCert: certFile, TLSKey: keyFile})
	}()
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.PEM)
	tr := &http3.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}
	defer tr.Close()
	resp, err := (&http.Client{Transport: tr}).Post("https://"+httpAddr+"/echo", "application/json", strings.NewReader(`{"payload":"aGk="}`))
	if err != nil {
		t.Fatalf("POST /echo over HTTP/3: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.ProtoMajor != 3 || resp.StatusCode != http.StatusOK || !bytes.Contains(b, []byte(`"payload":"aGk="`)) {
		t.Errorf("POST /echo over HTTP/3: %s %s %q, want HTTP/3.0 200 and the payload back", resp.Proto, resp.Status, b)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

func TestServeHTTP3NeedsTLS(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	err = Serve(context.Background(), Options{Listener: lis, HTTP3Addr: "127.0.0.1:0"})
	if err == nil || !strings.Contains(err.Error(), "--http3-addr 127.0.0.1:0") || !strings.Contains(err.Error(), "--tls-cert") {
		t.Errorf("Serve with HTTP/3 and no TLS: %v, want --http3-addr named and --tls-cert asked for", err)
	}
}
