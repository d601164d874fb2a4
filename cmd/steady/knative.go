package main

import (
	"context"
	"fmt"
	"io"

	"github.com/coldstart-go/coldstart/campaign"
	"github.com/coldstart-go/coldstart/cmd/internal/cliopts"
	"github.com/coldstart-go/coldstart/internal/stats"
	"github.com/coldstart-go/coldstart/knative"
	"github.com/coldstart-go/coldstart/record"
	"github.com/coldstart-go/coldstart/steady"
)

// runOnKnative loads each arm's Knative Service (`coldstart deploy`'s
// names: --name-prefix and the arm) through the address and :authority `coldstart run --on knative`
// uses, counting the revision's running pods at every window's edges, with
// the cluster's provenance.
func runOnKnative(ctx context.Context, o *runOptions, cfg steady.Config, w io.Writer) error {
	c, ns, err := o.Cluster.Clients(nil)
	if err != nil {
		return err
	}
	if err := knative.Preflight(ctx, c, ns); err != nil {
		return err
	}
	rf, err := o.CreateResults("steady-knative", knative.ClusterNotes(ctx, c, ns))
	if err != nil {
		return err
	}
	var rows, rounds []steady.Row
	cfg.Stopped = func(s steady.Stop) error {
		rf.Notef("%s", s)
		return nil
	}
	for _, arm := range o.Arms.Names {
		var t steady.Target
		if t, err = knative.SteadyTarget(ctx, c, ns, o.ServiceName(arm), arm, o.Target, "", o.Via == "activator"); err != nil {
			err = fmt.Errorf("%s arm on knative: %w", arm, err)
			break
		}
		ac := cfg
		ac.Target = &t
		err = steady.Run(ctx, ac, func(r steady.Row) error {
			r.Budget = "knative"
			if r.Round > 0 {
				rounds = append(rounds, r)
				return rf.Add("step_round", r)
			}
			rows = append(rows, r) // recorded below, set against the baseline
			return nil
		})
		if err != nil {
			err = fmt.Errorf("%s arm on knative: %w", arm, err)
			break
		}
	}
	base := record.CompareSteady(rows, rounds, o.Baseline, cfg.Confidence, stats.DefaultMinEffect)
	if rerr := cliopts.AddAll(rf, "step", rows); rerr != nil && err == nil {
		err = rerr
	}
	return rf.End(w, stepRows(o.Output, rows, base), err, campaign.Built{})
}
