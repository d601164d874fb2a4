package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/coldstart-go/coldstart/cmd/internal/cliopts"
	"github.com/coldstart-go/coldstart/cost"
	"github.com/coldstart-go/coldstart/internal/render"
	"github.com/coldstart-go/coldstart/record"
	"github.com/coldstart-go/coldstart/report"
)

// costOptions are coldstart cost's flags.
type costOptions struct {
	// Results are the campaign files (or directories of them).
	Results []string
	trafficFlags
	Policies []string
	Arms     []string
	Platform string
	Budget   string
	Service  time.Duration
	// Concurrency is requests per instance at once (0 = unlimited).
	Concurrency int
	Constraint  string
	Output      render.Format
	// ResultsDir gets results/<ts>_cost.jsonl ("" = none).
	ResultsDir string
	stderr     io.Writer

	policies   []cost.Policy
	constraint *cost.Constraint
}

// trafficFlags name traffic models, for cost and replay: trace files and
// synthetic arrivals, each one model.
type trafficFlags struct {
	// Traces are trace files; Arrivals synthetic traffic specs.
	Traces      []string
	TraceField  string
	TraceSelect string
	Arrivals    []string
	Seed        uint64
	// Duration is the synthetic traffic's length (and a trace's, when set).
	Duration    time.Duration
	durationSet bool
}

// bindTraffic adds the traffic flags; seedUse says what else the seed draws.
func (t *trafficFlags) bindTraffic(f *pflag.FlagSet, seedUse string) {
	f.StringArrayVar(&t.Traces, "trace", nil, "a trace file of request arrivals, one traffic model (repeatable): timestamps (seconds or RFC 3339) one per line, CSV, JSON Lines, or an Azure Functions 2019 per-minute day file")
	f.StringVar(&t.TraceField, "trace-field", "", "the CSV column or JSON field holding the timestamps (\"\" = timestamp, time or ts)")
	f.StringVar(&t.TraceSelect, "trace-select", "", "in an Azure per-minute file, the app (app=HASH, its functions summed) or function (function=HASH) to replay (\"\" = the only one)")
	f.StringArrayVar(&t.Arrivals, "arrivals", nil, "synthetic traffic, one traffic model (repeatable): poisson:RATE, gamma:RATE,cv=X, periodic:DUR, diurnal:PEAK[,trough=RATE][,period=DUR], onoff:RATE,on=DUR,off=DUR or population:N; RATE as 1/s, 2/min, 1/h")
	f.Uint64Var(&t.Seed, "seed", t.Seed, "seed of the synthetic arrivals, the Azure minutes' placement"+seedUse)
	f.DurationVar(&t.Duration, "duration", t.Duration, "length of the synthetic traffic; a trace's own length (to the minute after its last request; an Azure day file 24h) unless given")
}

// checkTraffic refuses no traffic, a duration that is not positive and an
// arrivals spec that does not parse; changed says --duration was given.
func (t *trafficFlags) checkTraffic(changed bool) error {
	t.durationSet = changed
	if len(t.Traces)+len(t.Arrivals) == 0 {
		return errors.New("no traffic: give --trace FILE or --arrivals SPEC (such as --arrivals poisson:1/s)")
	}
	if t.Duration <= 0 {
		return fmt.Errorf("--duration: %v, want a positive duration", t.Duration)
	}
	for _, a := range t.Arrivals {
		// Parsed over a second: the spec is checked, nothing is drawn.
		if _, err := cost.ParseArrivals(a, 1, t.Seed); err != nil {
			return fmt.Errorf("--arrivals: %w", err)
		}
	}
	return nil
}

// defaultPolicies are the policies compared when --policy is not given:
// Knative's defaults, with a 5-minute scale-down delay, with a pod kept,
// the FaaS keep-alive, and the study's hybrid.
var defaultPolicies = []string{"knative", "knative:delay=5m", "knative:min=1", "keepalive:10m", "hybrid"}

func newCostCmd(run func(context.Context, *costOptions, io.Writer) error) *cobra.Command {
	o := &costOptions{trafficFlags: trafficFlags{Seed: 1, Duration: 24 * time.Hour}, Platform: cost.Local, Service: 10 * time.Millisecond,
		Output: render.Table, ResultsDir: "results"}
	cmd := &cobra.Command{
		Use:   "cost [flags] RESULTS...",
		Short: "Figure what scale-to-zero costs each arm under a traffic model and scaling policies: cold requests, added latency, instance-hours, idle memory",
		Long: `cost replays a traffic model through each scaling policy with each arm's measured cold
starts, in a discrete-event simulation, and prints per traffic model, arm and policy: the
share of requests that waited for an instance to start, the added latency's p50, p99 and
p99.9 over all requests (a start sampled from the arm's measured ones), instance-hours,
GiB-hours of idle memory (ready instances serving nothing, times the arm's idle PSS) and
CPU-seconds spent starting, each per day; then the Pareto front (p99 added latency against
idle GiB-hours) and, with --constraint, the cheapest arm and policy meeting it.

RESULTS are coldstart run files (local, or --platform knative for a Knative campaign's
scales from zero) and a coldstart density file for the idle memory. Traffic is --trace
(timestamps one per line, CSV with a header naming the column, JSON Lines, or the Azure
Functions 2019 per-minute layout) or --arrivals (poisson, gamma, periodic, diurnal,
onoff, population); each one given is a traffic model. Policies: knative (the KPA's
stable window, grace period, pod retention, scale-down delay, min and initial scale,
target concurrency, checked against Knative's own limits), keepalive:T, and hybrid (the
idle-time histogram policy of "Serverless in the Wild"). The same seed gives the same
figures. Rows go to results/<YYYYMMDD-HHMMSS>_cost.jsonl, which coldstart report reads.
See docs/cost.md for what is modelled and what is not.`,
		Example: `  coldstart cost --arrivals poisson:1/s --constraint 'p99<=300ms' results/
  coldstart cost --arrivals 'gamma:1/h,cv=2' --duration 168h --policy knative --policy keepalive:10m results/
  coldstart cost --platform knative --arms static,upx --arrivals 'onoff:5/s,on=2m,off=28m' results/
  coldstart cost --trace d01.csv --trace-select app=5f1c... --policy hybrid results/`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Results = args
			o.stderr = cmd.ErrOrStderr()
			if err := o.checkTraffic(cmd.Flags().Changed("duration")); err != nil {
				return err
			}
			if err := o.validate(); err != nil {
				return err
			}
			return run(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	o.bindTraffic(f, " and the start samples drawn")
	f.StringArrayVar(&o.Policies, "policy", nil, "a scaling policy (repeatable): knative[:grace=30s,window=60s,retention=0,delay=0,min=0,initial=1,target=100,utilization=70,allowzero=false], keepalive:DURATION or hybrid[:range=4h,bin=1m,head=5,tail=99,margin=0.1,min=10,cv=2,fallback=4h] (default "+strings.Join(defaultPolicies, ", ")+")")
	f.StringSliceVar(&o.Arms, "arms", nil, "arms to cost, comma-separated (default: every arm with cold starts on the platform)")
	f.StringVar(&o.Platform, "platform", o.Platform, "whose start samples a cold request waits for: local (a budget's spawn → first RPC) or knative (a scale from zero through the activator)")
	f.StringVar(&o.Budget, "budget", "", "the local budget whose samples are used, and whose start CPU Knative's starts take (\"\" = the first measured)")
	f.DurationVar(&o.Service, "service-time", o.Service, "how long an instance works on one request (not counted as added latency)")
	f.IntVar(&o.Concurrency, "concurrency", 0, "requests one instance takes at once (0 = unlimited, Knative's containerConcurrency default)")
	f.StringVar(&o.Constraint, "constraint", "", "answer which arm and policy meets it at the least idle memory: p50, p99 or p99.9 <= a duration (p99<=300ms), or cold<=PERCENT (\"\" = none)")
	f.VarP(&o.Output, "output", "o", "output format: table, json, csv or markdown")
	f.StringVar(&o.ResultsDir, "results-dir", o.ResultsDir, "directory for the results file (\"\" = write none)")
	cmd.SetFlagErrorFunc(cliopts.FlagError)
	return cmd
}

func (o *costOptions) validate() error {
	if o.Platform != cost.Local && o.Platform != cost.KnativeP {
		return fmt.Errorf("--platform: %q, want local or knative", o.Platform)
	}
	if o.Service < 0 {
		return fmt.Errorf("--service-time: %v, want 0 or more", o.Service)
	}
	if o.Concurrency < 0 {
		return fmt.Errorf("--concurrency: %d, want 0 (unlimited) or more", o.Concurrency)
	}
	specs := o.Policies
	if len(specs) == 0 {
		specs = defaultPolicies
	}
	o.policies = nil
	for _, s := range specs {
		p, err := cost.ParsePolicy(s)
		if err != nil {
			return fmt.Errorf("--policy: %w", err)
		}
		o.policies = append(o.policies, p)
	}
	if o.Constraint != "" {
		c, err := cost.ParseConstraint(o.Constraint)
		if err != nil {
			return fmt.Errorf("--constraint: %w", err)
		}
		o.constraint = &c
	}
	return nil
}

// traffics reads and draws every traffic model.
func (o *trafficFlags) traffics() ([]cost.Traffic, error) {
	var out []cost.Traffic
	for _, path := range o.Traces {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("--trace: %w", err)
		}
		topt := cost.TraceOptions{Field: o.TraceField, Select: o.TraceSelect, Seed: o.Seed}
		if o.durationSet {
			topt.Duration = o.Duration.Seconds()
		}
		tr, err := cost.ReadTrace(filepath.Base(path), f, topt)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("--trace: %w", err)
		}
		out = append(out, tr)
	}
	for _, a := range o.Arrivals {
		tr, err := cost.ParseArrivals(a, o.Duration.Seconds(), o.Seed)
		if err != nil {
			return nil, fmt.Errorf("--arrivals: %w", err)
		}
		out = append(out, tr)
	}
	return out, nil
}

// costReport is what cost prints: the rows and, with --constraint, one
// answer per traffic model.
type costReport struct {
	Rows    []record.CostRow    `json:"rows"`
	Answers []record.CostAnswer `json:"answers"`
}

func runCost(ctx context.Context, o *costOptions, w io.Writer) error {
	rep, err := report.Load(o.Results...)
	if err != nil {
		return err
	}
	for _, wn := range rep.Warnings {
		fmt.Fprintf(o.stderr, "coldstart: cost: %s\n", wn)
	}
	arms, err := cost.ArmsFrom(rep, o.Platform, o.Budget, o.Arms)
	if err != nil {
		flag := "--arms"
		if strings.HasPrefix(err.Error(), "budget") {
			flag = "--budget"
		}
		return fmt.Errorf("%s: %w", flag, err)
	}
	trs, err := o.traffics()
	if err != nil {
		return err
	}
	var out costReport
	for _, tr := range trs {
		if err := ctx.Err(); err != nil {
			return err
		}
		rows, err := cost.Rows(tr, arms, o.policies, cost.Options{ServiceSeconds: o.Service.Seconds(), Concurrency: o.Concurrency, Seed: o.Seed})
		if err != nil {
			return err
		}
		out.Rows = append(out.Rows, rows...)
		if o.constraint != nil {
			out.Answers = append(out.Answers, cost.Answer(rows, tr.Name, *o.constraint))
		}
	}
	if o.ResultsDir != "" {
		notes := map[string]string{"cost_inputs": strings.Join(o.Results, " "), "cost_platform": o.Platform}
		rf, err := cliopts.CreateResults("coldstart", o.stderr, o.ResultsDir, "cost", notes)
		if err != nil {
			return err
		}
		if err := cliopts.AddAll(rf, record.CostKind, out.Rows); err != nil {
			return err
		}
		if err := cliopts.AddAll(rf, record.CostAnswerKind, out.Answers); err != nil {
			return err
		}
		rf.Notef("results in %s", rf.Path())
	}
	return writeCost(w, o.Output, out)
}

// costView is a row as the table shows it.
type costView struct {
	Arm      string  `json:"arm"`
	Policy   string  `json:"policy"`
	Cold     float64 `json:"cold_pct" render:"%.2f"`
	P50      float64 `json:"added_p50_ms" render:"%.0f"`
	P99      float64 `json:"added_p99_ms" render:"%.0f"`
	P999     float64 `json:"added_p999_ms" render:"%.0f"`
	InstH    float64 `json:"instance_h_per_day" render:"%.2f"`
	IdleGiBH float64 `json:"idle_gib_h_per_day" render:"%.3f"`
	CPU      float64 `json:"start_cpu_s_per_day" render:"%.2f"`
	Front    string  `json:"front"`
}

// writeCost prints one table per traffic model with its front and
// answer, or the rows and answers as JSON or CSV.
func writeCost(w io.Writer, f render.Format, r costReport) error {
	switch f {
	case render.JSON:
		if r.Answers == nil {
			r.Answers = []record.CostAnswer{}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	case render.CSV:
		return render.Write(w, f, r.Rows)
	}
	var traffics []string
	for _, row := range r.Rows {
		if len(traffics) == 0 || traffics[len(traffics)-1] != row.Traffic {
			traffics = append(traffics, row.Traffic)
		}
	}
	for i, tr := range traffics {
		var views []costView
		var front []string
		var head record.CostRow
		for _, row := range r.Rows {
			if row.Traffic != tr {
				continue
			}
			if head.Traffic == "" {
				head = row
			}
			mark := ""
			if row.Front {
				mark = "*"
				front = append(front, row.Arm+" "+row.Policy)
			}
			views = append(views, costView{row.Arm, row.Policy, row.ColdPct, row.AddedP50Ms, row.AddedP99Ms, row.AddedP999Ms,
				row.InstanceHoursPerDay, row.IdleGiBHoursPerDay, row.StartCPUSecondsPerDay, mark})
		}
		if i > 0 {
			fmt.Fprintln(w)
		}
		title := fmt.Sprintf("traffic %s: %d requests over %s, seed %d; starts from %s samples; idle memory: %s",
			tr, head.Requests, durHours(head.DurationHours), head.Seed, platformWords(head), head.IdleSource)
		if f == render.Markdown {
			fmt.Fprintf(w, "**%s**\n\n", title)
		} else {
			fmt.Fprintf(w, "# %s\n", title)
		}
		if err := render.Write(w, f, views); err != nil {
			return err
		}
		if f == render.Markdown {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "front (p99 added vs idle GiB-h): %s\n", strings.Join(front, "; "))
		for _, a := range r.Answers {
			if a.Traffic == tr {
				if f == render.Markdown {
					fmt.Fprintln(w)
				}
				fmt.Fprintf(w, "answer: %s\n", a.Text)
			}
		}
	}
	return nil
}

func platformWords(r record.CostRow) string {
	if r.Platform == cost.KnativeP {
		return "Knative"
	}
	return "local " + r.Budget
}

func durHours(h float64) string {
	if h >= 48 && h == float64(int(h/24))*24 {
		return fmt.Sprintf("%d days", int(h/24))
	}
	return fmt.Sprintf("%g h", h)
}
