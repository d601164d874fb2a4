package launch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/coldstart-go/coldstart/prober"
)

// ReadyOptions say how StartReady probes the server it starts, how it
// labels a failure, and what it tells the caller on the way. The zero
// value probes Spec.Target with the gRPC health check for up to 30 s.
type ReadyOptions struct {
	// At is where readiness is probed (zero = Spec.Target): a server may
	// answer the probe's protocol at another address than the one it is
	// launched for (steady's HTTP address).
	At prober.Target
	// Checker decides readiness, one attempt over a fresh connection each
	// (nil = prober.Health{}).
	Checker prober.Checker
	// Wait bounds and paces the wait (prober.WaitOptions): its Timeout
	// runs from the instance's T0.
	Wait prober.WaitOptions
	// Name, when set, labels every error of the wait, "Name: <error>":
	// the server's exit, not being ready in time, the context ending. ""
	// labels only a not-ready error (prober.ErrNotReady), with Spec.Arm:
	// it is the one that names no server (an exit error names the arm and
	// quotes its stderr, launch.ErrExited), and a cancellation is the
	// caller's own.
	Name string
	// Launched, when set, is called with the instance as soon as it is
	// launched, before the first probe: what a caller does between the
	// start and the wait (noting the PID, repinning its own threads,
	// preparing a probe against the live server). Its error fails the
	// start and is returned as it is.
	Launched func(Instance) error
	// Waited, when set, is called as soon as the wait ends, with the
	// instance and what the wait saw, also when it failed: a caller that
	// reads its own cost of the start (its CPU time) reads it here, before
	// a failed start's stop adds to it.
	Waited func(Instance, prober.Readiness)
	// StopWithin bounds the stop of a failed start (0 = 10 s).
	StopWithin time.Duration
}

// StartReady launches s with l and probes it until it is ready
// (prober.WaitReady): it returns the running instance and how it became
// ready. On success the caller owns the instance and stops it.
//
// Every failure after the launch (Launched's error, the server's exit,
// not ready within the timeout, ctx ending, a panic) ends in the one
// cleanup: the instance is stopped (Instance.Stop: SIGTERM, then its
// process group or container killed after the launcher's grace period, its
// cgroup and files released) on a context of its own, bounded by
// StopWithin, so that a cancelled ctx still leaves nothing running. The
// failed start still returns the instance, stopped (its Phases and Err
// stay readable and Stop again returns at once), with what the wait saw
// (Readiness.Attempts and Phases), for a caller that records a failed
// start. A launch that fails returns a nil instance and the launcher's
// error, which names the arm.
//
// It is the one way every caller starts a server and waits for it (the
// cold-start, density and burst campaigns, steady, pgocollect, pull, the
// snapshot arm's checkpoint), so that the failure paths, where a missed
// stop leaves a server running, are written once; what differs between
// the callers is in ReadyOptions.
func StartReady(ctx context.Context, l Launcher, s Spec, o ReadyOptions) (inst Instance, r prober.Readiness, err error) {
	inst, err = l.Launch(ctx, s)
	if err != nil {
		return nil, r, err
	}
	ready := false
	defer func() {
		if !ready {
			within := o.StopWithin
			if within == 0 {
				within = 10 * time.Second
			}
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), within)
			defer cancel()
			inst.Stop(sctx)
		}
	}()
	if o.Launched != nil {
		if err := o.Launched(inst); err != nil {
			return inst, r, err
		}
	}
	at := o.At
	if at.Address == "" {
		at = s.Target
	}
	c := o.Checker
	if c == nil {
		c = prober.Health{}
	}
	r, err = prober.WaitReady(ctx, inst, at, c, o.Wait)
	if o.Waited != nil {
		o.Waited(inst, r)
	}
	switch {
	case err == nil:
		ready = true
		return inst, r, nil
	case o.Name != "":
		return inst, r, fmt.Errorf("%s: %w", o.Name, err)
	case errors.Is(err, prober.ErrNotReady):
		return inst, r, fmt.Errorf("%s: %w", s.Arm, err)
	}
	return inst, r, err
}
