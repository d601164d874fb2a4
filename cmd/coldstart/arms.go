package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/coldstart-go/coldstart/builds"
	"github.com/coldstart-go/coldstart/campaign"
	"github.com/coldstart-go/coldstart/internal/provenance"
	"github.com/coldstart-go/coldstart/internal/resultfile"
	"github.com/coldstart-go/coldstart/internal/runas"
	"github.com/coldstart-go/coldstart/launch"
	"github.com/coldstart-go/coldstart/pgocollect"
	"github.com/coldstart-go/coldstart/prober"
)

// begin starts a local campaign: the readiness checker, the results file
// (provenance first) and the built arms. Close the arms also on error.
func (o *serverOptions) begin(ctx context.Context, label, transport string) (prober.Checker, *resultfile.File, campaign.Built, error) {
	checker, err := o.checker()
	if err != nil {
		return nil, nil, campaign.Built{}, err
	}
	rf, err := resultfile.Create(o.ResultsDir, label, provenance.Collect("coldstart", os.Args))
	if err != nil {
		return nil, nil, campaign.Built{}, err
	}
	built, err := o.buildArms(ctx, rf, transport)
	return checker, rf, built, err
}

// buildArms builds the arms the flags name and records each artifact in the
// results file. Arms that fail to build are reported on stderr and in the
// results file and left out; it fails only when none built.
func (o *serverOptions) buildArms(ctx context.Context, rf *resultfile.File, transport string) (campaign.Built, error) {
	arms, start, hideBase, err := o.armLists()
	if err != nil {
		return campaign.Built{}, err
	}
	if len(o.Images) > 0 && !o.armsChanged {
		arms = nil // --image alone: only the images
	}
	var images []campaign.ImageArm
	for _, s := range o.Images {
		ia, err := campaign.ParseImageArm(s)
		if err != nil {
			return campaign.Built{}, err
		}
		images = append(images, ia)
	}
	user, err := runas.Parse(o.RunAs)
	if err != nil {
		return campaign.Built{}, err
	}
	stage := runas.NewStage(user) // closed by Built.Close
	level := builds.UPXLevel("")
	if err := level.Set(o.UPXLevel); err != nil {
		return campaign.Built{}, fmt.Errorf("--upx-level: %w", err)
	}
	cfg := campaign.ArmsConfig{
		Source: builds.Source{Pkg: o.Pkg, Bin: o.Bin},
		Arms:   arms,
		Build: builds.Options{
			UPXLevel: level, PGOProfile: o.PGOProfile, PGODuration: o.PGODuration, CollectProfile: pgocollect.CollectWith(launch.AsUser{Stage: stage}),
			Instrument: o.Instrument, Progress: o.progress(), Verbose: o.Verbose,
			Prebuilt: o.Prebuilt,
		},
		Args: o.ServerArgs, Env: o.Env, Dir: o.Dir, Transport: campaign.Transport(transport),
		Engine: o.Runtime, Images: images, RunAs: stage,
	}
	built, err := campaign.BuildArms(ctx, cfg)
	if err == nil {
		checker, _ := o.checker()
		err = campaign.AddStartArms(ctx, &built, start, campaign.StartConfig{
			Base: o.StartFrom, HideBase: hideBase, Transport: campaign.Transport(transport),
			Snapshot: &launch.Snapshot{Warmup: o.SnapshotWarmup, Wait: prober.WaitOptions{Timeout: 30 * time.Second}},
			Checker:  checker, Log: o.log(), Record: rf.Add,
		})
	}
	for _, a := range built.Artifacts {
		if rerr := rf.Add("artifact", a); rerr != nil {
			return built, rerr
		}
	}
	for _, f := range built.Failed {
		fmt.Fprintf(o.errw(), "coldstart: not measured: %v\n", f)
		if rerr := rf.Add("build_error", struct {
			Error string `json:"error"`
		}{f.Error()}); rerr != nil {
			return built, rerr
		}
	}
	return built, err
}

// fixedAddr parses --addr (zero Target when unset).
func (o *serverOptions) fixedAddr() (prober.Target, error) {
	if o.Addr == "" {
		return prober.Target{}, nil
	}
	return prober.ParseAddr(o.Addr)
}
