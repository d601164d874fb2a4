package pull

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/coldstart-go/coldstart/launch"
	"github.com/coldstart-go/coldstart/prober"
)

// ProcessStarter starts a server binary as a plain child process on a free
// loopback port ($PORT is set, and the argument template may use {addr},
// {port}) and times it to its first ready answer over a fresh connection,
// as coldstart run does.
type ProcessStarter struct {
	// Args is the server's argument template (nil = none: it reads $PORT).
	Args []string
	// Checker decides readiness (nil = the gRPC health check).
	Checker prober.Checker
	// Timeout gives up on a start after this long (0 = 30 s).
	Timeout time.Duration
	// Log gets each spawned command line (nil = none).
	Log io.Writer
}

var _ Starter = ProcessStarter{}

// Start launches bin, waits for it to be ready, stops it and returns spawn
// to first ready answer.
func (s ProcessStarter) Start(ctx context.Context, arm, bin string) (time.Duration, error) {
	t, err := prober.FreeTCP()
	if err != nil {
		return 0, err
	}
	args, err := prober.ExpandArgs(s.Args, prober.VarsFor(t))
	if err != nil {
		return 0, fmt.Errorf("start %s: %w", arm, err)
	}
	inst, r, err := launch.StartReady(ctx, launch.Process{}, launch.Spec{Arm: arm, Path: bin, Args: args, Target: t, Log: s.Log},
		launch.ReadyOptions{Checker: s.Checker, Wait: prober.WaitOptions{Timeout: s.Timeout}, Name: fmt.Sprintf("start %s (%s)", arm, bin)})
	if err != nil {
		return 0, err
	}
	defer inst.Stop(context.WithoutCancel(ctx))
	return r.FirstRPC, nil
}
