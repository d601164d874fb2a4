package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/coldstart-go/coldstart/builds"
	"github.com/coldstart-go/coldstart/internal/provenance"
	"github.com/coldstart-go/coldstart/internal/render"
	"github.com/coldstart-go/coldstart/internal/resultfile"
	"github.com/coldstart-go/coldstart/knative"
	"github.com/coldstart-go/coldstart/steady"
)

// runOnKnative loads each arm's Knative Service (`coldstart deploy`'s
// names) through the address and :authority `coldstart run --on knative`
// uses, counting the revision's running pods at every window's edges, with
// the cluster's provenance.
func runOnKnative(ctx context.Context, o *runOptions, cfg steady.Config, w io.Writer) error {
	arms, err := builds.ParseArms(o.Arms)
	if err != nil {
		return fmt.Errorf("--arms: %w", err)
	}
	kc, ns, err := knative.Kubeconfig{Path: o.Kubeconfig}.Load()
	if err != nil {
		return err
	}
	if o.Namespace != "" {
		ns = o.Namespace
	}
	c, err := knative.NewClients(kc)
	if err != nil {
		return err
	}
	if err := knative.Preflight(ctx, c, ns); err != nil {
		return err
	}
	prov := provenance.Collect("steady", os.Args)
	prov.Notes = knative.ClusterNotes(ctx, c, ns)
	rf, err := resultfile.Create(o.ResultsDir, "steady-knative", prov)
	if err != nil {
		return err
	}
	defer fmt.Fprintf(o.errw(), "steady: results in %s\n", rf.Path())
	prefix := knative.DefaultServiceOptions().NamePrefix
	var rows []steady.Row
	for _, arm := range arms {
		t, err := knative.SteadyTarget(ctx, c, ns, prefix+arm, arm, o.Target, "")
		if err != nil {
			return fmt.Errorf("%s arm on knative: %w", arm, err)
		}
		ac := cfg
		ac.Target = &t
		err = steady.Run(ctx, ac, func(r steady.Row) error {
			r.Budget = "knative"
			if r.Round > 0 {
				return rf.Add("step_round", r)
			}
			rows = append(rows, r)
			return rf.Add("step", r)
		})
		if err != nil {
			return fmt.Errorf("%s arm on knative: %w", arm, err)
		}
	}
	return render.Write(w, o.Output, rows)
}
