package leangrpc

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/coldstart-go/coldstart/internal/echo/echopb"
)

// scripted is an Echo service whose payload says what to answer:
//
//	status:CODE:MESSAGE  fail with that status before any message
//	meta                 echo, with a header and a trailer of metadata
//	big:N                answer N bytes
//	sleep:DURATION       echo after that long
//	after:N:CODE:MESSAGE (stream) answer N messages, then fail
//	anything else        echo
type scripted struct {
	echopb.UnimplementedEchoServer
}

func parseStatus(p string) (codes.Code, string) {
	code, msg, _ := strings.Cut(p, ":")
	n, _ := strconv.Atoi(code)
	return codes.Code(n), msg
}

func (scripted) answer(ctx context.Context, p []byte) (*echopb.EchoResponse, error) {
	s := string(p)
	switch {
	case strings.HasPrefix(s, "status:"):
		c, m := parseStatus(strings.TrimPrefix(s, "status:"))
		return nil, status.Error(c, m)
	case s == "meta":
		grpc.SetHeader(ctx, metadata.Pairs("x-head", "h1", "x-bin-bin", "\x00\x01binary"))
		grpc.SetTrailer(ctx, metadata.Pairs("x-trail", "t1", "x-trail", "t2"))
	case strings.HasPrefix(s, "big:"):
		n, _ := strconv.Atoi(strings.TrimPrefix(s, "big:"))
		return &echopb.EchoResponse{Payload: bytes.Repeat([]byte{'z'}, n)}, nil
	case strings.HasPrefix(s, "sleep:"):
		d, _ := time.ParseDuration(strings.TrimPrefix(s, "sleep:"))
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return &echopb.EchoResponse{Payload: p}, nil
}

func (s scripted) Echo(ctx context.Context, req *echopb.EchoRequest) (*echopb.EchoResponse, error) {
	return s.answer(ctx, req.GetPayload())
}

func (s scripted) EchoStream(stream echopb.Echo_EchoStreamServer) error {
	for {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		p := string(req.GetPayload())
		if rest, ok := strings.CutPrefix(p, "after:"); ok {
			n, _ := strconv.Atoi(strings.SplitN(rest, ":", 2)[0])
			for i := 0; i < n; i++ {
				if err := stream.Send(&echopb.EchoResponse{Payload: []byte(strconv.Itoa(i))}); err != nil {
					return err
				}
			}
			c, m := parseStatus(strings.SplitN(rest, ":", 2)[1])
			return status.Error(c, m)
		}
		resp, err := s.answer(stream.Context(), req.GetPayload())
		if err != nil {
			return err
		}
		if err := stream.Send(resp); err != nil {
			return err
		}
	}
}

// serve starts a real grpc-go server with the scripted service on network
// ("tcp" or "unix") and returns its address.
func serve(t *testing.T, network string, opt ...grpc.ServerOption) string {
	t.Helper()
	addr := "127.0.0.1:0"
	if network == "unix" {
		addr = filepath.Join(t.TempDir(), "s.sock")
	}
	lis, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	opt = append(opt, grpc.MaxRecvMsgSize(64<<20), grpc.MaxSendMsgSize(64<<20))
	srv := grpc.NewServer(opt...)
	echopb.RegisterEchoServer(srv, scripted{})
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

func grpcClient(t *testing.T, network, addr string) *grpc.ClientConn {
	t.Helper()
	target := "passthrough:///" + addr
	if network == "unix" {
		target = "unix://" + addr
	}
	cc, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20), grpc.MaxCallSendMsgSize(64<<20)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

func dial(t *testing.T, network, addr string, opt ...Option) *Conn {
	t.Helper()
	authority := addr
	if network == "unix" {
		authority = "localhost"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Dial(ctx, network, addr, authority, opt...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// result is what a client saw of one call, in a form both clients give.
type result struct {
	Code     codes.Code
	Message  string
	Payloads []string
	Header   map[string][]string
	Trailer  map[string][]string
}

func fromStatus(r *result, err error) {
	st := status.Convert(err)
	r.Code, r.Message = st.Code(), st.Message()
}

// custom keeps only the metadata the service sets (x-...), decoding
// -bin values as grpc-go does.
func custom(md metadata.MD) map[string][]string {
	out := map[string][]string{}
	for k, v := range md {
		if strings.HasPrefix(k, "x-") {
			out[k] = append(out[k], v...)
		}
	}
	return out
}

func leanMD(t *testing.T, fields []struct{ Name, Value string }) map[string][]string {
	md := metadata.MD{}
	for _, f := range fields {
		v := f.Value
		if strings.HasSuffix(f.Name, "-bin") {
			b, err := decodeBin(v)
			if err != nil {
				t.Fatalf("decode %s: %v", f.Name, err)
			}
			v = string(b)
		}
		md.Append(f.Name, v)
	}
	return custom(md)
}

func pb(t *testing.T, payload []byte) []byte {
	b, err := proto.Marshal(&echopb.EchoRequest{Payload: payload})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func payloadOf(t *testing.T, msg []byte) string {
	var r echopb.EchoResponse
	if err := proto.Unmarshal(msg, &r); err != nil {
		t.Fatalf("unmarshal response: %v", err)
	}
	return string(r.GetPayload())
}

var unaryCases = []struct {
	name    string
	payload []byte
}{
	{"echo", []byte("abcdefgh")},
	{"empty request", nil},
	{"empty response", []byte("big:0")},
	{"status", []byte("status:5:no such thing")},
	{"status percent-encoded", []byte("status:9:naïve 100% \"quoted\"\nnext line")},
	{"status internal", []byte("status:13:")},
	{"metadata", []byte("meta")},
	{"large response", []byte("big:3000000")},
	{"large request", bytes.Repeat([]byte("r"), 2_500_000)},
}

// TestUnaryMatchesGRPCGo calls the same real grpc-go server with grpc-go's
// client and the lean one, and compares status, message, header and
// trailer metadata on every case, over TCP and a Unix socket, with the
// default windows and with HTTP/2's smallest (so both sides wait on
// WINDOW_UPDATEs for the large messages).
func TestUnaryMatchesGRPCGo(t *testing.T) {
	for _, network := range []string{"tcp", "unix"} {
		for _, win := range []uint32{0, 65535} {
			t.Run(fmt.Sprintf("%s/window=%d", network, win), func(t *testing.T) {
				addr := serve(t, network)
				cc := grpcClient(t, network, addr)
				lc := dial(t, network, addr, WithWindows(win, win))
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				for _, tt := range unaryCases {
					var want result
					var hdr, trl metadata.MD
					resp, err := echopb.NewEchoClient(cc).Echo(ctx, &echopb.EchoRequest{Payload: tt.payload}, grpc.Header(&hdr), grpc.Trailer(&trl))
					fromStatus(&want, err)
					if err == nil {
						want.Payloads = []string{string(resp.GetPayload())}
					}
					want.Header, want.Trailer = custom(hdr), custom(trl)

					u := lc.NewUnary("/coldstart.echo.v1.Echo/Echo", pb(t, tt.payload))
					u.KeepMetadata(true)
					for i := 0; i < 2; i++ { // the second call reuses everything
						var got result
						msg, err := u.Call(ctx)
						fromStatus(&got, err)
						if err == nil {
							got.Payloads = []string{payloadOf(t, msg)}
						}
						got.Header, got.Trailer = leanMD(t, fields(u.Header())), leanMD(t, fields(u.Trailer()))
						if d := cmp.Diff(want, got); d != "" {
							t.Errorf("%s, call %d: lean differs from grpc-go (-grpc-go +lean):\n%s", tt.name, i, short(d))
						}
					}
				}
			})
		}
	}
}

// TestStreamMatchesGRPCGo does the same for EchoStream: ping-pong of
// several messages, then the server's end (OK after CloseSend, or an
// error status after some messages).
func TestStreamMatchesGRPCGo(t *testing.T) {
	scripts := []struct {
		name  string
		sends [][]byte
	}{
		{"ping-pong then close", [][]byte{[]byte("a"), []byte("bb"), nil, []byte("big:200000"), bytes.Repeat([]byte("q"), 300000)}},
		{"error mid-stream", [][]byte{[]byte("x"), []byte("after:3:8:too much")}},
		{"error first", [][]byte{[]byte("status:7:denied")}},
		{"metadata", [][]byte{[]byte("meta"), []byte("y")}},
	}
	addr := serve(t, "tcp")
	cc := grpcClient(t, "tcp", addr)
	lc := dial(t, "tcp", addr, WithWindows(65535, 65535))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, tt := range scripts {
		t.Run(tt.name, func(t *testing.T) {
			var want result
			gs, err := echopb.NewEchoClient(cc).EchoStream(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range tt.sends {
				if err := gs.Send(&echopb.EchoRequest{Payload: p}); err != nil {
					break
				}
				resp, err := gs.Recv()
				if err != nil {
					fromStatus(&want, err)
					break
				}
				want.Payloads = append(want.Payloads, string(resp.GetPayload()))
			}
			gs.CloseSend()
			for want.Code == codes.OK {
				resp, err := gs.Recv()
				if err == io.EOF {
					break
				}
				if err != nil {
					fromStatus(&want, err)
					break
				}
				want.Payloads = append(want.Payloads, string(resp.GetPayload()))
			}
			hdr, _ := gs.Header()
			want.Header, want.Trailer = custom(hdr), custom(gs.Trailer())

			var got result
			ls, err := lc.NewStream(ctx, "/coldstart.echo.v1.Echo/EchoStream")
			if err != nil {
				t.Fatal(err)
			}
			ls.KeepMetadata(true)
			for _, p := range tt.sends {
				if err := ls.Send(Encode(pb(t, p))); err != nil {
					break
				}
				msg, err := ls.Recv(ctx)
				if err != nil {
					fromStatus(&got, err)
					break
				}
				got.Payloads = append(got.Payloads, payloadOf(t, msg))
			}
			ls.CloseSend()
			for got.Code == codes.OK {
				msg, err := ls.Recv(ctx)
				if err == io.EOF {
					break
				}
				if err != nil {
					fromStatus(&got, err)
					break
				}
				got.Payloads = append(got.Payloads, payloadOf(t, msg))
			}
			got.Header, got.Trailer = leanMD(t, fields(ls.Header())), leanMD(t, fields(ls.Trailer()))
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("lean differs from grpc-go (-grpc-go +lean):\n%s", short(d))
			}
		})
	}
}

// TestConcurrentCalls runs many callers on one connection at once (their
// requests share writes) and checks every answer is its own.
func TestConcurrentCalls(t *testing.T) {
	addr := serve(t, "tcp")
	lc := dial(t, "tcp", addr)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	errc := make(chan error, 32)
	for w := 0; w < 32; w++ {
		go func() {
			u := lc.NewUnary("/coldstart.echo.v1.Echo/Echo", pb(t, []byte(fmt.Sprintf("worker-%d", w))))
			for i := 0; i < 300; i++ {
				msg, err := u.Call(ctx)
				if err != nil {
					errc <- err
					return
				}
				var r echopb.EchoResponse
				if err := proto.Unmarshal(msg, &r); err != nil || string(r.Payload) != fmt.Sprintf("worker-%d", w) {
					errc <- fmt.Errorf("worker %d call %d: got %q (%v)", w, i, r.Payload, err)
					return
				}
			}
			errc <- nil
		}()
	}
	for i := 0; i < 32; i++ {
		if err := <-errc; err != nil {
			t.Error(err)
		}
	}
}

// TestKeepalivePings: a grpc-go server that pings an idle client every
// second (grpc-go's shortest keepalive time) and closes the connection when
// a ping goes unanswered for 100 ms sees its keepalive PINGs acked and
// still answers after them.
func TestKeepalivePings(t *testing.T) {
	if testing.Short() {
		t.Skip("waits two keepalive intervals, 2 s")
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pc := &pingCounter{Listener: lis, acked: make(chan struct{}, 1000)}
	srv := grpc.NewServer(grpc.KeepaliveParams(keepalive.ServerParameters{Time: time.Second, Timeout: 100 * time.Millisecond}))
	echopb.RegisterEchoServer(srv, scripted{})
	go srv.Serve(pc)
	t.Cleanup(srv.Stop)
	lc := dial(t, "tcp", lis.Addr().String())
	ctx := context.Background()
	u := lc.NewUnary("/coldstart.echo.v1.Echo/Echo", pb(t, []byte("a")))
	if _, err := u.Call(ctx); err != nil {
		t.Fatal(err)
	}
	// Idle now: the server pings once a second. Each ack answers a ping
	// that would have closed the connection unanswered; the second shows
	// the connection outlived the first interval.
	const want = 2
	timeout := time.After(10 * time.Second)
	for i := 0; i < want; i++ {
		select {
		case <-pc.acked:
		case <-timeout:
			t.Fatalf("after 10 s the client had acked %d keepalive PINGs of the server's %d, want %d",
				pc.acks.Load(), pc.pings.Load(), want)
		}
	}
	if _, err := u.Call(ctx); err != nil {
		t.Fatalf("call after %d acked keepalive PINGs: %v", want, err)
	}
	if p, a := pc.pings.Load(), pc.acks.Load(); a > p {
		t.Errorf("client acked %d keepalive PINGs, server sent %d", a, p)
	}
}

// pingCounter is a listener whose connections count grpc-go's keepalive
// PINGs (8 zero bytes of data; its BDP and GOAWAY pings carry their own)
// as the server writes them and the client's acks of them as the server
// reads them, by parsing each direction's HTTP/2 frames.
type pingCounter struct {
	net.Listener
	pings, acks atomic.Int64
	acked       chan struct{} // a value per ack
}

func (pc *pingCounter) Accept() (net.Conn, error) {
	c, err := pc.Listener.Accept()
	if err != nil {
		return nil, err
	}
	fc := &framedConn{Conn: c}
	fc.in = pc.frames(true, func() {
		pc.acks.Add(1)
		select {
		case pc.acked <- struct{}{}:
		default:
		}
	})
	fc.out = pc.frames(false, func() { pc.pings.Add(1) })
	return fc, nil
}

// frames returns a pipe whose bytes are parsed as HTTP/2 frames (after the
// client's preface when fromClient), calling seen for each keepalive PING
// that is an ack (fromClient) or not (from the server).
func (pc *pingCounter) frames(fromClient bool, seen func()) *io.PipeWriter {
	pr, pw := io.Pipe()
	go func() {
		if fromClient {
			if _, err := io.ReadFull(pr, make([]byte, len(http2.ClientPreface))); err != nil {
				pr.CloseWithError(err)
				return
			}
		}
		fr := http2.NewFramer(io.Discard, pr)
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				pr.CloseWithError(err) // later writes fail rather than block
				return
			}
			if p, ok := f.(*http2.PingFrame); ok && p.IsAck() == fromClient && p.Data == [8]byte{} {
				seen()
			}
		}
	}()
	return pw
}

// framedConn copies what the server reads (in) and writes (out) to its
// frame parsers.
type framedConn struct {
	net.Conn
	in, out *io.PipeWriter
}

func (c *framedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.in.Write(p[:n])
	}
	return n, err
}

func (c *framedConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if n > 0 {
		c.out.Write(p[:n])
	}
	return n, err
}

func (c *framedConn) Close() error {
	c.in.Close()
	c.out.Close()
	return c.Conn.Close()
}

func TestCancel(t *testing.T) {
	addr := serve(t, "tcp")
	lc := dial(t, "tcp", addr)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	u := lc.NewUnary("/coldstart.echo.v1.Echo/Echo", pb(t, []byte("a")))
	if _, err := u.Call(ctx); status.Code(err) != codes.Canceled {
		t.Fatalf("Call with a cancelled context = %v, want Canceled", err)
	}
	// The connection stays usable.
	if _, err := u.Call(context.Background()); err != nil {
		t.Fatalf("call after a cancelled one: %v", err)
	}
}

func TestDialErrors(t *testing.T) {
	// A closed port: connection refused.
	lis, _ := net.Listen("tcp", "127.0.0.1:0")
	refused := lis.Addr().String()
	lis.Close()
	// An HTTP/1.1 server: no SETTINGS.
	h1, _ := net.Listen("tcp", "127.0.0.1:0")
	defer h1.Close()
	go func() {
		for {
			c, err := h1.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"))
			c.Close()
		}
	}()
	for _, tt := range []struct{ addr, want string }{
		{refused, "connection refused"},
		{h1.Addr().String(), "does it speak HTTP/2"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := Dial(ctx, "tcp", tt.addr, tt.addr)
		cancel()
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Dial(%s) = %v, want an error containing %q", tt.addr, err, tt.want)
		}
	}
}

func fields(fs []hpackField) []struct{ Name, Value string } {
	out := make([]struct{ Name, Value string }, len(fs))
	for i, f := range fs {
		out[i].Name, out[i].Value = f.Name, f.Value
	}
	return out
}

func short(d string) string {
	if len(d) > 2000 {
		return d[:2000] + "..."
	}
	return d
}

func TestMain(m *testing.M) { os.Exit(m.Run()) }

type hpackField = hpack.HeaderField

// decodeBin decodes a -bin metadata value (base64, padded or not), as
// grpc-go does.
func decodeBin(v string) ([]byte, error) {
	if len(v)%4 == 0 {
		return base64.StdEncoding.DecodeString(v)
	}
	return base64.RawStdEncoding.DecodeString(v)
}
