package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/coldstart-go/coldstart/cmd/internal/cliopts"
	"github.com/coldstart-go/coldstart/cost"
	"github.com/coldstart-go/coldstart/internal/render"
	"github.com/coldstart-go/coldstart/internal/stats"
	"github.com/coldstart-go/coldstart/knative"
	"github.com/coldstart-go/coldstart/record"
)

// replayOptions are coldstart replay's flags.
type replayOptions struct {
	cliopts.Cluster
	trafficFlags
	Arm            string
	Target         string
	Policies       []string
	RequestTimeout time.Duration
	WaitTimeout    time.Duration
	Keep           bool
	Output         render.Format
	ResultsDir     string
	Quiet          bool
	stderr         io.Writer
}

// defaultReplayPolicies are three policies a 30-minute replay tells
// apart: the shortest stable window Knative takes, that with a 30 s
// scale-down delay, and a 20 s window.
var defaultReplayPolicies = []string{"knative:window=6s", "knative:window=6s,delay=30s", "knative:window=20s"}

func newReplayCmd(run func(context.Context, *replayOptions, io.Writer) error) *cobra.Command {
	o := &replayOptions{Cluster: cliopts.NewCluster(), trafficFlags: trafficFlags{Seed: 1, Duration: 30 * time.Minute},
		RequestTimeout: 2 * time.Minute, WaitTimeout: 5 * time.Minute, Output: render.Table, ResultsDir: "results"}
	cmd := &cobra.Command{
		Use:   "replay --arms ARM [flags]",
		Short: "Replay a trace against the real Knative autoscaler, one Service per policy, and check coldstart cost's simulator against it",
		Long: `replay sends one traffic model's requests, at their times, to a real Knative cluster:
one Service per --policy, copies of the arm's Service that coldstart deploy made, each with
the policy's autoscaling annotations (stable window, scale-down delay, pod retention,
target), all at zero at t0 and sent the same requests at once. Each request is a fail-fast
gRPC health check on a channel of its own, through the activator (--via activator) or the
ingress. A pod watch per Service says how many pods were Ready when each request was sent:
a request sent with none that waited (slower than the p99 of those sent with a Ready pod) is
cold. Then coldstart cost's simulator runs the same arrivals through the same policy, with
the cluster's own scale-to-zero grace period and the replay's scales from zero (requests
sent when a Service had no pod) as its start samples, and each policy's real and simulated cold requests, pod
starts and pod-seconds are printed side by side; the simulator agrees when its cold
requests are within 10% of the real ones.

A day's trace does not fit a replay: compress it (fewer, shorter windows), as the default
policies do with Knative's shortest stable window (6s). The Services are deleted at the
end (--keep leaves them); after a kill, coldstart deploy --delete --arms ARM removes them.
Rows go to results/<YYYYMMDD-HHMMSS>_replay.jsonl, which coldstart report reads.`,
		Example: `  coldstart replay --arms static --arrivals 'gamma:4/min,cv=2' --duration 30m \
      --via activator --target 10.96.0.20:81
  coldstart replay --arms static --trace requests.txt --policy knative:window=6s --policy knative:window=6s,delay=1m`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.stderr = cmd.ErrOrStderr()
			if err := o.checkTraffic(cmd.Flags().Changed("duration")); err != nil {
				return err
			}
			if len(o.Traces)+len(o.Arrivals) > 1 {
				return errors.New("--trace, --arrivals: a replay sends one traffic model; give one")
			}
			if o.Arm == "" {
				return errors.New("--arms: name the arm whose Service coldstart deploy made (such as --arms static)")
			}
			if strings.Contains(o.Arm, ",") {
				return fmt.Errorf("--arms %s: a replay copies one arm's Service; give one", o.Arm)
			}
			if err := o.CheckProbe(o.Target, []string{o.Arm}); err != nil {
				return err
			}
			if o.ResultsDir == "" {
				return errors.New("--results-dir: a replay takes as long as its trace; give a directory for what it sends")
			}
			if o.RequestTimeout <= 0 {
				return fmt.Errorf("--request-timeout: %v, want a positive duration", o.RequestTimeout)
			}
			if len(o.Policies) == 0 {
				o.Policies = defaultReplayPolicies
			}
			for _, p := range o.Policies {
				// Checked here but for the grace period, which is
				// checked against the cluster's once it is read.
				if _, err := cost.ReplayPolicy(p, 0); err != nil {
					return fmt.Errorf("--policy: %w", err)
				}
			}
			return run(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Arm, "arms", "", "the arm whose deployed Service (PREFIX+ARM) each policy's Service copies")
	o.bindTraffic(f, "")
	f.StringArrayVar(&o.Policies, "policy", nil, "a knative policy, one Service each (repeatable): knative[:window=6s,delay=0,retention=0,target=100,utilization=70]; the grace period is the cluster's (default "+strings.Join(defaultReplayPolicies, ", ")+")")
	f.StringVar(&o.Target, "target", "", "the address every request dials: the ingress (\"\" = each Service's cluster-local address) or, with --via activator, the activator's HOST:PORT")
	o.BindProbe(cmd, "what --target is: ingress (requests carry the Service's host) or activator (the revision's host)")
	f.DurationVar(&o.RequestTimeout, "request-timeout", o.RequestTimeout, "how long one request waits for its answer (a cold one waits for its pod)")
	f.DurationVar(&o.WaitTimeout, "wait-timeout", o.WaitTimeout, "how long the policies' Services may take to be Ready, and then at zero")
	f.BoolVar(&o.Keep, "keep", false, "leave the policies' Services after the replay (deleted by default)")
	f.VarP(&o.Output, "output", "o", "output format: table, json, csv or markdown")
	f.StringVar(&o.ResultsDir, "results-dir", o.ResultsDir, "directory for the results file")
	f.BoolVarP(&o.Quiet, "quiet", "q", false, "no progress on stderr")
	cmd.SetFlagErrorFunc(cliopts.FlagError)
	return cmd
}

// replayView is a policy's row as the table shows it.
type replayView struct {
	Policy   string  `json:"policy"`
	Requests int     `json:"requests"`
	Cold     int64   `json:"cold"`
	SimCold  float64 `json:"sim_cold" render:"%.1f"`
	SimRange string  `json:"sim_cold_p5_p95"`
	Diff     float64 `json:"cold_diff_pct" render:"%+.1f"`
	Agrees   string  `json:"agrees"`
	Starts   int64   `json:"starts"`
	SimStart int64   `json:"sim_starts"`
	PodS     float64 `json:"pod_s" render:"%.0f"`
	SimPodS  float64 `json:"sim_pod_s" render:"%.0f"`
	ColdMs   float64 `json:"cold_p50_ms" render:"%.0f"`
	AnsWarm  int64   `json:"answered_warm"`
	Errors   int     `json:"errors"`
}

func runReplay(ctx context.Context, o *replayOptions, w io.Writer) (err error) {
	var progress io.Writer = o.stderr
	if o.Quiet {
		progress = nil
	}
	trs, err := o.traffics()
	if err != nil {
		return err
	}
	tr := trs[0]
	if len(tr.Apps) != 1 {
		return fmt.Errorf("traffic %s has %d apps: a replay sends one app's requests (population: is for coldstart cost)", tr.Name, len(tr.Apps))
	}
	arrivals := tr.Apps[0]
	c, ns, err := o.Clients(nil)
	if err != nil {
		return err
	}
	if err := knative.Preflight(ctx, c, ns); err != nil {
		return err
	}
	cfg, err := knative.AutoscalerConfig(ctx, c)
	if err != nil {
		return err
	}
	if !cfg.EnableScaleToZero {
		return fmt.Errorf("the cluster's config-autoscaler has enable-scale-to-zero false: nothing scales to zero, so there is nothing to replay")
	}
	var ks []cost.Knative
	var as []knative.Autoscaling
	for _, spec := range o.Policies {
		k, err := cost.ReplayPolicy(spec, cfg.ScaleToZeroGracePeriod)
		if err != nil {
			return fmt.Errorf("--policy: %w", err)
		}
		initial := 0
		if !cfg.AllowZeroInitialScale {
			initial = 1 // the replay waits for zero before t0
		}
		ks = append(ks, k)
		as = append(as, knative.Autoscaling{Window: k.Window, Delay: k.Delay, Retention: k.Retention, Initial: initial, Target: k.Target, Utilization: k.Utilization})
	}
	if cfg.MaxScaleDownRate != 2 {
		fmt.Fprintf(o.stderr, "coldstart: replay: the cluster's max-scale-down-rate is %g; the simulator assumes Knative's default 2\n", cfg.MaxScaleDownRate)
	}

	names, err := knative.DeployReplay(ctx, c, ns, o.NamePrefix, o.Arm, as, o.WaitTimeout, progress)
	if !o.Keep {
		defer func() {
			if derr := knative.DeleteNamed(ctx, c, ns, names, progress, "made by this replay"); derr != nil {
				err = errors.Join(err, derr)
			}
		}()
	}
	if err != nil {
		return err
	}
	targets := make([]knative.ReplayTarget, len(names))
	for i, n := range names {
		targets[i] = knative.ReplayTarget{Policy: o.Policies[i], Service: n} // as given: the grace is the cluster's
	}
	rf, err := cliopts.CreateResults("coldstart", o.stderr, o.ResultsDir, "replay", map[string]string{
		"replay_traffic": tr.Name, "replay_grace": cfg.ScaleToZeroGracePeriod.String(), "replay_arm": o.Arm,
		"replay_via": o.Via,
	})
	if err != nil {
		return err
	}
	results, rerr := knative.Replay{
		Clients: c, Namespace: ns, Arm: o.Arm, Targets: targets, Arrivals: arrivals, Duration: tr.Duration,
		Target: o.Target, Activator: o.Via == "activator", RequestTimeout: o.RequestTimeout, ZeroTimeout: o.WaitTimeout,
		Progress: progress,
	}.Run(ctx)
	// What was replayed is kept, also when the replay was cut short.
	var warmMs []float64
	for _, res := range results {
		if err := cliopts.AddAll(rf, record.ReplayRequestKind, res.Requests); err != nil {
			return err
		}
		if err := cliopts.AddAll(rf, record.ReplayPodKind, res.Pods); err != nil {
			return err
		}
		for _, q := range res.Requests {
			if q.Error == "" && q.ReadyPods > 0 {
				warmMs = append(warmMs, q.LatencyMs)
			}
		}
	}
	if rerr != nil {
		rf.Notef("replay cut short; what it sent is in %s", rf.Path())
		return fmt.Errorf("replay: %w", rerr)
	}
	// Every policy's scales from zero are the same arm's starts: the
	// simulator draws from all of them.
	var rows []record.Replay
	var startMs []float64
	for _, res := range results {
		rp, starts := knative.ReplayTotals(res, tr.Duration)
		rp.Traffic, rp.Seed, rp.DurationS, rp.Arm = tr.Name, o.Seed, tr.Duration, o.Arm
		rows = append(rows, rp)
		startMs = append(startMs, starts...)
	}
	warm := 0.0
	if len(warmMs) > 0 {
		warm = stats.Quantile(warmMs, 0.5)
	}
	var views []replayView
	for i := range rows {
		rp := &rows[i]
		if err := cost.SimulateReplay(rp, arrivals, tr.Duration, ks[i], startMs, warm, 0, o.Seed); err != nil {
			return err
		}
		agrees := "yes"
		if !rp.Agrees {
			agrees = "no"
		}
		views = append(views, replayView{rp.Policy, rp.Requests, rp.Cold, rp.SimColdMean, fmt.Sprintf("%d–%d", rp.SimColdP5, rp.SimColdP95), rp.ColdDiffPct, agrees,
			rp.Starts, rp.SimStarts, rp.PodSeconds, rp.SimInstanceSeconds, rp.ColdMedianMs, rp.AnsweredWarm, rp.Errors})
	}
	if err := cliopts.AddAll(rf, record.ReplayKind, rows); err != nil {
		return err
	}
	rf.Notef("results in %s", rf.Path())
	if o.Output == render.Table || o.Output == render.Markdown {
		fmt.Fprintf(w, "traffic %s: %d requests over %s to %s, one Service per policy, grace %s (the cluster's); simulator agrees within ±%.0f%% of the real cold requests\n",
			tr.Name, len(arrivals), secsText(tr.Duration), o.Arm, cfg.ScaleToZeroGracePeriod, record.ReplayTolerancePct)
		if o.Output == render.Markdown {
			fmt.Fprintln(w)
		}
	}
	if o.Output == render.JSON || o.Output == render.CSV {
		return render.Write(w, o.Output, rows)
	}
	return render.Write(w, o.Output, views)
}

func secsText(s float64) string { return time.Duration(s * float64(time.Second)).String() }
