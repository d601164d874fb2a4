package steady

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"testing"
)

// lateReader is a RoundTripper that answers at once and reads each
// request's body only later, as an HTTP/2 or HTTP/3 client may after the
// server has answered (net/http's contract lets RoundTrip close the body
// after it returns).
type lateReader struct{ bodies []io.ReadCloser }

func (l *lateReader) RoundTrip(r *http.Request) (*http.Response, error) {
	l.bodies = append(l.bodies, r.Body)
	return &http.Response{StatusCode: 200, Status: "200 OK", Body: io.NopCloser(bytes.NewReader(nil))}, nil
}

// TestCallsOwnTheirBodies: each call's request body is whole whenever the
// transport reads it, also after the next call has been made.
func TestCallsOwnTheirBodies(t *testing.T) {
	body := jsonBody(bytes.Repeat([]byte("x"), 4096))
	u, _ := url.Parse("http://127.0.0.1:1/echo")
	rt := &lateReader{}
	k := &h2cCaller{cc: rt, req: &http.Request{Method: http.MethodPost, URL: u, Header: http.Header{}, ContentLength: int64(len(body))}, body: body, proto: H3}
	for range 3 {
		if err := k.call(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	for i, b := range rt.bodies {
		got, err := io.ReadAll(b)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, body) {
			t.Errorf("request %d: the transport read %d bytes of its %d-byte body", i, len(got), len(body))
		}
	}
}
