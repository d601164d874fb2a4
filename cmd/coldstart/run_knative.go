package main

import (
	"context"
	"fmt"
	"io"

	"github.com/coldstart-go/coldstart/campaign"
	"github.com/coldstart-go/coldstart/cmd/internal/cliopts"
	"github.com/coldstart-go/coldstart/internal/noise"
	"github.com/coldstart-go/coldstart/internal/stats"
	"github.com/coldstart-go/coldstart/knative"
	"github.com/coldstart-go/coldstart/prober"
	"github.com/coldstart-go/coldstart/record"
)

// runOnKnative measures scale-from-zero of the Services `coldstart deploy`
// made, one per arm (knative.ColdStart), with the same samples and
// summaries as a local run and the cluster's provenance.
func runOnKnative(ctx context.Context, o *runOptions, w io.Writer) error {
	c, ns, err := o.Cluster.Clients(nil)
	if err != nil {
		return err
	}
	if err := knative.Preflight(ctx, c, ns); err != nil {
		return err
	}
	checker, err := o.checker()
	if err != nil {
		return err
	}
	if prober.TLSOf(checker) != nil {
		return fmt.Errorf("--probe %s over TLS: not supported with --on knative yet, only for local servers", checker.Name())
	}
	cs := knative.ColdStart{
		Clients: c, Namespace: ns, Arms: o.Arms.Names, NamePrefix: o.NamePrefix,
		Runs: o.Runs, Target: o.Target, Activator: o.Via == "activator", ProbeTimeout: o.Timeout,
		Checker: checker, Confidence: o.Confidence, Progress: o.Progress(),
	}
	if o.Traces != "" {
		if cs.Traces, err = knative.StartTraces(ctx, c, o.Traces); err != nil {
			return fmt.Errorf("--traces: %w", err)
		}
		defer cs.Traces.Close()
	}
	rf, err := o.CreateResults("coldstart-knative", cs.Notes(ctx))
	if err != nil {
		return err
	}
	cs.Noise = func(scope string, w noise.Window) error {
		return rf.Add("noise", campaign.Noise{Scope: scope, Window: w})
	}
	var samples []prober.Sample
	sums, err := cs.Run(ctx, func(s prober.Sample) error {
		samples = append(samples, s)
		return rf.Add("sample", s)
	})
	if err != nil {
		err = fmt.Errorf("on knative: %w", err)
	}
	record.CompareToBaseline(sums, samples, o.Baseline, o.Confidence, stats.DefaultMinEffect)
	if aerr := cliopts.AddAll(rf, "summary", sums); aerr != nil && err == nil {
		err = aerr
	}
	return rf.End(w, o.printSummaries(sums), err, campaign.Built{})
}
