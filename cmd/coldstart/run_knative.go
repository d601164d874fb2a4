package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/coldstart-go/coldstart/campaign"
	"github.com/coldstart-go/coldstart/cmd/internal/cliopts"
	"github.com/coldstart-go/coldstart/internal/noise"
	"github.com/coldstart-go/coldstart/internal/ociimage"
	"github.com/coldstart-go/coldstart/internal/render"
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
	levers, err := knative.ParseLevers(o.Levers)
	if err != nil {
		return fmt.Errorf("--lever: %w", err)
	}
	pullPaths, err := o.pullImages()
	if err != nil {
		return err
	}
	pullImages := map[string]v1.Image{}
	for arm, path := range pullPaths {
		if pullImages[arm], err = ociimage.Load(path); err != nil {
			return fmt.Errorf("--pull-image %s: %w", arm, err)
		}
	}
	cs := knative.ColdStart{
		Levers: levers, PullImages: pullImages,
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
	if o.Parallel != "" {
		return runKnativeParallel(ctx, o, cs, w)
	}
	if o.BurstRequests > 0 {
		return runKnativeRequests(ctx, o, cs, w)
	}
	rf, err := o.createKnativeResults(cs, cs.Notes(ctx))
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
	// What an idle instance holds there: its pod, the queue-proxy and the
	// sandbox included. Not reading it (no nodes/proxy permission, no
	// kubelet sample) is said, and does not fail the cold starts.
	var mems []knative.PodMemory
	if err == nil {
		var merr error
		mems, merr = cs.IdleMemory(ctx, idleMemoryWait)
		if merr != nil {
			rf.Notef("idle pod memory: %v", merr)
			fmt.Fprintf(o.Errw(), "coldstart: %v\n", merr)
		}
		if aerr := cliopts.AddAll(rf, record.PodMemoryKind, mems); aerr != nil {
			err = aerr
		}
	}
	show := o.printSummaries(sums)
	if o.Output == render.Table && len(mems) > 0 {
		show = func(w io.Writer) error {
			if err := o.printSummaries(sums)(w); err != nil {
				return err
			}
			fmt.Fprintln(w)
			return writePodMemory(w, mems)
		}
	}
	return rf.End(w, show, err, campaign.Built{})
}

// createKnativeResults starts a Knative campaign's results file: the
// provenance with notes, then how the probes speak TLS when they do.
func (o *runOptions) createKnativeResults(cs knative.ColdStart, notes map[string]string) (*cliopts.Results, error) {
	if prober.TLSOf(cs.Checker) != nil {
		notes["probe_tls"] = "each probe a new TLS client, never resuming a session; the name sent and verified is each Service's host " +
			"(the probe's :authority) unless --tls-server-name gives one; the handshake is with what serves TLS at the probes' address " +
			"(an ingress or gateway in front of the activator), not with the pod"
	}
	rf, err := o.CreateResults("coldstart-knative", notes)
	if err != nil {
		return nil, err
	}
	if err := addTLS(rf, cs.Checker); err != nil {
		return nil, err
	}
	return rf, nil
}

// idleMemoryWait bounds the wait for a kubelet sample of each arm's pod
// after it answered (the kubelet samples every 10-15 s).
const idleMemoryWait = 60 * time.Second

// writePodMemory is the idle pods' table: each container's working set,
// the sandbox's and the pod's.
func writePodMemory(w io.Writer, mems []knative.PodMemory) error {
	mib := func(v *uint64) string {
		if v == nil {
			return "–"
		}
		return fmt.Sprintf("%.1f MiB", float64(*v)/(1<<20))
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "idle pod (kubelet working set)\tuser container\tqueue-proxy\tsandbox\tpod")
	for _, m := range mems {
		var user, qp *uint64
		for _, c := range m.Containers {
			if c.Name == "queue-proxy" {
				qp = c.WorkingSetBytes
			} else if user == nil {
				user = c.WorkingSetBytes
			}
		}
		sb := "–"
		if m.SandboxBytes != nil {
			sb = fmt.Sprintf("%.1f MiB", float64(*m.SandboxBytes)/(1<<20))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", m.Arm, mib(user), mib(qp), sb, mib(m.PodWorkingSetBytes))
	}
	return tw.Flush()
}

// runKnativeParallel scales N Services of each arm from zero at once for
// each N of --parallel (knative.Parallel), with the same burst rows and
// table as a local --burst.
func runKnativeParallel(ctx context.Context, o *runOptions, cs knative.ColdStart, w io.Writer) error {
	sizes, _ := campaign.BurstSizes(o.Parallel)
	notes := cs.Notes(ctx)
	notes["parallel"] = "N Services of one arm scaled from zero at once per N, each proven at zero at t0 (zero_at_t0), one t0 for all; " +
		"copies per N: " + parallelCopiesText(sizes)
	p := knative.Parallel{ColdStart: cs, Sizes: sizes}
	return o.knativeBursts(w, cs, notes, "--parallel", func(onNoise func(string, noise.Window) error, add func(string, any) error) ([]record.Burst, error) {
		p.Noise = onNoise
		return p.Run(ctx, add)
	}, func(w io.Writer, bursts []record.Burst, sums []record.BurstSummary) error {
		if err := writeBurstText(w, sums, o.Confidence, o.Runs); err != nil {
			return err
		}
		return writeDidNotFit(w, bursts)
	})
}

// writeDidNotFit says, per arm, the first N the cluster could not hold at
// once and how many of its pods it placed: the table above has no row for
// it (a burst that did not fit has no figures).
func writeDidNotFit(w io.Writer, bursts []record.Burst) error {
	seen := map[string]bool{}
	for _, b := range bursts {
		if !b.DidNotFit() || seen[b.Arm] {
			continue
		}
		seen[b.Arm] = true
		held := "?"
		if b.ScheduledAtOnce != nil {
			held = fmt.Sprint(*b.ScheduledAtOnce)
		}
		if _, err := fmt.Fprintf(w, "%s: N=%d did not fit at once: %s of %d pods scheduled (%s); N ≥ %d not run after it\n",
			b.Arm, b.N, held, b.N, b.Unschedulable, b.N); err != nil {
			return err
		}
	}
	return nil
}

// knativeBursts writes a Knative burst campaign's results file, named
// after flag in errors: run gets where to send the noise of each round
// and every record as it comes, and returns the bursts; the summaries
// follow, and table prints the terminal's table.
func (o *runOptions) knativeBursts(w io.Writer, cs knative.ColdStart, notes map[string]string, flag string,
	run func(onNoise func(string, noise.Window) error, add func(string, any) error) ([]record.Burst, error),
	table func(io.Writer, []record.Burst, []record.BurstSummary) error) error {
	rf, err := o.createKnativeResults(cs, notes)
	if err != nil {
		return err
	}
	bursts, err := run(func(scope string, w noise.Window) error {
		return rf.Add("noise", campaign.Noise{Scope: scope, Window: w})
	}, rf.Add)
	if err != nil {
		err = fmt.Errorf("on knative, %s: %w", flag, err)
	}
	sums := record.SummarizeBursts(bursts, nil, o.Baseline, o.Confidence, stats.DefaultMinEffect)
	if aerr := cliopts.AddAll(rf, record.BurstSummaryKind, sums); aerr != nil && err == nil {
		err = aerr
	}
	show := cliopts.Rows(o.Output, sums)
	if o.Output == render.Table && !o.Wide {
		show = func(w io.Writer) error { return table(w, bursts, sums) }
	}
	return rf.End(w, show, err, campaign.Built{})
}

// parallelCopiesText names the copies each N uses: "N=1: copy1; N=5:
// copy2-copy6".
func parallelCopiesText(sizes []int) string {
	var parts []string
	for i, ks := range knative.ParallelCopies(sizes) {
		r := fmt.Sprintf("copy%d", ks[0])
		if len(ks) > 1 {
			r += fmt.Sprintf("-copy%d", ks[len(ks)-1])
		}
		parts = append(parts, fmt.Sprintf("N=%d: %s", sizes[i], r))
	}
	return strings.Join(parts, "; ")
}

// runKnativeRequests sends --burst-requests requests at once at each
// arm's Service at zero (knative.RequestBurst): the burst rows carry the
// pods the autoscaler made and when each request was answered.
func runKnativeRequests(ctx context.Context, o *runOptions, cs knative.ColdStart, w io.Writer) error {
	notes := cs.Notes(ctx)
	notes["burst_requests"] = fmt.Sprintf("%d requests at once at each arm's Service at zero, each one attempt on a fresh channel held by the activator until a pod takes it; N is the requests", o.BurstRequests)
	for _, arm := range cs.Arms {
		cc, err := knative.ContainerConcurrency(ctx, cs.Clients, cs.Namespace, cs.NamePrefix+arm)
		if err != nil {
			return err
		}
		notes["container_concurrency_"+arm] = fmt.Sprint(cc)
	}
	b := knative.RequestBurst{ColdStart: cs, Requests: o.BurstRequests}
	return o.knativeBursts(w, cs, notes, "--burst-requests", func(onNoise func(string, noise.Window) error, add func(string, any) error) ([]record.Burst, error) {
		b.Noise = onNoise
		return b.Run(ctx, add)
	}, func(w io.Writer, bursts []record.Burst, _ []record.BurstSummary) error {
		return writeRequestBursts(w, bursts)
	})
}

// writeRequestBursts is one line per counted burst of requests: the pods
// made and when each was Ready, and the answers' p50, p95 and last.
func writeRequestBursts(w io.Writer, bursts []record.Burst) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "arm\trun\trequests\tpods\tfirst pod ready\tlast pod ready\tp50 ms\tp95 ms\tlast ms")
	for _, b := range bursts {
		if b.Warmup {
			continue
		}
		first, last := "–", "–"
		ready := b.PodsReadyMs()
		if len(ready) > 0 {
			first, last = num(slices.Min(ready)), num(slices.Max(ready))
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\n", b.Arm, b.Run, b.N, len(b.Pods), first, last, num(b.P50Ms), num(b.P95Ms), num(b.MaxMs))
	}
	return tw.Flush()
}

// pullImages reads --pull-image ARM=PATH into paths by arm: only beside a
// pull lever, each ARM one of --arms and given once, each PATH there.
func (o *runOptions) pullImages() (map[string]string, error) {
	if len(o.PullImages) == 0 {
		return nil, nil
	}
	levers, err := knative.ParseLevers(o.Levers)
	if err != nil {
		return nil, fmt.Errorf("--lever: %w", err)
	}
	if !o.Knative() || !slices.ContainsFunc(levers, knative.Lever.IsPull) {
		return nil, fmt.Errorf("--pull-image: only with --on knative and a --lever pull=BANDWIDTH or pull=cached, whose rounds serve it")
	}
	out := map[string]string{}
	for _, v := range o.PullImages {
		arm, path, ok := strings.Cut(v, "=")
		if !ok || arm == "" || path == "" {
			return nil, fmt.Errorf("--pull-image: %q, want ARM=PATH", v)
		}
		if !slices.Contains(o.Arms.Names, arm) {
			return nil, fmt.Errorf("--pull-image %s: not an arm of --arms (%s)", v, strings.Join(o.Arms.Names, ","))
		}
		if _, dup := out[arm]; dup {
			return nil, fmt.Errorf("--pull-image: arm %s given twice", arm)
		}
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("--pull-image %s: %w", arm, err)
		}
		out[arm] = path
	}
	return out, nil
}
