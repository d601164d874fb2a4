package prober

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ProbeKinds lists the probe forms ParseProbe reads, for help text and
// errors.
const ProbeKinds = "health, health:SERVICE, /package.Service/Method, grpcs://HOST[/health[:SERVICE]|/package.Service/Method], http://HOST:PORT/path, https://HOST:PORT/path, h2c://HOST:PORT/path, h3://HOST:PORT/path, tcp"

// ParseProbe turns a probe spec and its request into a Checker:
//
//	health | health:SERVICE   grpc.health.v1 Check (the default, also for "")
//	/pkg.Service/Method       a unary gRPC method (types by reflection)
//	grpcs://HOST/...          either over TLS: grpcs://HOST (health),
//	                          grpcs://HOST/health:SERVICE, grpcs://HOST/pkg.Service/Method
//	http://HOST:PORT/path     HTTP/1.1, first 2xx (see NewHTTP for the address forms)
//	https://HOST:PORT/path    HTTP/2 or HTTP/1.1 (by ALPN) over TLS
//	h2c://HOST:PORT/path      HTTP/2 without TLS
//	h3://HOST:PORT/path       HTTP/3 over QUIC (UDP, always TLS)
//	tcp                       connect only: a lower bound, not readiness
//
// grpcs://, https:// and h3:// probes speak TLS with the system's roots; WithTLS
// gives them (or a gRPC probe) other options. In grpcs:// HOST is
// loopback, empty or {addr}, without a port (the instance's target is
// dialled; a fixed address is --addr's); a name is the one verified.
//
// request is "" (none), a JSON text, or @FILE: for a gRPC method a file
// ending in .json holds JSON and any other file the protobuf binary
// encoding; for HTTP the request is POSTed as the body (JSON text as
// application/json). Files are read here, before any measurement. A gRPC
// method probe comes back unresolved: call Prepare before measuring. Its
// errors are *OptionError, naming the input at fault: "probe" (spec) or
// "request".
func ParseProbe(spec, request string) (Checker, error) {
	body, fromFile, err := loadRequest(request)
	if err != nil {
		return nil, &OptionError{Option: "request", Err: err}
	}
	noRequest := func(kind string) error {
		if request != "" {
			return optionf("request", "the %s probe takes no request (only a gRPC method or an HTTP probe does)", kind)
		}
		return nil
	}
	switch {
	case spec == "" || spec == "health" || spec == "grpc-health":
		return Health{}, noRequest("health")
	case strings.HasPrefix(spec, "health:"):
		return Health{Service: strings.TrimPrefix(spec, "health:")}, noRequest("health")
	case spec == "tcp":
		return TCP{}, noRequest("tcp")
	case strings.HasPrefix(spec, "grpcs://"):
		c, err := parseGRPCS(spec, request, body, fromFile)
		if err != nil {
			return nil, err
		}
		return c, nil
	case strings.HasPrefix(spec, "http://"), strings.HasPrefix(spec, "h2c://"), strings.HasPrefix(spec, "https://"), strings.HasPrefix(spec, "h3://"):
		h, err := NewHTTP(spec)
		if err != nil {
			return nil, &OptionError{Option: "probe", Err: err}
		}
		if request != "" {
			h.Body, h.ContentType = body, "application/octet-stream"
			if json.Valid(body) {
				h.ContentType = "application/json"
			}
		}
		return h, nil
	case strings.Contains(spec, "/") && !strings.Contains(spec, "://"):
		return parseMethod(spec, body, fromFile)
	}
	return nil, optionf("probe", "unknown probe %q (known: %s)", spec, ProbeKinds)
}

func parseMethod(spec string, body []byte, fromFile string) (*GRPCMethod, error) {
	newMethod := NewGRPCMethod
	if fromFile != "" && !strings.HasSuffix(fromFile, ".json") {
		newMethod = NewGRPCMethodBinary
	} else if len(body) > 0 && !json.Valid(body) {
		return nil, optionf("request", "not valid JSON: %.60q (use @FILE for a binary protobuf request)", body)
	}
	g, err := newMethod(spec, body)
	if err != nil {
		return nil, &OptionError{Option: "probe", Err: err}
	}
	return g, nil
}

// parseGRPCS reads grpcs://HOST[/health[:SERVICE]|/pkg.Service/Method].
func parseGRPCS(spec, request string, body []byte, fromFile string) (Checker, error) {
	rest := strings.TrimPrefix(spec, "grpcs://")
	host, path, _ := strings.Cut(rest, "/")
	if host == "{addr}" {
		host = ""
	}
	if h, p, err := net.SplitHostPort(host); err == nil {
		if p != "{port}" {
			return nil, optionf("probe", "%q: a grpcs:// probe takes no port (it dials the instance's; a fixed address is --addr's)", spec)
		}
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if host != "" {
		if err := checkLoopback(spec, host); err != nil {
			return nil, &OptionError{Option: "probe", Err: err}
		}
	}
	tl := &TLS{}
	noRequest := func() error {
		if request != "" {
			return optionf("request", "the health probe takes no request (only a gRPC method or an HTTP probe does)")
		}
		return nil
	}
	switch {
	case path == "" || path == "health":
		return Health{TLS: tl, TLSName: host}, noRequest()
	case strings.HasPrefix(path, "health:"):
		return Health{Service: strings.TrimPrefix(path, "health:"), TLS: tl, TLSName: host}, noRequest()
	}
	g, err := parseMethod("/"+path, body, fromFile)
	if err != nil {
		return nil, err
	}
	g.TLS, g.TLSName = tl, host
	return g, nil
}

// WithTLS returns c probing over TLS with tl: a gRPC probe (health, a
// method) or an https:// or h3:// one; a grpcs://, https:// or h3:// probe
// keeps the name its URL gave. Probes that cannot speak TLS (tcp, http://, h2c://) are an
// *OptionError on "probe".
func WithTLS(c Checker, tl *TLS) (Checker, error) {
	switch c := c.(type) {
	case Health:
		c.TLS = tl
		return c, nil
	case *GRPCMethod:
		c.TLS = tl
		return c, nil
	case *HTTP:
		if c.TLS == nil {
			if c.H2C {
				return nil, optionf("probe", "%s is HTTP/2 without TLS; over TLS probe https:// (HTTP/2 by ALPN)", c.Name())
			}
			return nil, optionf("probe", "%s is plaintext; over TLS probe https://", c.Name())
		}
		c.TLS = tl
		return c, nil
	}
	return nil, optionf("probe", "the %s probe makes no TLS handshake; over TLS probe health, a gRPC method or https://", c.Name())
}

// TLSOf is c's TLS configuration (nil: c probes in plaintext).
func TLSOf(c Checker) *TLS {
	switch c := c.(type) {
	case Health:
		return c.TLS
	case *GRPCMethod:
		return c.TLS
	case *HTTP:
		return c.TLS
	}
	return nil
}

func loadRequest(request string) (body []byte, file string, err error) {
	if request == "" {
		return nil, "", nil
	}
	if file, ok := strings.CutPrefix(request, "@"); ok {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, "", fmt.Errorf("read %s: %w", file, err)
		}
		return b, file, nil
	}
	return []byte(request), "", nil
}

// Preparer is a Checker that must learn something from a running server
// before it can measure (a GRPCMethod resolves its types by reflection).
type Preparer interface {
	Checker
	// Prepare makes one attempt against the server at t. Errors wrapping
	// ErrBadProbe are final; others may pass on a later attempt.
	Prepare(ctx context.Context, t Target) error
}

// Prepare readies c to measure, against a running instance at t: for a
// Preparer it retries c.Prepare (a gap between attempts) until it succeeds,
// fails for good (ErrBadProbe), inst exits (its error, with stderr), or
// o.Timeout passes from now; other checkers need nothing and return nil at
// once. Call it on the warm-up instance (run 0), before any measured round,
// so a wrong method or request is reported before measuring.
func Prepare(ctx context.Context, inst Started, t Target, c Checker, o WaitOptions) error {
	p, ok := c.(Preparer)
	if !ok {
		return nil
	}
	o = o.withDefaults()
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	// Reflection takes a few round trips: give each attempt more room than
	// a readiness check.
	attempt := max(o.Attempt, 5*time.Second)
	gap := max(o.Gap, time.Millisecond)
	for {
		select {
		case <-inst.Done():
			return fmt.Errorf("prepare %s: %w", c.Name(), inst.Err())
		default:
		}
		actx, acancel := context.WithTimeout(ctx, attempt)
		err := p.Prepare(actx, t)
		acancel()
		if err == nil || errors.Is(err, ErrBadProbe) {
			return err
		}
		switch status.Code(err) {
		case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled:
		default:
			return err // the server answered with something unexpected
		}
		if ctx.Err() != nil {
			return fmt.Errorf("prepare %s: %w within %v at %s (last: %v)", c.Name(), ErrNotReady, o.Timeout, t, err)
		}
		pause(ctx, gap)
	}
}
