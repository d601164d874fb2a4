package main

import (
	"context"
	"fmt"
	"io"

	"github.com/coldstart-go/coldstart/campaign"
	"github.com/coldstart-go/coldstart/internal/cliopts"
	"github.com/coldstart-go/coldstart/knative"
	"github.com/coldstart-go/coldstart/prober"
	"github.com/coldstart-go/coldstart/record"
)

// runOnKnative measures scale-from-zero of the Services `coldstart deploy`
// made, one per arm, with the same samples and summaries as a local run and
// the cluster's provenance.
func runOnKnative(ctx context.Context, o *runOptions, w io.Writer) error {
	cfg, ns, err := knative.Kubeconfig{Path: o.Kubeconfig}.Load()
	if err != nil {
		return err
	}
	if o.Namespace != "" {
		ns = o.Namespace
	}
	c, err := knative.NewClients(cfg)
	if err != nil {
		return err
	}
	if err := knative.Preflight(ctx, c, ns); err != nil {
		return err
	}
	rf, err := o.CreateResults("coldstart-knative", knative.ClusterNotes(ctx, c, ns))
	if err != nil {
		return err
	}
	checker, err := o.checker()
	if err != nil {
		return err
	}
	var sums []campaign.Summary
	prefix := knative.DefaultServiceOptions().NamePrefix
	for _, arm := range o.Arms.Names {
		var samples []prober.Sample
		mo := knative.MeasureOptions{
			Namespace: ns, Service: prefix + arm, Arm: arm, Budget: "knative",
			Runs: o.Runs, Warmup: true, Target: o.Target, ProbeTimeout: o.Timeout,
			Probe: knative.CheckerProbe(checker), Log: o.Progress(),
		}
		err = knative.ScaleFromZero(ctx, c, mo, func(s prober.Sample) error {
			samples = append(samples, s)
			return rf.Add("sample", s)
		})
		if err != nil {
			err = fmt.Errorf("%s arm on knative: %w", arm, err)
			break
		}
		s := record.Summarize(samples)
		s.Arm, s.Budget, s.Probe = arm, "knative", checker.Name()
		if err = rf.Add("summary", s); err != nil {
			break
		}
		sums = append(sums, s)
	}
	return rf.End(w, cliopts.Rows(o.Output, sums), err, campaign.Built{})
}
