package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/coldstart-go/coldstart/builds"
	"github.com/coldstart-go/coldstart/campaign"
	"github.com/coldstart-go/coldstart/internal/provenance"
	"github.com/coldstart-go/coldstart/internal/render"
	"github.com/coldstart-go/coldstart/internal/resultfile"
	"github.com/coldstart-go/coldstart/knative"
	"github.com/coldstart-go/coldstart/prober"
	"github.com/coldstart-go/coldstart/record"
)

// runOnKnative measures scale-from-zero of the Services `coldstart deploy`
// made, one per arm, with the same samples and summaries as a local run and
// the cluster's provenance.
func runOnKnative(ctx context.Context, o *runOptions, w io.Writer) error {
	arms, err := builds.ParseArms(o.Arms)
	if err != nil {
		return fmt.Errorf("--arms: %w", err)
	}
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
	prov := provenance.Collect("coldstart", os.Args)
	prov.Notes = knative.ClusterNotes(ctx, c, ns)
	rf, err := resultfile.Create(o.ResultsDir, "coldstart-knative", prov)
	if err != nil {
		return err
	}
	defer fmt.Fprintf(o.errw(), "coldstart: results in %s\n", rf.Path())
	checker, err := o.checker()
	if err != nil {
		return err
	}
	var sums []campaign.Summary
	prefix := knative.DefaultServiceOptions().NamePrefix
	for _, arm := range arms {
		var samples []prober.Sample
		mo := knative.MeasureOptions{
			Namespace: ns, Service: prefix + arm, Arm: arm, Budget: "knative",
			Runs: o.Runs, Warmup: true, Target: o.Target, ProbeTimeout: o.Timeout,
			Probe: knative.CheckerProbe(checker), Log: o.progress(),
		}
		err := knative.ScaleFromZero(ctx, c, mo, func(s prober.Sample) error {
			samples = append(samples, s)
			return rf.Add("sample", s)
		})
		if err != nil {
			return fmt.Errorf("%s arm on knative: %w", arm, err)
		}
		s := record.Summarize(samples)
		s.Arm, s.Budget, s.Probe = arm, "knative", checker.Name()
		if err := rf.Add("summary", s); err != nil {
			return err
		}
		sums = append(sums, s)
	}
	return render.Write(w, o.Output, sums)
}
