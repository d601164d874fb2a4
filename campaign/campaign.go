// Package campaign runs cold-start and density campaigns: every arm under
// every budget, interleaved run by run so drift on a noisy machine spreads
// over all arms, with one raw row per probe and a summary per arm and budget.
package campaign

import (
	"context"
	"fmt"
	"io"

	"github.com/coldstart-go/coldstart/budget"
	"github.com/coldstart-go/coldstart/launch"
	"github.com/coldstart-go/coldstart/prober"
	results "github.com/coldstart-go/coldstart/record"
)

// Arm is one build of the server as the campaign starts it.
type Arm struct {
	// Name is the arm's name ("default", "upx", ...).
	Name string
	// Launcher starts it (nil = a plain process).
	Launcher launch.Launcher
	// Path is the binary (or, for containers, what the launcher needs).
	Path string
	// Args returns the server's arguments for a target; nil = none (the
	// server reads $PORT).
	Args func(t prober.Target) ([]string, error)
	// ArgTemplate is what Args expands: the arguments with their
	// placeholders, for a caller that picks addresses itself (steady).
	ArgTemplate []string
	// Env is extra environment for the server; EnvFor, when set, adds
	// more that depends on the target (expanded placeholders).
	Env    []string
	EnvFor func(t prober.Target) []string
	// Dir is the server's working directory ("" = ours).
	Dir string
	// SizeBytes is the artifact's size, reported beside its figures.
	SizeBytes int64
	// Target is where every instance of this arm listens (a restored
	// checkpoint listens where the dumped server did); zero = a fresh
	// address per instance.
	Target prober.Target
	// Stderr, when set, also gets the server's stderr as it is written
	// (coldstart explain reads the init trace from it); Started, when set,
	// is told of each instance as soon as it is launched.
	Stderr  io.Writer
	Started func(launch.Instance)
	// Prepare, when set, runs before each start of the arm, told where
	// the instance is about to listen (the --prepare hook); the start is
	// timed from after it. Its error ends that start.
	Prepare func(ctx context.Context, t prober.Target) error
	// Variant, on a variant (AddVariants), is the arm it starts and what
	// it adds; its rows carry it.
	Variant results.Variant
}

// prepare runs a.Prepare before a start at t.
func (a Arm) prepare(ctx context.Context, t prober.Target) error {
	if a.Prepare == nil {
		return nil
	}
	if err := a.Prepare(ctx, t); err != nil {
		return fmt.Errorf("%s: %w", a.Name, err)
	}
	return nil
}

// fixedTarget is a's own fixed address, else the campaign's.
func (a Arm) fixedTarget(campaign prober.Target) prober.Target {
	if a.Target.Address != "" {
		return a.Target
	}
	return campaign
}

func (a Arm) launcher() launch.Launcher {
	if a.Launcher != nil {
		return a.Launcher
	}
	return launch.Process{}
}

// Instance starts one instance of the arm listening at t, within b.
func (a Arm) Instance(ctx context.Context, t prober.Target, b budget.Budget, log io.Writer) (launch.Instance, error) {
	s, err := a.spec(t, b, nil, log)
	if err != nil {
		return nil, err
	}
	return a.launcher().Launch(ctx, s)
}

// startReady starts one instance of the arm listening at t, within b (and
// g, when not nil), and waits until it is ready (launch.StartReady).
func (a Arm) startReady(ctx context.Context, t prober.Target, b budget.Budget, g *budget.Group, log io.Writer, o launch.ReadyOptions) (launch.Instance, prober.Readiness, error) {
	s, err := a.spec(t, b, g, log)
	if err != nil {
		return nil, prober.Readiness{}, err
	}
	return launch.StartReady(ctx, a.launcher(), s, o)
}

// spec is how an instance of the arm listening at t is started.
func (a Arm) spec(t prober.Target, b budget.Budget, g *budget.Group, log io.Writer) (launch.Spec, error) {
	var args []string
	if a.Args != nil {
		var err error
		if args, err = a.Args(t); err != nil {
			return launch.Spec{}, fmt.Errorf("start %s: %w", a.Name, err)
		}
	}
	env := a.Env
	if a.EnvFor != nil {
		env = append(append([]string(nil), env...), a.EnvFor(t)...)
	}
	return launch.Spec{
		Arm: a.Name, Path: a.Path, Args: args, Env: env, Dir: a.Dir,
		Target: t, Budget: b, Group: g, ID: budget.NewID(), Log: log, Stderr: a.Stderr,
	}, nil
}

// Transport is where servers listen: "tcp" (a free loopback port per
// instance) or "unix" (a socket in a per-instance temp dir).
type Transport string

// The transports.
const (
	TCP  Transport = "tcp"
	Unix Transport = "unix"
)

// newTarget picks where one instance listens: a fixed address (--addr, or
// the one a probe URL names) when there is one, else a socket in a fresh
// temp dir for the unix transport, else a free loopback port. cleanup
// removes what it made.
func newTarget(tr Transport, fixed prober.Target, c prober.Checker) (prober.Target, func(), error) {
	if tr == Unix && fixed.Address == "" {
		if h, ok := c.(*prober.HTTP); !ok || h.Fixed.Address == "" {
			return launch.SocketTarget("cs-")
		}
	}
	t, err := prober.ChooseTarget(fixed, c, prober.Template{}, "")
	return t, func() {}, err
}
