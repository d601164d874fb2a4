package campaign

import (
	"context"
	"fmt"
	"io"

	"github.com/coldstart-go/coldstart/budget"
	"github.com/coldstart-go/coldstart/internal/runas"
	"github.com/coldstart-go/coldstart/launch"
	"github.com/coldstart-go/coldstart/prober"
	"github.com/coldstart-go/coldstart/record"
)

// The start arms (record.PreboundArm, record.SnapshotArm): a built binary
// started another way, rather than another build.
const (
	PreboundArm = record.PreboundArm
	SnapshotArm = record.SnapshotArm
)

// StartArms lists the start arms.
var StartArms = []string{PreboundArm, SnapshotArm}

// SplitStartArms separates the start arms from the build arms in a list
// and adds base to the builds when a start arm needs it and it is not
// there; hideBase says it was added only for them (not to be measured).
func SplitStartArms(arms []string, base string) (build, start []string, hideBase bool) {
	for _, a := range arms {
		if a == PreboundArm || a == SnapshotArm {
			start = append(start, a)
			continue
		}
		build = append(build, a)
	}
	if len(start) > 0 && !contains(build, base) {
		build, hideBase = append(build, base), true
	}
	return build, start, hideBase
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// StartConfig says how to make the start arms from a built arm.
type StartConfig struct {
	// Base is the built arm they start ("" = "default").
	Base string
	// HideBase removes the base arm from the measured arms (it was built
	// only for the start arms).
	HideBase bool
	// Snapshot checkpoints and restores (nil = criu from PATH, checkpoints
	// under the temp dir).
	Snapshot *launch.Snapshot
	// Transport is where the servers listen; the snapshot arm needs tcp.
	Transport Transport
	// Checker is the readiness probe (it names LISTEN_FDNAMES: "http" for
	// an HTTP probe, else "grpc").
	Checker prober.Checker
	Log     io.Writer
	// Record gets the snapshot arm's checkpoint (kind "checkpoint").
	Record func(kind string, v any) error
}

// AddStartArms adds the start arms named in start to b, made from b's arm
// named c.Base. An arm that cannot be made (criu missing, a server criu
// cannot dump) goes to b.Failed with the reason; the others are measured.
func AddStartArms(ctx context.Context, b *Built, start []string, c StartConfig) error {
	if len(start) == 0 {
		return nil
	}
	if c.Base == "" {
		c.Base = "default"
	}
	var base *Arm
	for i := range b.Arms {
		if b.Arms[i].Name == c.Base {
			base = &b.Arms[i]
		}
	}
	if base == nil {
		for _, s := range start {
			b.Failed = append(b.Failed, fmt.Errorf("%s arm: its base arm %s did not build", s, c.Base))
		}
		return nil
	}
	baseArm := *base
	if c.HideBase {
		var keep []Arm
		for _, a := range b.Arms {
			if a.Name != c.Base {
				keep = append(keep, a)
			}
		}
		b.Arms = keep
	}
	// The prebound arm runs its server as the base arm's user (--run-as).
	// The snapshot arm's dumped server stays coldstart's user: criu 4.2.1
	// cannot dump a server running as another uid here ("Can't retrieve
	// FD from socket" from its parasite).
	var stage *runas.Stage
	if u, ok := baseArm.Launcher.(launch.AsUser); ok {
		stage = u.Stage
	}
	for _, s := range start {
		a := baseArm
		a.Name = s
		switch s {
		case PreboundArm:
			name := "grpc"
			if _, ok := c.Checker.(*prober.HTTP); ok {
				name = "http"
			}
			a.Launcher = launch.Prebound{Name: name, Stage: stage}
		case SnapshotArm:
			ck, err := c.checkpoint(ctx, baseArm)
			if err != nil {
				b.Failed = append(b.Failed, fmt.Errorf("%s arm: %w", s, err))
				continue
			}
			b.closers = append(b.closers, ck.Close)
			a.Launcher, a.Target = ck, ck.Target
			if c.Record != nil {
				rec := record.Checkpoint{Arm: s, Base: c.Base, CRIUVersion: c.Snapshot.Version(ctx), Bytes: ck.Bytes,
					DumpMs: ck.DumpMs, Warmup: ck.Warmup, Env: ck.Env, Stats: ck.Stats, Target: ck.Target.String(),
					KdatCache: launch.KdatCacheKept()}
				if err := c.Record("checkpoint", rec); err != nil {
					return err
				}
			}
		default:
			return fmt.Errorf("unknown start arm %q (known: prebound, snapshot)", s)
		}
		b.Arms = append(b.Arms, a)
	}
	return nil
}

// checkpoint starts base once at a free address, warms it and dumps it.
func (c *StartConfig) checkpoint(ctx context.Context, base Arm) (*launch.Checkpoint, error) {
	if c.Transport == Unix {
		return nil, fmt.Errorf("a restored server listens where the dumped one did: use --transport tcp")
	}
	if c.Snapshot == nil {
		c.Snapshot = &launch.Snapshot{}
	}
	if err := c.Snapshot.Check(ctx); err != nil {
		return nil, err
	}
	if c.Snapshot.Checker == nil {
		c.Snapshot.Checker = c.Checker
	}
	t, cleanup, err := newTarget(TCP, prober.Target{}, c.Checker)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	if err := prober.EnsureFree(ctx, t); err != nil {
		return nil, err
	}
	var args []string
	if base.Args != nil {
		if args, err = base.Args(t); err != nil {
			return nil, err
		}
	}
	env := base.Env
	if base.EnvFor != nil {
		env = append(append([]string(nil), env...), base.EnvFor(t)...)
	}
	return c.Snapshot.Checkpoint(ctx, launch.Spec{
		Arm: SnapshotArm, Path: base.Path, Args: args, Env: env, Dir: base.Dir,
		Target: t, ID: budget.NewID(), Log: c.Log,
	})
}
