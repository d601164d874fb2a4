package leangrpc

import (
	"context"
	"fmt"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// TestHeaderBlocksIndexed: request header blocks go through one HPACK
// encoder per connection, in wire order, so a decoder that sees the
// connection's blocks in turn decodes every call right, while two methods
// and a stream interleave; from a method's second call on (with nothing
// inserted since) its block is seven one-byte indexes, sent again without
// encoding. A server whose SETTINGS allow no decoder table gets no
// insertion and still every header right.
func TestHeaderBlocksIndexed(t *testing.T) {
	for _, tt := range []struct {
		name  string
		table uint32 // the server's SETTINGS_HEADER_TABLE_SIZE (4096: not sent)
	}{{"table 4096", 4096}, {"table 0", 0}} {
		t.Run(tt.name, func(t *testing.T) {
			addr, accept := startH2(t)
			order := []string{"/p.S/A", "/p.S/A", "/p.S/B", "/p.S/A", "stream /p.S/C", "/p.S/B", "/p.S/A", "/p.S/A"}
			errc := make(chan error, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				c, err := Dial(ctx, "tcp", addr, addr)
				if err != nil {
					errc <- err
					return
				}
				defer c.Close()
				calls := map[string]*Unary{}
				for _, m := range order {
					if m == "stream /p.S/C" {
						st, err := c.NewStream(ctx, "/p.S/C")
						if err == nil {
							err = st.CloseSend()
						}
						if err != nil {
							errc <- fmt.Errorf("stream: %w", err)
							return
						}
						continue
					}
					if calls[m] == nil {
						calls[m] = c.NewUnary(m, []byte("q"))
					}
					if _, err := calls[m].Call(ctx); err != nil {
						errc <- fmt.Errorf("call %s: %w", m, err)
						return
					}
				}
				errc <- nil
			}()
			s := accept()
			s.next(http2.FrameSettings)
			if tt.table != 4096 {
				s.fr.WriteSettings(http2.Setting{ID: http2.SettingHeaderTableSize, Val: tt.table})
			} else {
				s.fr.WriteSettings()
			}
			var got []hpack.HeaderField
			dec := hpack.NewDecoder(4096, func(f hpack.HeaderField) { got = append(got, f) })
			dec.SetAllowedMaxDynamicTableSize(tt.table)
			var sizes []int
			for i, m := range order {
				hf := s.next(http2.FrameHeaders).(*http2.HeadersFrame)
				got = got[:0]
				if _, err := dec.Write(hf.HeaderBlockFragment()); err != nil {
					t.Fatalf("block %d (%s): decode: %v", i, m, err)
				}
				sizes = append(sizes, len(hf.HeaderBlockFragment()))
				path := m
				if m == "stream /p.S/C" {
					path = "/p.S/C"
				}
				want := map[string]string{":method": "POST", ":scheme": "http", ":path": path, ":authority": addr,
					"content-type": "application/grpc", "te": "trailers"}
				for _, f := range got {
					if w, ok := want[f.Name]; ok {
						if w != f.Value {
							t.Errorf("block %d (%s): %s = %q, want %q", i, m, f.Name, f.Value, w)
						}
						delete(want, f.Name)
					}
				}
				if len(want) > 0 {
					t.Errorf("block %d (%s): missing %v", i, m, want)
				}
				// Answer: the request's DATA, then a reply and OK status.
				for {
					if df := s.next(http2.FrameData).(*http2.DataFrame); df.StreamEnded() {
						break
					}
				}
				s.headers(hf.StreamID, false, ":status", "200", "content-type", "application/grpc")
				s.fr.WriteData(hf.StreamID, false, Encode([]byte("r")))
				s.headers(hf.StreamID, true, "grpc-status", "0")
			}
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
			switch tt.table {
			case 4096:
				// A's 2nd call, A after B's first, B's 2nd, A's last two:
				// seven indexes each.
				for _, i := range []int{1, 3, 5, 6, 7} {
					if sizes[i] != 7 {
						t.Errorf("block %d (%s): %d bytes, want 7 (all indexed); sizes %v", i, order[i], sizes[i], sizes)
					}
				}
				if sizes[0] <= 7 || sizes[2] <= 7 {
					t.Errorf("first blocks of A and B: %d and %d bytes, want literals; sizes %v", sizes[0], sizes[2], sizes)
				}
			case 0:
				if sizes[1] > sizes[0] || sizes[1] <= 7 {
					t.Errorf("with no table: blocks %v, want literals every time (the first may carry the size update)", sizes)
				}
			}
		})
	}
}
