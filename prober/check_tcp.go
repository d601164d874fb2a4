package prober

import (
	"context"
	"time"
)

// TCP counts a server ready as soon as a connect() succeeds. The kernel
// completes handshakes into the listen backlog before the server serves
// anything, so this is a lower bound on the cold start, never readiness;
// results must say so (see IsLowerBound).
type TCP struct{}

var _ Checker = TCP{}

// TCPName is the TCP probe's Name, labelled as a lower bound.
const TCPName = "tcp-connect (lower bound, not readiness)"

func (TCP) Name() string { return TCPName }

// LowerBound marks the probe's figures as lower bounds.
func (TCP) LowerBound() bool { return true }

// Check opens and closes one connection to t.
func (TCP) Check(ctx context.Context, t Target) (Answer, error) {
	timeout := time.Second
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	if err := connectOnce(ctx, t, timeout); err != nil {
		return Answer{}, err
	}
	return Answer{Answered: true, Ready: true, Detail: "connect only"}, nil
}

// IsLowerBound reports whether c's readiness is only a lower bound on the
// real one (the TCP connect probe), so a summary can label its figures
// ("first_rpc_ms" is then time to accept, not to serve).
func IsLowerBound(c Checker) bool {
	lb, ok := c.(interface{ LowerBound() bool })
	return ok && lb.LowerBound()
}
