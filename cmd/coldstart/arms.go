package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/coldstart-go/coldstart/builds"
	"github.com/coldstart-go/coldstart/campaign"
	"github.com/coldstart-go/coldstart/cmd/internal/cliopts"
	"github.com/coldstart-go/coldstart/internal/grpcschema"
	"github.com/coldstart-go/coldstart/launch"
	"github.com/coldstart-go/coldstart/prober"
	"github.com/coldstart-go/coldstart/record"
)

// begin starts a local campaign: the readiness checker, the results file
// (provenance first) and the built arms. Close the arms also on error.
func (o *serverOptions) begin(ctx context.Context, label, transport string) (prober.Checker, *cliopts.Results, campaign.Built, error) {
	checker, err := o.checker()
	if err != nil {
		return nil, nil, campaign.Built{}, err
	}
	rf, err := o.CreateResults(label, o.notes)
	if err != nil {
		return nil, nil, campaign.Built{}, err
	}
	if err := addTLS(rf, checker); err != nil {
		return nil, nil, campaign.Built{}, err
	}
	images, _ := o.images()
	build, start, hideBase, _ := o.armLists()
	built, err := o.BuildArms(ctx, rf, campaign.ArmsConfig{
		Arms:  build,
		Build: builds.Options{Prebuilt: o.Prebuilt},
		Dir:   o.Dir, Transport: campaign.Transport(transport), Runtimes: o.Runtimes, Images: images,
		Start: start,
		StartConfig: campaign.StartConfig{
			Base: o.StartFrom, HideBase: hideBase,
			Snapshot: &launch.Snapshot{Warmup: o.SnapshotWarmup, Wait: prober.WaitOptions{Timeout: 30 * time.Second}},
			Checker:  checker,
		},
	})
	return checker, rf, built, err
}

// addTLS records how the probes speak TLS (paths and fingerprints, never
// a key) after the provenance, and says when certificates go unverified.
func addTLS(rf *cliopts.Results, c prober.Checker) error {
	tl := prober.TLSOf(c)
	if tl == nil {
		return nil
	}
	if tl.Unverified() {
		rf.Notef("--insecure-skip-verify: the server's certificate is not verified; the probe is labelled %q", c.Name())
	}
	return rf.Add(record.TLSClientKind, tl.Record)
}

// checker turns --probe and --probe-request into a readiness checker; a
// method probe takes --proto, --protoset and --probe-metadata; --tls and
// its files make it probe over TLS.
func (o *serverOptions) checker() (prober.Checker, error) {
	c, err := prober.ParseProbe(o.Probe, o.ProbeBody)
	if err != nil {
		return nil, err
	}
	if c, err = o.withTLS(c); err != nil {
		return nil, err
	}
	g, ok := c.(*prober.GRPCMethod)
	if !ok {
		if o.Protoset != "" || len(o.Protos) > 0 || len(o.ProbeMetadata) > 0 {
			return nil, fmt.Errorf("--proto, --protoset, --probe-metadata: only for a /pkg.Svc/Method probe, not --probe %s", c.Name())
		}
		return c, nil
	}
	if len(o.ImportPaths) > 0 && len(o.Protos) == 0 {
		return nil, errors.New("--import-paths: only with --proto")
	}
	g.Schema = grpcschema.Source{Protoset: o.Protoset, Protos: o.Protos, ImportPaths: o.ImportPaths}
	if g.Metadata, err = grpcschema.ParseMetadata(o.ProbeMetadata); err != nil {
		return nil, fmt.Errorf("--probe-metadata: %w", err)
	}
	if g.Schema.Given() {
		// The files need no server: a schema that does not parse or lacks
		// the method is reported before anything starts.
		if _, err := grpcschema.Resolve(context.Background(), g.Schema, nil, g.Method); err != nil {
			flag := "--proto"
			if o.Protoset != "" {
				flag = "--protoset"
			}
			return nil, fmt.Errorf("%s: %w", flag, err)
		}
	}
	return g, nil
}

// withTLS gives c the TLS flags' configuration when --tls is given or the
// probe asks for TLS itself (grpcs://, https://, h3://); the TLS flags alone are
// an error.
func (o *serverOptions) withTLS(c prober.Checker) (prober.Checker, error) {
	return withTLS(c, &o.TLS)
}

// withTLS is c over TLS with t's configuration, when t is on (--tls) or c
// asks for TLS itself; the TLS flags with neither are an error naming the
// flag. Every command whose probes take the TLS flags (run, density,
// pull) goes through it, so that they take and refuse them alike.
func withTLS(c prober.Checker, t *cliopts.TLS) (prober.Checker, error) {
	tl, err := t.Load(prober.TLSOf(c) != nil, "a grpcs://, https:// or h3:// --probe")
	if err != nil || tl == nil {
		return c, err // a prober.OptionError: flagError names the flag
	}
	c, err = prober.WithTLS(c, tl)
	if err != nil {
		return nil, fmt.Errorf("--tls: %w", err)
	}
	return c, nil
}

// fixedAddr parses --addr (zero Target when unset).
func (o *serverOptions) fixedAddr() (prober.Target, error) {
	if o.Addr == "" {
		return prober.Target{}, nil
	}
	t, err := prober.ParseAddr(o.Addr)
	if err != nil {
		return prober.Target{}, fmt.Errorf("--addr: %w", err)
	}
	return t, nil
}

// probeFlags are the flags prober.ParseProbe's inputs come from, by the
// names its errors give them (prober.OptionError): the one table
// flagError reads.
var probeFlags = map[string]string{
	"probe": "--probe", "request": "--probe-request",
	"tls": "--tls", "cacert": "--cacert", "tls-server-name": "--tls-server-name", "cert": "--cert", "key": "--key",
}

// flagError is err as the user reads it: where prober says which input of
// a probe is wrong (a prober.OptionError, with the context around it
// kept: the arm, the run), the message names the flag it came from
// instead; where budget says what a cgroup needs when not root, it names
// --cgroup-parent (cliopts.BudgetError). prober and budget know no flags,
// so that their checks and their words live once, in them.
func flagError(err error) error {
	err = cliopts.BudgetError(err)
	var oe *prober.OptionError
	if !errors.As(err, &oe) {
		return err
	}
	flag, ok := probeFlags[oe.Option]
	if !ok {
		return err
	}
	return cliopts.ReplaceMessage(err, oe, flag+": "+oe.Err.Error())
}
