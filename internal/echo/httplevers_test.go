package echo

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
)

// serveHTTP starts the sample with HTTP levers and returns its HTTP
// address; the server ends with the test.
func serveHTTP(t *testing.T, l HTTPLevers, tlsFiles ...string) string {
	t.Helper()
	lis, addr := listeners(t)
	o := Options{Listener: lis, HTTPAddr: addr, HTTPLevers: l}
	if len(tlsFiles) == 2 {
		o.TLSCert, o.TLSKey = tlsFiles[0], tlsFiles[1]
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, o) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("HTTP listener %s: %v", addr, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestHTTPNoKeepAlives: by default a client's second request reuses the
// connection of its first; with --http-no-keepalives the server closes
// each connection after its response, so none is reused.
func TestHTTPNoKeepAlives(t *testing.T) {
	for _, off := range []bool{false, true} {
		addr := serveHTTP(t, HTTPLevers{NoKeepAlives: off})
		client := &http.Client{Transport: &http.Transport{}}
		reused := 0
		for range 3 {
			var r bool
			trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { r = i.Reused }}
			req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "POST", "http://"+addr+"/echo", strings.NewReader(`{"payload":"aGk="}`))
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body) // read to the end: else the connection cannot be reused
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			if r {
				reused++
			}
		}
		if want := map[bool]int{false: 2, true: 0}[off]; reused != want {
			t.Errorf("no keep-alives %v: %d of 3 requests reused a connection, want %d", off, reused, want)
		}
	}
}

// TestHTTP2Levers: the HTTP/2 levers reach the server's SETTINGS frame,
// which an HTTP/2 client reads first over TLS with ALPN h2.
func TestHTTP2Levers(t *testing.T) {
	ca, cert, key := serverCert(t, t.TempDir())
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.PEM)
	settings := func(l HTTPLevers) map[http2.SettingID]uint32 {
		addr := serveHTTP(t, l, cert, key)
		c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots, ServerName: "localhost", NextProtos: []string{"h2"}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if p := c.ConnectionState().NegotiatedProtocol; p != "h2" {
			t.Fatalf("ALPN %q, want h2", p)
		}
		if _, err := c.Write([]byte(http2.ClientPreface)); err != nil {
			t.Fatal(err)
		}
		fr := http2.NewFramer(c, c)
		if err := fr.WriteSettings(); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatal(err)
		}
		sf, ok := f.(*http2.SettingsFrame)
		if !ok {
			t.Fatalf("first frame %v, want SETTINGS", f)
		}
		out := map[http2.SettingID]uint32{}
		sf.ForeachSetting(func(s http2.Setting) error { out[s.ID] = s.Val; return nil })
		return out
	}
	def := settings(HTTPLevers{})
	got := settings(HTTPLevers{HTTP2MaxConcurrentStreams: 7, HTTP2MaxReadFrameSize: 32 << 10, HTTP2MaxReceiveBufferPerStream: 128 << 10})
	if got[http2.SettingMaxConcurrentStreams] != 7 || got[http2.SettingMaxFrameSize] != 32<<10 || got[http2.SettingInitialWindowSize] != 128<<10 {
		t.Errorf("SETTINGS %v, want max streams 7, frame 32768, window 131072 (defaults: %v)", got, def)
	}
	if def[http2.SettingMaxConcurrentStreams] == 7 {
		t.Errorf("default SETTINGS %v already say 7 streams", def)
	}
}

// TestHTTPLeversCheck: a value net/http would silently ignore is refused,
// naming its flag and the range.
func TestHTTPLeversCheck(t *testing.T) {
	for _, tt := range []struct {
		l    HTTPLevers
		want string
	}{
		{HTTPLevers{HTTP2MaxReadFrameSize: 1000}, "--http2-max-read-frame-size 1000: want 16384 to 16777216"},
		{HTTPLevers{HTTP2MaxReceiveBufferPerConnection: 4 << 20}, "--http2-max-receive-buffer-per-connection 4194304: want 65536 to below 4194304"},
		{HTTPLevers{HTTP2MaxConcurrentStreams: -1}, "--http2-max-concurrent-streams -1"},
		{HTTPLevers{MaxHeaderBytes: -5}, "--http-max-header-bytes -5"},
		{HTTPLevers{IdleTimeout: -time.Second}, "--http-idle-timeout -1s"},
	} {
		err := tt.l.Check()
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: err %v, want %q", tt.l, err, tt.want)
		}
		if err := Serve(context.Background(), Options{Addr: "127.0.0.1:0", HTTPLevers: tt.l}); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Serve %+v: err %v, want %q before listening", tt.l, err, tt.want)
		}
	}
	if err := (HTTPLevers{HTTP2MaxReadFrameSize: 16 << 20, HTTP2MaxReceiveBufferPerConnection: 64 << 10, MaxHeaderBytes: 4096}).Check(); err != nil {
		t.Errorf("values in range: %v", err)
	}
}
