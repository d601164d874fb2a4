package prober

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Answer is what one readiness attempt got back.
type Answer struct {
	// Answered: the server replied at the application level (any gRPC
	// status other than Unavailable/DeadlineExceeded, or any HTTP status).
	Answered bool
	// Ready: the reply says the server is ready (health SERVING, HTTP 2xx).
	Ready bool
	// Detail describes a not-ready answer ("NOT_SERVING", "503").
	Detail string
	// TLS is the attempt's completed TLS handshake (nil over plaintext,
	// or when it did not complete). A Check may return it with an error:
	// the handshake completed, then the call failed.
	TLS *Handshake
	// Reached is when a probe by UDP (h3://) first heard from the
	// server: its first datagram back, the accepting phase of a server
	// that accepts no TCP connect. Zero otherwise.
	Reached time.Time
}

// Checker makes one readiness attempt over a fresh connection. An error
// wrapping ErrBadProbe is final: WaitReady returns it at once.
type Checker interface {
	Check(ctx context.Context, t Target) (Answer, error)
	// Name labels the probe kind in results ("grpc-health", "http", ...).
	Name() string
}

// WithHeader returns ctx with key: value added to what every probe made
// with it sends: gRPC probes send it as request metadata, HTTP probes as a
// request header (a W3C traceparent, say, so that the components a probe
// passes trace it). TCP probes send nothing.
func WithHeader(ctx context.Context, key, value string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, key, value)
}

// headers returns what WithHeader added to ctx.
func headers(ctx context.Context) metadata.MD {
	md, _ := metadata.FromOutgoingContext(ctx)
	return md
}

// Health checks grpc.health.v1.Health/Check on a fresh channel per call,
// fail-fast: one connection attempt, no reconnect backoff to wait out.
type Health struct {
	// Service is the health service name ("" = the whole server).
	Service string
	// Authority overrides the :authority header (Knative's Host routing).
	Authority string
	// TLS, when set, makes each attempt a new TLS client (grpcs://,
	// --tls); TLSName is the server name from a grpcs:// URL's host.
	TLS     *TLS
	TLSName string
}

var _ Checker = Health{}

// Name is "grpc-health", "grpcs-health" over TLS.
func (h Health) Name() string { return scheme("grpc", "grpcs", h.TLS) + "-health" + unverified(h.TLS) }

// Check dials a new channel, calls Check once and closes the channel.
func (h Health) Check(ctx context.Context, t Target) (Answer, error) {
	opts, at := grpcTransport(h.TLS, h.TLSName, h.Authority, t)
	cc, err := grpc.NewClient(t.GRPCTarget(), opts...)
	if err != nil {
		return Answer{}, fmt.Errorf("dial %s: %w", t, err)
	}
	defer cc.Close()
	return at.finish(h.TLS, func() (Answer, error) { return h.check(ctx, cc) })
}

func (h Health) check(ctx context.Context, cc *grpc.ClientConn) (Answer, error) {
	resp, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{Service: h.Service})
	if err != nil {
		switch status.Code(err) {
		case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled:
			return Answer{}, err
		}
		// Any other status is the server speaking: it answered, not ready.
		return Answer{Answered: true, Detail: status.Code(err).String()}, nil
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return Answer{Answered: true, Detail: resp.GetStatus().String()}, nil
	}
	return Answer{Answered: true, Ready: true}, nil
}

// Started is what WaitReady needs of a server that was started (a
// launch.Instance is one): when it started, and whether and why it exited.
type Started interface {
	// T0 is when the launch began; every phase is measured from it.
	T0() time.Time
	// Done is closed when the server has exited.
	Done() <-chan struct{}
	// Err says why it exited; nil before Done.
	Err() error
}

// WaitOptions tune WaitReady.
type WaitOptions struct {
	// Timeout gives up this long after T0 (0 = 30 s).
	Timeout time.Duration
	// Attempt bounds one readiness attempt (0 = 250 ms).
	Attempt time.Duration
	// Gap is the pause after a failed attempt, so the prober does not steal
	// the CPU the server needs to start (0 = 200 µs).
	Gap time.Duration
}

func (o WaitOptions) withDefaults() WaitOptions {
	if o.Timeout == 0 {
		o.Timeout = 30 * time.Second
	}
	if o.Attempt == 0 {
		o.Attempt = 250 * time.Millisecond
	}
	if o.Gap == 0 {
		o.Gap = 200 * time.Microsecond
	}
	return o
}

// Readiness is how an instance became ready, from its T0.
type Readiness struct {
	Phases   []Phase // accepting, tls_handshake, first_answer, first_rpc (launcher phases not included)
	FirstRPC time.Duration
	// ReadyAttempt is when the successful attempt's RPC started, from T0:
	// the server was ready by then, and that one RPC took FirstRPC −
	// ReadyAttempt.
	ReadyAttempt time.Duration
	Attempts     int    // readiness attempts made (connects and RPCs)
	LastNote     string // the last not-ready detail seen
	// TLS is the ready attempt's TLS handshake (nil over plaintext).
	TLS *Handshake
}

// ErrNotReady is returned when a server does not become ready in time.
var ErrNotReady = errors.New("server not ready")

// WaitReady probes inst at t until c says it is ready, inst exits, the
// timeout passes, or an attempt fails for good (an error wrapping
// ErrBadProbe: a TLS certificate that does not verify, say). Each attempt
// first checks with a bare connect() that something accepts (cheap, and it
// times the accepting phase), then makes the checker's call over a fresh
// connection. Over TLS the first completed handshake is the tls_handshake
// phase. A probe by UDP (h3://) makes no connect: its accepting phase is
// the server's first datagram back, its tls_handshake the QUIC handshake;
// a UDP port that still refuses (ICMP port unreachable) udpGrace after the
// server accepts TCP at t is a bad probe, said rather than waited out.
func WaitReady(ctx context.Context, inst Started, t Target, c Checker, o WaitOptions) (Readiness, error) {
	o = o.withDefaults()
	var r Readiness
	t0 := inst.T0()
	deadline := t0.Add(o.Timeout)
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	accepting, answered, handshook := false, false, false
	closes := 0 // attempts closed on the TLS ClientHello (errClosedOnHello)
	var lastErr error
	cl, udp := c.(connectless)
	udp = udp && cl.udp()
	var tcpUp time.Time // a UDP probe's port refused, and t accepted TCP then
	for {
		if err := ctx.Err(); err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				return r, fmt.Errorf("%w within %v at %s (last: %s)", ErrNotReady, o.Timeout, t, lastNote(r, lastErr))
			}
			return r, err
		}
		select {
		case <-inst.Done():
			return r, inst.Err()
		default:
		}
		r.Attempts++
		if !accepting && !udp {
			if err := connectOnce(ctx, t, o.Attempt); err != nil {
				lastErr = err
				pause(ctx, o.Gap)
				continue
			}
			accepting = true
			r.Phases = append(r.Phases, Phase{Name: PhaseAccepting, Ms: ms(time.Since(t0))})
		}
		began := time.Since(t0)
		actx, acancel := context.WithTimeout(ctx, o.Attempt)
		a, err := c.Check(actx, t)
		acancel()
		now := time.Since(t0)
		if udp && !accepting && !a.Reached.IsZero() {
			accepting = true
			r.Phases = append(r.Phases, Phase{Name: PhaseAccepting, Ms: ms(a.Reached.Sub(t0))})
		}
		if a.TLS != nil && !handshook {
			handshook = true
			r.Phases = append(r.Phases, Phase{Name: PhaseTLSHandshake, Ms: ms(a.TLS.Done.Sub(t0))})
		}
		if errors.Is(err, ErrBadProbe) {
			if errors.Is(err, errClosedOnHello) && closes < closesToBlame {
				// Perhaps a plaintext server, perhaps one exiting: ask
				// again; an exit is seen at the top of the loop.
				closes++
				lastErr = err
				pause(ctx, o.Gap)
				continue
			}
			return r, err
		}
		if errors.Is(err, ErrNoUDPListener) && t.Network == "tcp" {
			if tcpUp.IsZero() && connectOnce(ctx, t, o.Attempt) == nil {
				tcpUp = time.Now()
			}
			if !tcpUp.IsZero() && time.Since(tcpUp) >= udpGrace {
				return r, &OptionError{Option: "probe", Err: &tlsError{fmt.Errorf("%w, while the server has accepted TCP at %s for %v: does it serve HTTP/3 on that UDP port?", err, t, udpGrace)}}
			}
		}
		if err != nil {
			lastErr = err
			pause(ctx, o.Gap)
			continue
		}
		if a.Answered && !answered {
			answered = true
			r.Phases = append(r.Phases, Phase{Name: PhaseFirstReply, Ms: ms(now)})
		}
		if a.Ready {
			r.FirstRPC, r.ReadyAttempt, r.TLS = now, began, a.TLS
			r.Phases = append(r.Phases, Phase{Name: PhaseFirstRPC, Ms: ms(now)})
			return r, nil
		}
		r.LastNote = a.Detail
		pause(ctx, o.Gap)
	}
}

// udpGrace is how long a UDP probe's port may refuse after the server
// accepts TCP at its address before WaitReady blames the probe: a server
// binds its sockets one after the other as it starts, not at once.
const udpGrace = time.Second

// closesToBlame is how many attempts closed on the TLS ClientHello, while
// the instance lives, make it a plaintext server: a server that is exiting
// closes one, then refuses connections until its exit is seen.
const closesToBlame = 3

func lastNote(r Readiness, err error) string {
	if r.LastNote != "" {
		return "answered " + r.LastNote
	}
	if err != nil {
		return err.Error()
	}
	return "no attempt finished"
}

func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

func connectOnce(ctx context.Context, t Target, timeout time.Duration) error {
	d := net.Dialer{Timeout: timeout}
	c, err := d.DialContext(ctx, t.Network, t.Address)
	if err != nil {
		return err
	}
	return c.Close()
}

// ErrInUse is returned when something already answers at a target before a
// server is started there: a stale server would produce a false reading.
var ErrInUse = errors.New("address in use")

// EnsureFree returns ErrInUse when anything accepts a connection at t.
func EnsureFree(ctx context.Context, t Target) error {
	err := connectOnce(ctx, t, time.Second)
	if err == nil {
		return fmt.Errorf("%w: something already answers at %s; stop it or choose another address", ErrInUse, t)
	}
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT) {
		return nil
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("%w: %s does not refuse connections (timed out): %v", ErrInUse, t, err)
	}
	return nil
}

// WaitFree waits until nothing accepts at t any more (after a Stop), up to
// timeout.
func WaitFree(ctx context.Context, t Target, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if EnsureFree(ctx, t) == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %s still answers %v after the server stopped", ErrInUse, t, timeout)
		}
		pause(ctx, 5*time.Millisecond)
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
