// Package inittrace runs cold-start campaigns with the Go runtime's init
// trace on (GODEBUG=inittrace=1) and each server's stderr read as it is
// written, turning every start into a record.Trace.
package inittrace

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/coldstart-go/coldstart/campaign"
	"github.com/coldstart-go/coldstart/explain"
	"github.com/coldstart-go/coldstart/launch"
	"github.com/coldstart-go/coldstart/prober"
	"github.com/coldstart-go/coldstart/record"
)

// Campaign runs the cold-start campaign of c with GODEBUG=inittrace=1 in
// every server's environment and its stderr read as it comes, keeping going
// past arms that fail. onTrace gets every traced cold start as it is taken.
// It returns the traces and the campaign's summaries; err joins the arms
// that failed (their traces are kept: a server that exits after its inits
// still shows them).
func Campaign(ctx context.Context, c campaign.ColdStart, onTrace func(record.Trace) error) ([]record.Trace, []campaign.Summary, error) {
	tracers := map[string]*tracer{}
	arms := make([]campaign.Arm, len(c.Arms))
	for i, a := range c.Arms {
		if !processLauncher(a.Launcher) {
			return nil, nil, fmt.Errorf("%s arm: explain reads the init trace from the server's stderr as it is written, which a container launcher keeps to itself; explain the static arm (the image's binary) instead", a.Name)
		}
		t := &tracer{}
		tracers[a.Name] = t
		arms[i] = withInitTrace(a, t)
	}
	c.Arms = arms
	c.KeepGoing = true
	var traces []record.Trace
	sums, err := c.Run(ctx, func(s record.Sample) error {
		var col *explain.Collector
		if t := tracers[s.Arm]; t != nil {
			col = t.take()
		}
		tr := explain.NewTrace(s, col)
		traces = append(traces, tr)
		return onTrace(tr)
	})
	if err != nil {
		err = stripped{err}
	}
	return traces, sums, err
}

// stripped is an error whose text leaves out init trace lines.
type stripped struct{ error }

func (e stripped) Error() string { return explain.StripTrace(e.error.Error()) }
func (e stripped) Unwrap() error { return e.error }

// processLauncher reports whether l starts plain processes (as us or as
// another user), whose stderr comes to us as it is written.
func processLauncher(l launch.Launcher) bool {
	switch l.(type) {
	case nil, launch.Process, *launch.Process, launch.AsUser, *launch.AsUser:
		return true
	}
	return false
}

// withInitTrace returns a with GODEBUG=inittrace=1 added last to its
// environment (after any GODEBUG the user gave, which it extends) and its
// stderr copied to t.
func withInitTrace(a campaign.Arm, t *tracer) campaign.Arm {
	envFor := a.EnvFor
	static := a.Env
	a.EnvFor = func(tg prober.Target) []string {
		var env []string
		if envFor != nil {
			env = envFor(tg)
		}
		all := append(append([]string(nil), static...), env...)
		return append(env, GODEBUG(all))
	}
	a.Stderr = t
	a.Started = t.started
	return a
}

// GODEBUG is the GODEBUG entry that turns on the init trace while keeping
// the settings already in env (or, when env has none, in ours, which the
// server inherits).
func GODEBUG(env []string) string {
	cur, found := os.LookupEnv("GODEBUG")
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "GODEBUG="); ok {
			cur, found = v, true
		}
	}
	if !found || cur == "" {
		return "GODEBUG=inittrace=1"
	}
	return "GODEBUG=" + cur + ",inittrace=1"
}

// tracer hands one arm's stderr to a fresh Collector per instance. An
// arm's instances run one after another (each is stopped and reaped, its
// stderr drained, before the next starts).
type tracer struct {
	mu  sync.Mutex
	cur *explain.Collector
}

func (t *tracer) Write(p []byte) (int, error) {
	t.mu.Lock()
	if t.cur == nil {
		t.cur = explain.NewCollector()
	}
	c := t.cur
	t.mu.Unlock()
	return c.Write(p)
}

func (t *tracer) started(inst launch.Instance) {
	t.mu.Lock()
	if t.cur == nil {
		t.cur = explain.NewCollector()
	}
	c := t.cur
	t.mu.Unlock()
	c.SetT0(inst.T0())
}

// take ends the current instance's collection.
func (t *tracer) take() *explain.Collector {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.cur
	t.cur = nil
	return c
}
