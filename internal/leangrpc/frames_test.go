package leangrpc

import (
	"bytes"
	"context"
	"io"
	"net"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// h2Server is a scripted HTTP/2 server on one connection: the test reads
// and writes frames itself, to see what the client sends.
type h2Server struct {
	t   *testing.T
	c   net.Conn
	fr  *http2.Framer
	enc *hpack.Encoder
	hb  bytes.Buffer
}

func startH2(t *testing.T) (addr string, accept func() *h2Server) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lis.Close() })
	return lis.Addr().String(), func() *h2Server {
		c, err := lis.Accept()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(10 * time.Second))
		pre := make([]byte, len(http2.ClientPreface))
		if _, err := io.ReadFull(c, pre); err != nil || string(pre) != http2.ClientPreface {
			t.Fatalf("client preface %q, %v", pre, err)
		}
		s := &h2Server{t: t, c: c, fr: http2.NewFramer(c, c)}
		s.enc = hpack.NewEncoder(&s.hb)
		return s
	}
}

// next reads frames until one of type want, failing on anything the
// client must not send.
func (s *h2Server) next(want http2.FrameType) http2.Frame {
	s.t.Helper()
	for {
		f, err := s.fr.ReadFrame()
		if err != nil {
			s.t.Fatalf("read frame (waiting for %v): %v", want, err)
		}
		if f.Header().Type == want {
			return f
		}
	}
}

func (s *h2Server) headers(id uint32, end bool, kv ...string) {
	s.hb.Reset()
	for i := 0; i < len(kv); i += 2 {
		s.enc.WriteField(hpack.HeaderField{Name: kv[i], Value: kv[i+1]})
	}
	s.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: s.hb.Bytes(), EndHeaders: true, EndStream: end})
}

// TestFramesAckAndFlowControl: the client acks SETTINGS and PING (with the
// PING's data), sends no more DATA than the stream window the server's
// SETTINGS allow, resumes after WINDOW_UPDATE, and reads a response whose
// header block is split across CONTINUATION frames.
func TestFramesAckAndFlowControl(t *testing.T) {
	addr, accept := startH2(t)
	type res struct {
		msg []byte
		err error
	}
	done := make(chan res, 1)
	release := make(chan struct{})
	defer close(release)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := Dial(ctx, "tcp", addr, addr)
		if err != nil {
			done <- res{err: err}
			return
		}
		defer c.Close()
		msg, err := c.NewUnary("/p.S/M", bytes.Repeat([]byte("m"), 25)).Call(ctx)
		done <- res{append([]byte(nil), msg...), err}
		<-release
	}()
	s := accept()
	s.next(http2.FrameSettings)
	s.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 10})
	if ack := s.next(http2.FrameSettings).(*http2.SettingsFrame); !ack.IsAck() {
		t.Fatal("second SETTINGS from the client is not an ack of the server's")
	}
	hf := s.next(http2.FrameHeaders).(*http2.HeadersFrame)
	id := hf.StreamID
	var fields []hpack.HeaderField
	hpack.NewDecoder(4096, func(f hpack.HeaderField) { fields = append(fields, f) }).Write(hf.HeaderBlockFragment())
	want := map[string]string{":method": "POST", ":path": "/p.S/M", "content-type": "application/grpc", "te": "trailers", ":authority": addr}
	for _, f := range fields {
		if w, ok := want[f.Name]; ok && w != f.Value {
			t.Errorf("header %s = %q, want %q", f.Name, f.Value, w)
		}
		delete(want, f.Name)
	}
	if len(want) > 0 {
		t.Errorf("headers missing: %v", want)
	}
	// 5 + 25 bytes to send, a window of 10: 10 bytes, then nothing.
	df := s.next(http2.FrameData).(*http2.DataFrame)
	if len(df.Data()) != 10 || df.StreamEnded() {
		t.Fatalf("first DATA: %d bytes, end=%v; want 10 bytes (the window), not the end", len(df.Data()), df.StreamEnded())
	}
	got := append([]byte(nil), df.Data()...)
	s.fr.WriteWindowUpdate(id, 100)
	for {
		df := s.next(http2.FrameData).(*http2.DataFrame)
		got = append(got, df.Data()...)
		if df.StreamEnded() {
			break
		}
	}
	if !bytes.Equal(got, Encode(bytes.Repeat([]byte("m"), 25))) {
		t.Fatalf("request bytes %q", got)
	}
	// Response: headers, a message, trailers split into HEADERS + CONTINUATION.
	s.headers(id, false, ":status", "200", "content-type", "application/grpc")
	s.fr.WriteData(id, false, Encode([]byte("reply")))
	s.hb.Reset()
	s.enc.WriteField(hpack.HeaderField{Name: "grpc-status", Value: "0"})
	s.enc.WriteField(hpack.HeaderField{Name: "x-long", Value: string(bytes.Repeat([]byte("l"), 100))})
	b := s.hb.Bytes()
	s.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: b[:7], EndStream: true})
	s.fr.WriteContinuation(id, true, b[7:])
	r := <-done
	if r.err != nil || string(r.msg) != "reply" {
		t.Fatalf("Call = %q, %v; want \"reply\"", r.msg, r.err)
	}
	// Now the connection is quiet: a PING is answered with its data.
	ping := [8]byte{'c', 'o', 'l', 'd', 's', 't', 'a', 'r'}
	s.fr.WritePing(false, ping)
	pf := s.next(http2.FramePing).(*http2.PingFrame)
	if !pf.IsAck() || pf.Data != ping {
		t.Fatalf("PING answer: ack=%v data=%q, want an ack of %q", pf.IsAck(), pf.Data, ping)
	}
}

// TestFramesResetAndGoAway: RST_STREAM and GOAWAY end calls with the codes
// grpc-go gives them, and a connection the server closes fails the call.
func TestFramesResetAndGoAway(t *testing.T) {
	addr, accept := startH2(t)
	errs := make(chan error, 3)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := Dial(ctx, "tcp", addr, addr)
		if err != nil {
			errs <- err
			return
		}
		defer c.Close()
		u := c.NewUnary("/p.S/M", nil)
		for i := 0; i < 3; i++ {
			_, err := u.Call(ctx)
			errs <- err
		}
	}()
	s := accept()
	s.next(http2.FrameSettings)
	s.fr.WriteSettings()
	hf := s.next(http2.FrameHeaders)
	s.fr.WriteRSTStream(hf.Header().StreamID, http2.ErrCodeRefusedStream)
	if err := <-errs; status.Code(err) != codes.Unavailable {
		t.Errorf("call reset with REFUSED_STREAM = %v, want Unavailable", err)
	}
	hf = s.next(http2.FrameHeaders)
	s.fr.WriteGoAway(hf.Header().StreamID-2, http2.ErrCodeNo, []byte("bye"))
	if err := <-errs; status.Code(err) != codes.Unavailable {
		t.Errorf("call above GOAWAY's last stream = %v, want Unavailable", err)
	}
	if err := <-errs; status.Code(err) != codes.Unavailable {
		t.Errorf("call after GOAWAY = %v, want Unavailable", err)
	}
}
