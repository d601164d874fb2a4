package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/coldstart-go/coldstart/budget"
	"github.com/coldstart-go/coldstart/campaign"
	"github.com/coldstart-go/coldstart/cmd/internal/cliopts"
	"github.com/coldstart-go/coldstart/internal/render"
	"github.com/coldstart-go/coldstart/internal/stats"
	"github.com/coldstart-go/coldstart/knative"
	"github.com/coldstart-go/coldstart/prober"
	"github.com/coldstart-go/coldstart/record"
)

// fixedRuns is --runs where auto cannot be the default: on Knative and
// with --burst.
const fixedRuns = 20

// runOptions are coldstart run's flags.
type runOptions struct {
	serverOptions
	Runs int
	// AutoRuns (--runs auto): rounds until every median is known within
	// Precision, at most MaxRuns; Runs is then 0.
	AutoRuns  bool
	Precision float64
	MaxRuns   int
	// Confidence is the level of each median's interval.
	Confidence float64
	Transport  string
	PageCache  string
	Timeout    time.Duration
	PinProber  budget.CPUList
	PinServer  budget.CPUList
	Polls      string
	// Wide prints every summary column, as -o csv does; Phases adds the
	// table of phase medians.
	Wide   bool
	Phases bool
	// --on knative: --on, --via, the cluster and its Services, and run's
	// own --target and --traces.
	cliopts.Cluster
	Target string
	Traces string
	// Levers are --lever, as given (--on knative).
	Levers []string
	// PullImages are --pull-image ARM=PATH, as given: the image files
	// a pull lever serves.
	PullImages []string
	// Parallel is --parallel, the Ns of Services scaled from zero at
	// once (--on knative).
	Parallel string
	// BurstRequests is --burst-requests: requests at once at each arm's
	// Service at zero (--on knative).
	BurstRequests int
	// Burst (--burst) is the list of burst sizes; BurstGiven says the
	// flag was given (burst.go).
	Burst      string
	BurstGiven bool
}

func newRunCmd(run func(context.Context, *runOptions, io.Writer) error) *cobra.Command {
	o := &runOptions{serverOptions: newServerOptions(defaultArms), AutoRuns: true, Transport: "tcp", PageCache: "warm", Timeout: 30 * time.Second, Confidence: stats.DefaultConfidence, Cluster: cliopts.NewCluster(),
		Precision: stats.DefaultPrecision, MaxRuns: 60}
	cmd := &cobra.Command{
		Use:   "run [flags] [PKG] [-- SERVER ARGS...]",
		Short: "Time each arm from process start to first healthy gRPC reply, many times, arms interleaved",
		Long: `run builds each arm of PKG (default: the bundled sample server), then starts each arm as a
fresh process in rounds, arms interleaved after one uncounted warm-up round, and times
spawn to first ready RPC over a fresh gRPC channel per attempt. By default (--runs auto)
rounds go on until every median is known within --precision, at most --max-runs; --runs N
counts N. It prints one row per arm and budget and writes every probe to
results/<YYYYMMDD-HHMMSS>_coldstart.jsonl as it goes.

Server arguments after -- (and --env values) may name {addr}, {host}, {port}, {socket}
(a Unix socket instead of a port, with --transport unix), {http_addr} and {debug_addr}
(free loopback ports of their own), the same placeholders steady run fills.`,
		Example: `  coldstart run
  coldstart run -n 50 --arms default,static,upx
  coldstart run --budget 'cpus=0;cores=0.5' --arms default,upx
  coldstart run --bin ./myserver --arms default,upx -- --listen={addr}
  coldstart run --burst 1,2,4,8,16 --budget 'cores=1;cores=2' --arms default,static,upx
  coldstart run --on knative --namespace coldstart --arms image --target 203.0.113.7:80`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.SetArgs(cmd, args)
			o.BurstGiven = cmd.Flags().Changed("burst")
			if !cmd.Flags().Changed("runs") && (o.Knative() || o.BurstGiven) {
				// Knative's starts and bursts take a fixed count
				// (--runs auto refuses them).
				o.Runs, o.AutoRuns = fixedRuns, false
			}
			if err := o.validate(); err != nil {
				return err
			}
			return run(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	o.serverOptions.bind(cmd)
	// On Knative the probes route by each Service's host: TLS in front of
	// the activator holds the certificate for it.
	sn := f.Lookup("tls-server-name")
	sn.Usage = strings.TrimSuffix(sn.Usage, ")") + "; --on knative: each Service's host, the probe's :authority)"
	f.VarP(&cliopts.AutoCount{N: &o.Runs, Auto: &o.AutoRuns, Unit: "runs"}, "runs", "n", "counted cold starts per arm and budget (after one warm-up round), or auto: rounds until every median's interval is within --precision, at most --max-runs (with --on knative or --burst the default is "+strconv.Itoa(fixedRuns)+")")
	f.Float64Var(&o.Precision, "precision", o.Precision, "--runs auto: stop once every arm's median interval reaches no farther than this fraction of the median on either side (0.03 = ±3%)")
	f.IntVar(&o.MaxRuns, "max-runs", o.MaxRuns, "--runs auto: stop after this many counted rounds, however wide the intervals")
	f.Float64Var(&o.Confidence, "confidence", o.Confidence, "confidence level of each median's interval, between 0 and 1")
	f.StringVar(&o.Transport, "transport", o.Transport, "where servers listen: tcp (a free loopback port) or unix (a socket)")
	f.StringVar(&o.PageCache, "page-cache", o.PageCache, "warm (files as the last start left them) or cold (evict each arm's binary, shared libraries and image root filesystem before every start, with posix_fadvise, and record how many pages were resident)")
	timeoutVar(f, &o.Timeout, "start-timeout", "give up on one cold start after this long")
	f.Var(&o.PinProber, "pin-prober", "CPUs for the prober, e.g. 1 or 2-3 (\"\" = those outside the server's CPU set)")
	f.Var(&o.PinServer, "pin-server", "CPUs for the server, e.g. 0 (\"\" = as --budget says); same as --budget cpus=LIST")
	o.Cluster.BindOn(cmd, "where to start servers: local (processes and containers here) or knative (the Services coldstart deploy made)",
		"--on knative: what --target is: ingress (probes carry the Service's host) or activator (Knative's activator, e.g. its Service on port 81; probes carry the revision's host REV.NS.svc.cluster.local, no ingress hop)")
	f.StringVar(&o.Target, "target", "", "--on knative: host:port of the ingress to probe (\"\" = the Service's cluster-local address, from inside the cluster)")
	f.StringVar(&o.Traces, "traces", "", "--on knative: HOST:PORT to receive the Zipkin spans Knative's activator and queue-proxy export (their config-tracing: backend zipkin, zipkin-endpoint http://HOST:PORT/api/v2/spans); probes carry a sampled traceparent and samples gain the phases activator_received, activator_released, queue_proxy_received")
	f.StringArrayVar(&o.Levers, "lever", nil, "--on knative: also measure each arm's variant under this platform lever, the Service coldstart deploy --lever made, in the same rounds, compared against the arm (repeat): "+strings.Join(knative.LeverNames(), ", "))
	f.StringArrayVar(&o.PullImages, "pull-image", nil, "--lever pull=...: ARM=PATH, arm ARM's image as a file (an OCI layout or an image tarball, as coldstart build's image arm and docker save write) for the pull levers to serve, salted each round (repeat; an arm not given: the image its Service runs, read from its registry)")
	f.StringVar(&o.Parallel, "parallel", "", "--on knative: for each N in this list (e.g. 1,5,25), scale N Services of each arm from zero at once, each proven at zero, probed together from one t0 (the copies coldstart deploy --parallel with the same list made); N=1 is always measured")
	f.IntVar(&o.BurstRequests, "burst-requests", 0, "--on knative: send this many requests at once at each arm's Service while it is at zero, and record the pods the autoscaler made for them and when each request was answered (deploy --container-concurrency C caps each pod's share)")
	f.StringVar(&o.Polls, "poll-interval", "", pollIntervalHelp())
	f.BoolVar(&o.Wide, "wide", false, "print every summary column in the table (phases, cgroup, prober and launcher figures), as -o csv has them")
	f.BoolVar(&o.Phases, "phases", false, "also print each phase's median (process_started, accepting, first_rpc, ...); -v does too")
	f.StringVar(&o.Burst, "burst", "", burstHelp)
	cmd.MarkFlagsMutuallyExclusive("pin-server", "budget")
	return cmd
}

func (o *runOptions) validate() error {
	if err := o.validateBurst(); err != nil {
		return err
	}
	if err := o.Cluster.Check(&o.Common, o.Target); err != nil {
		return err
	}
	if o.Variants.Given() && o.Knative() {
		return fmt.Errorf("--variant, --sweep: only with --on local (a Service on the cluster runs as it was deployed)")
	}
	if o.Variants.Given() && o.BurstGiven {
		return fmt.Errorf("--variant, --sweep: not with --burst; measure variants' cold starts with coldstart run, one start at a time")
	}
	if err := o.serverOptions.validate(); err != nil {
		return err
	}
	if !o.AutoRuns && o.Runs < 1 {
		return fmt.Errorf("--runs: %d, want at least 1, or auto", o.Runs)
	}
	if err := stats.CheckConfidence(o.Confidence); err != nil {
		return fmt.Errorf("--confidence: %w", err)
	}
	if err := stats.CheckPrecision(o.Precision); err != nil {
		return fmt.Errorf("--precision: %w", err)
	}
	if o.MaxRuns < campaign.MinAutoRuns {
		return fmt.Errorf("--max-runs: %d, want at least %d (the fewest runs whose median has an interval)", o.MaxRuns, campaign.MinAutoRuns)
	}
	if o.AutoRuns && o.Knative() {
		return fmt.Errorf("--runs auto: only with --on local")
	}
	if o.Transport != "tcp" && o.Transport != "unix" {
		return fmt.Errorf("--transport: %q, want tcp or unix", o.Transport)
	}
	if pc, err := campaign.ParsePageCache(o.PageCache); err != nil {
		return fmt.Errorf("--page-cache: %w", err)
	} else if pc == campaign.Cold && o.On != "local" {
		return fmt.Errorf("--page-cache cold evicts files on this machine: it goes with --on local")
	}
	if !o.Knative() && o.Target != "" {
		return fmt.Errorf("--target: only with --on knative")
	}
	if !o.Knative() && o.Traces != "" {
		return fmt.Errorf("--traces: only with --on knative")
	}
	if !o.Knative() && len(o.Levers) > 0 {
		return fmt.Errorf("--lever: only with --on knative (locally, a setting is a --variant)")
	}
	if _, err := knative.ParseLevers(o.Levers); err != nil {
		return fmt.Errorf("--lever: %w", err)
	}
	if _, err := o.pullImages(); err != nil {
		return err
	}
	if o.BurstRequests != 0 {
		switch {
		case o.BurstRequests < 1:
			return fmt.Errorf("--burst-requests: %d, want at least 1 request", o.BurstRequests)
		case !o.Knative():
			return fmt.Errorf("--burst-requests: only with --on knative (locally, --burst starts N instances at once)")
		case o.Parallel != "" || len(o.Levers) > 0:
			return fmt.Errorf("--burst-requests: not with --parallel or --lever")
		}
	}
	if o.Parallel != "" {
		if _, err := campaign.BurstSizes(o.Parallel); err != nil {
			return fmt.Errorf("--parallel: %w", err)
		}
		switch {
		case !o.Knative():
			return fmt.Errorf("--parallel: only with --on knative (locally, --burst starts N instances at once)")
		case len(o.Levers) > 0:
			return fmt.Errorf("--parallel: not with --lever; measure a lever one start at a time")
		}
	}
	if o.Traces != "" {
		if _, _, err := net.SplitHostPort(o.Traces); err != nil {
			return fmt.Errorf("--traces: %q, want HOST:PORT to listen on (an address the cluster's pods reach): %v", o.Traces, err)
		}
	}
	if o.Timeout <= 0 {
		return fmt.Errorf("--start-timeout: %v, want a positive duration", o.Timeout)
	}
	if _, err := o.fixedAddr(); err != nil {
		return err
	}
	if _, err := campaign.ParsePollIntervals(o.Polls); err != nil {
		return fmt.Errorf("--poll-interval: %w", err)
	}
	return nil
}

// budgets are --budget's, or the one --pin-server makes.
func (o *runOptions) budgets() []budget.Budget {
	if len(o.PinServer) > 0 {
		return []budget.Budget{{CPUs: o.PinServer}}
	}
	return o.Budgets.Budgets
}

// runColdstart builds the arms and runs the cold-start campaign.
func runColdstart(ctx context.Context, o *runOptions, w io.Writer) error {
	if o.Knative() {
		return runOnKnative(ctx, o, w)
	}
	if o.BurstGiven {
		return runBurst(ctx, o, w)
	}
	checker, rf, built, err := o.begin(ctx, "coldstart", o.Transport)
	defer built.Close()
	if err != nil {
		return err
	}
	addr, _ := o.fixedAddr()
	pc, _ := campaign.ParsePageCache(o.PageCache)
	c := campaign.ColdStart{
		Arms: built.Arms, Addr: addr, Budgets: o.budgets(), Runs: o.Runs, Transport: campaign.Transport(o.Transport), PageCache: pc,
		Checker: checker, Wait: prober.WaitOptions{Timeout: o.Timeout}, ProberCPUs: o.PinProber,
		Progress: o.Progress(), Log: o.Log(), Confidence: o.Confidence,
		Noise: func(n campaign.Noise) error { return rf.Add("noise", n) },
		Stopped: func(s campaign.Stop) error {
			rf.Notef("%s", s)
			return rf.Add("stop", s)
		},
	}
	if o.AutoRuns {
		c.Precision, c.MaxRuns = o.Precision, o.MaxRuns
	}
	c.Polls, _ = campaign.ParsePollIntervals(o.Polls)
	var samples []prober.Sample
	sums, err := c.Run(ctx, func(s prober.Sample) error {
		samples = append(samples, s)
		return rf.Add("sample", s)
	})
	record.CompareToBaseline(sums, samples, o.Baseline, o.Confidence, stats.DefaultMinEffect)
	if rerr := cliopts.AddAll(rf, "summary", sums); rerr != nil && err == nil {
		err = rerr
	}
	if err := rf.End(w, o.printSummaries(sums), err, built); err != nil || len(c.Polls) == 0 {
		return err
	}
	return writePolls(w, o.Output, sums)
}

// printSummaries prints the summaries in the -o format: at a terminal
// (-o table) the narrow table with verdicts against the baseline, unless
// --wide.
func (o *runOptions) printSummaries(sums []campaign.Summary) func(io.Writer) error {
	if o.Output != render.Table || o.Wide {
		return cliopts.Rows(o.Output, sums)
	}
	return func(w io.Writer) error {
		return writeColdText(w, sums, coldTextOptions{Confidence: o.Confidence, Phases: o.Phases || o.Verbose, Warmup: true, MinEffect: stats.DefaultMinEffect})
	}
}
