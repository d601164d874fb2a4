package cliopts

import (
	"context"

	"github.com/coldstart-go/coldstart/builds"
	"github.com/coldstart-go/coldstart/campaign"
	"github.com/coldstart-go/coldstart/internal/runas"
	"github.com/coldstart-go/coldstart/launch"
)

// BuildArms is the one way both commands make their arms: it fills cfg
// from the shared flags (what to build, the binaries, server arguments and
// environment, who the servers run as, progress and -v), builds through
// campaign.BuildArms, and records each artifact ("artifact") and each arm
// that could not be made ("build_error") in r, once, naming the latter on
// the error writer. Arms that fail are left out; it fails only when none
// was made. cfg carries what only one command sets (coldstart's --dir,
// transport, images, start arms, and its build arms when --arms also named
// start arms: nil = --arms). Close the arms also on error.
//
// Before building it runs --setup (a pgo profile's load and a snapshot
// start servers already), and the Built it returns runs --prepare before
// each start and --cleanup on Close.
func (c *Common) BuildArms(ctx context.Context, r *Results, cfg campaign.ArmsConfig) (campaign.Built, error) {
	// The profile's load as given, {tmpdir} unfilled: a new campaign
	// directory alone does not collect a new profile.
	profileLoad := c.pgoConfig(nil).Load()
	hc, err := c.beginHooks(ctx, r)
	if err != nil {
		return campaign.Built{}, err
	}
	if cfg.Arms == nil {
		cfg.Arms = c.Arms.Names
	}
	cfg.Binaries = c.Bin.Named
	cfg.Source = builds.Source{Pkg: c.Pkg, Dir: c.ModuleDir, Bin: c.Bin.Path}
	if len(c.ServerArgs) > 0 {
		cfg.Args = c.ServerArgs
	}
	cfg.Env = c.Env
	cfg.Variants = c.variants
	stage := runas.NewStage(c.User) // closed by Built.Close
	cfg.RunAs = stage
	b := &cfg.Build
	b.UPXLevel, b.PGOProfile, b.PGODuration, b.Instrument = c.UPXLevel, c.PGOProfile, c.PGODuration, c.Instrument
	pc := c.pgoConfig(launch.AsUser{Stage: stage})
	pc.Dir = cfg.Dir
	b.CollectProfile, b.ProfileLoad = pc.Collector(), profileLoad
	b.Progress, b.Verbose = c.Progress(), c.Verbose
	if cfg.StartConfig.Record == nil {
		cfg.StartConfig.Record = r.Add
	}
	if cfg.StartConfig.Log == nil {
		cfg.StartConfig.Log = c.Log()
	}
	built, err := campaign.BuildArms(ctx, cfg)
	for i, f := range built.Failed {
		built.Failed[i] = PGOFlagError(f)
	}
	err = PGOFlagError(err)
	c.endHooks(hc, &built)
	if rerr := r.AddBuilt(built.Artifacts, built.Failed); rerr != nil {
		return built, rerr
	}
	return built, err
}
