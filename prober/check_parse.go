package prober

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ProbeKinds lists the probe forms ParseProbe reads, for help text and
// errors.
const ProbeKinds = "health, health:SERVICE, /package.Service/Method, http://HOST:PORT/path, h2c://HOST:PORT/path, tcp"

// ParseProbe turns a probe spec and its request into a Checker:
//
//	health | health:SERVICE   grpc.health.v1 Check (the default, also for "")
//	/pkg.Service/Method       a unary gRPC method (types by reflection)
//	http://HOST:PORT/path     HTTP/1.1, first 2xx (see NewHTTP for the address forms)
//	h2c://HOST:PORT/path      the same over HTTP/2 without TLS
//	tcp                       connect only: a lower bound, not readiness
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
	case strings.HasPrefix(spec, "http://"), strings.HasPrefix(spec, "h2c://"):
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
	return nil, optionf("probe", "unknown probe %q (known: %s)", spec, ProbeKinds)
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
