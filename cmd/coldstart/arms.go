package main

import (
	"context"
	"time"

	"github.com/coldstart-go/coldstart/builds"
	"github.com/coldstart-go/coldstart/campaign"
	"github.com/coldstart-go/coldstart/internal/cliopts"
	"github.com/coldstart-go/coldstart/launch"
	"github.com/coldstart-go/coldstart/prober"
)

// begin starts a local campaign: the readiness checker, the results file
// (provenance first) and the built arms. Close the arms also on error.
func (o *serverOptions) begin(ctx context.Context, label, transport string) (prober.Checker, *cliopts.Results, campaign.Built, error) {
	checker, err := o.checker()
	if err != nil {
		return nil, nil, campaign.Built{}, err
	}
	rf, err := o.CreateResults(label, nil)
	if err != nil {
		return nil, nil, campaign.Built{}, err
	}
	images, _ := o.images()
	build, start, hideBase, _ := o.armLists()
	built, err := o.BuildArms(ctx, rf, campaign.ArmsConfig{
		Arms:  build,
		Build: builds.Options{Prebuilt: o.Prebuilt},
		Dir:   o.Dir, Transport: campaign.Transport(transport), Engine: o.Runtime, Images: images,
		Start: start,
		StartConfig: campaign.StartConfig{
			Base: o.StartFrom, HideBase: hideBase,
			Snapshot: &launch.Snapshot{Warmup: o.SnapshotWarmup, Wait: prober.WaitOptions{Timeout: 30 * time.Second}},
			Checker:  checker,
		},
	})
	return checker, rf, built, err
}

// checker turns --probe and --probe-request into a readiness checker.
func (o *serverOptions) checker() (prober.Checker, error) {
	return prober.ParseProbe(o.Probe, o.ProbeBody)
}

// fixedAddr parses --addr (zero Target when unset).
func (o *serverOptions) fixedAddr() (prober.Target, error) {
	if o.Addr == "" {
		return prober.Target{}, nil
	}
	return prober.ParseAddr(o.Addr)
}
