package main

import (
	"context"
	"fmt"
	"io"

	"github.com/coldstart-go/coldstart/campaign"
	"github.com/coldstart-go/coldstart/internal/cliopts"
	"github.com/coldstart-go/coldstart/internal/noise"
	"github.com/coldstart-go/coldstart/internal/stats"
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
	notes := knative.ClusterNotes(ctx, c, ns)
	notes["probe_via"] = o.Via
	if o.Via == "activator" {
		notes["probe_path"] = "prober -> activator Service " + o.Target + " -> revision pod (queue-proxy -> server); no ingress hop"
	}
	var traces *knative.TraceCollector
	if o.Traces != "" {
		endpoint, err := knative.CheckTracing(ctx, c, o.Traces)
		if err != nil {
			return fmt.Errorf("--traces: %w", err)
		}
		if traces, err = knative.ListenTraces(o.Traces); err != nil {
			return fmt.Errorf("--traces: %w", err)
		}
		defer traces.Close()
		notes["trace_phases"] = "activator_received, activator_released, queue_proxy_received: from the Zipkin spans the cluster's config-tracing sends to " + endpoint + " (received at " + o.Traces + "), the components' own clocks"
	}
	rf, err := o.CreateResults("coldstart-knative", notes)
	if err != nil {
		return err
	}
	checker, err := o.checker()
	if err != nil {
		return err
	}
	prefix := knative.DefaultServiceOptions().NamePrefix
	var mos []knative.MeasureOptions
	for i, arm := range o.Arms.Names {
		mo := knative.MeasureOptions{
			Namespace: ns, Service: prefix + arm, Arm: arm, Budget: "knative",
			Runs: o.Runs, Warmup: true, Target: o.Target, Activator: o.Via == "activator", ProbeTimeout: o.Timeout,
			Probe: knative.CheckerProbe(checker), Log: o.Progress(), Traces: traces,
		}
		if i == 0 {
			mo.Noise = func(scope string, w noise.Window) error {
				return rf.Add("noise", campaign.Noise{Scope: scope, Window: w})
			}
		}
		mos = append(mos, mo)
	}
	// Arms interleaved: each Service scales to zero while the others are
	// measured.
	samples := map[string][]prober.Sample{}
	err = knative.ScaleFromZeroInterleaved(ctx, c, mos, func(s prober.Sample) error {
		samples[s.Arm] = append(samples[s.Arm], s)
		return rf.Add("sample", s)
	})
	if err != nil {
		err = fmt.Errorf("on knative: %w", err)
	}
	var sums []campaign.Summary
	var all []prober.Sample
	for _, arm := range o.Arms.Names {
		all = append(all, samples[arm]...)
	}
	for _, arm := range o.Arms.Names {
		if len(samples[arm]) == 0 {
			continue
		}
		s := record.SummarizeAt(samples[arm], o.Confidence)
		s.Arm, s.Budget, s.Probe = arm, "knative", checker.Name()
		sums = append(sums, s)
	}
	record.CompareToBaseline(sums, all, o.Baseline, o.Confidence, stats.DefaultMinEffect)
	if aerr := cliopts.AddAll(rf, "summary", sums); aerr != nil && err == nil {
		err = aerr
	}
	return rf.End(w, o.printSummaries(sums), err, campaign.Built{})
}
