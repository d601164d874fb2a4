// Package echo is the bundled sample server: a gRPC Echo service (unary and
// bidirectional streaming), the standard health and reflection services, the
// same echo over HTTP/1.1 JSON, TLS and mTLS on both when asked, and an opt-in debug listener with pprof and Go
// runtime metrics for the PGO arm and for allocation per call.
package echo

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"strings"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	"github.com/coldstart-go/coldstart/internal/echo/echopb"
	"github.com/coldstart-go/coldstart/internal/rtmetrics"
)

// Options says where the sample server listens. Empty addresses are off,
// except that Addr or Unix must name the gRPC listener.
type Options struct {
	// Addr is the gRPC TCP address, host:port.
	Addr string
	// Unix is a Unix socket path for gRPC; it replaces Addr when set.
	Unix string
	// Listener is an already listening socket for gRPC (one handed over by
	// socket activation); it replaces Addr and Unix when set, and Serve
	// closes it.
	Listener net.Listener
	// HTTPAddr is the HTTP/1.1 JSON echo listener (POST /echo); "" = off.
	HTTPAddr string
	// HTTP3Addr is a UDP host:port serving the HTTP listener's handler
	// over HTTP/3 (QUIC); "" = off. It needs TLSCert and TLSKey (QUIC has
	// no clear text), and may be HTTPAddr's own host:port: a UDP port is
	// not a TCP one, and HTTPS servers serve HTTP/3 beside TCP so.
	HTTP3Addr string
	// DebugAddr serves /debug/pprof/ and /debug/runtime (Go runtime
	// metrics as JSON); "" = off.
	DebugAddr string
	// NotReadyFor keeps the health service at NOT_SERVING this long after
	// start; 0 = serving at once.
	NotReadyFor time.Duration
	// Levers are the grpc-go server settings (the zero Levers leaves every
	// one at grpc-go's default).
	Levers Levers
	// HTTPLevers are net/http's server settings for the HTTP listener
	// (the zero HTTPLevers leaves net/http's defaults).
	HTTPLevers HTTPLevers
	// TLSCert and TLSKey are PEM files: when set, the gRPC and HTTP
	// listeners serve TLS with them ("" = plaintext; the debug listener
	// stays plaintext).
	TLSCert, TLSKey string
	// ClientCA is a PEM file of the CAs client certificates must chain to:
	// when set, a client without a valid certificate is refused (mTLS).
	ClientCA string
}

// Service implements echopb.EchoServer.
type Service struct {
	echopb.UnimplementedEchoServer
}

// Echo returns the payload unchanged.
func (Service) Echo(_ context.Context, req *echopb.EchoRequest) (*echopb.EchoResponse, error) {
	return &echopb.EchoResponse{Payload: req.GetPayload()}, nil
}

// EchoStream answers each message with the same payload until the client
// closes its side.
func (Service) EchoStream(stream echopb.Echo_EchoStreamServer) error {
	for {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := stream.Send(&echopb.EchoResponse{Payload: req.GetPayload()}); err != nil {
			return err
		}
	}
}

// HTTPEcho is the REST arm: POST a JSON {"payload": base64} and get the same
// object back, so gRPC and HTTP/1.1 JSON can be compared on equal semantics.
func HTTPEcho(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST a JSON {\"payload\": \"<base64>\"}", http.StatusMethodNotAllowed)
		return
	}
	var msg struct {
		Payload []byte `json:"payload"`
	}
	if err := json.NewDecoder(r.Body).Decode(&msg); err != nil {
		http.Error(w, "decode body: "+err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(msg)
}

// Serve runs the sample server until ctx is done, then stops gracefully.
//
// Its settings and TLS files are checked before it listens, so a server
// given bad ones never accepts a connection it cannot serve.
func Serve(ctx context.Context, o Options) error {
	if err := o.Levers.Check(); err != nil {
		return err
	}
	if err := o.HTTPLevers.Check(); err != nil {
		return err
	}
	tlsConf, err := o.tlsConfig()
	if err != nil {
		return err
	}
	if o.HTTP3Addr != "" && tlsConf == nil {
		return fmt.Errorf("--http3-addr %s: HTTP/3 runs over QUIC, which is always TLS: give --tls-cert and --tls-key", o.HTTP3Addr)
	}
	lis := o.Listener
	if lis == nil {
		network, address := "tcp", o.Addr
		if o.Unix != "" {
			network, address = "unix", o.Unix
			_ = os.Remove(o.Unix) // a stale socket file from a killed run
		}
		if address == "" {
			return errors.New("no gRPC address: pass --addr, --unix or set $PORT")
		}
		if lis, err = net.Listen(network, address); err != nil {
			return fmt.Errorf("listen %s %s: %w", network, address, err)
		}
	}
	sopts := o.Levers.ServerOptions()
	if tlsConf != nil {
		sopts = append(sopts, grpc.Creds(credentials.NewTLS(tlsConf)))
	}
	srv := grpc.NewServer(sopts...)
	echopb.RegisterEchoServer(srv, Service{})
	hs := health.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	reflection.Register(srv)
	if o.NotReadyFor > 0 {
		hs.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
		time.AfterFunc(o.NotReadyFor, func() { hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING) })
	}

	errc := make(chan error, 4)
	var closers []func()
	httpMux := http.NewServeMux()
	httpMux.HandleFunc("/echo", HTTPEcho)
	httpMux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	stopAll := func() {
		srv.Stop()
		for _, c := range closers {
			c()
		}
	}
	if o.HTTPAddr != "" {
		hsrv, err := listenHTTP(o.HTTPAddr, httpMux, tlsConf, o.HTTPLevers, errc)
		if err != nil {
			stopAll()
			return err
		}
		closers = append(closers, func() { hsrv.Close() })
	}
	if o.HTTP3Addr != "" {
		h3, err := listenHTTP3(o.HTTP3Addr, httpMux, tlsConf, errc)
		if err != nil {
			stopAll()
			return err
		}
		closers = append(closers, func() { h3.Close() })
	}
	if o.DebugAddr != "" {
		mux := http.NewServeMux()
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.Handle(rtmetrics.Path, rtmetrics.Handler())
		dsrv, err := listenHTTP(o.DebugAddr, mux, nil, HTTPLevers{}, errc)
		if err != nil {
			stopAll()
			return err
		}
		closers = append(closers, func() { dsrv.Close() })
	}
	go func() { errc <- srv.Serve(lis) }()

	select {
	case <-ctx.Done():
	case err := <-errc:
		stopAll()
		return err
	}
	for _, c := range closers {
		c()
	}
	stopped := make(chan struct{})
	go func() { srv.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(2 * time.Second):
		srv.Stop()
	}
	return nil
}

// tlsConfig loads the server's TLS files (nil without TLSCert).
func (o Options) tlsConfig() (*tls.Config, error) {
	if o.TLSCert == "" && o.TLSKey == "" {
		if o.ClientCA != "" {
			return nil, fmt.Errorf("--client-ca %s: needs --tls-cert and --tls-key", o.ClientCA)
		}
		return nil, nil
	}
	if o.TLSCert == "" || o.TLSKey == "" {
		return nil, errors.New("--tls-cert and --tls-key: give both")
	}
	pair, err := tls.LoadX509KeyPair(o.TLSCert, o.TLSKey)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert %s, --tls-key %s: %w", o.TLSCert, o.TLSKey, err)
	}
	c := &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	if o.ClientCA != "" {
		b, err := os.ReadFile(o.ClientCA)
		if err != nil {
			return nil, fmt.Errorf("--client-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("--client-ca %s: no PEM certificate in it", o.ClientCA)
		}
		c.ClientCAs, c.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return c, nil
}

func listenHTTP(addr string, h http.Handler, tlsConf *tls.Config, levers HTTPLevers, errc chan<- error) (*http.Server, error) {
	network := "tcp"
	if strings.HasPrefix(addr, "/") {
		network = "unix"
		_ = os.Remove(addr)
	}
	lis, err := net.Listen(network, addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", addr, err)
	}
	s := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	levers.apply(s)
	if tlsConf != nil {
		c := tlsConf.Clone()
		c.NextProtos = []string{"h2", "http/1.1"}
		lis = tls.NewListener(lis, c)
	}
	go func() {
		if err := s.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errc <- err
		}
	}()
	return s, nil
}

// listenHTTP3 serves h over HTTP/3 on the UDP address addr with tlsConf
// (ALPN h3). The socket is bound here, so that a port in use is Serve's
// error rather than a server that never answers.
func listenHTTP3(addr string, h http.Handler, tlsConf *tls.Config, errc chan<- error) (*http3.Server, error) {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("--http3-addr %s: %w", addr, err)
	}
	pc, err := net.ListenUDP("udp", ua)
	if err != nil {
		return nil, fmt.Errorf("listen udp %s: %w", addr, err)
	}
	// As many streams in flight per connection as net/http's HTTP/2
	// server admits (250; quic-go's own default is 100), so that h2 and h3
	// fan-outs on this handler queue alike.
	s := &http3.Server{Handler: h, TLSConfig: http3.ConfigureTLSConfig(tlsConf.Clone()), QUICConfig: &quic.Config{MaxIncomingStreams: 250}}
	go func() {
		if err := s.Serve(pc); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
			errc <- fmt.Errorf("serve HTTP/3 on %s: %w", addr, err)
		}
		pc.Close()
	}()
	return s, nil
}
