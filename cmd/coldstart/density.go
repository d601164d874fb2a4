package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/coldstart-go/coldstart/campaign"
	"github.com/coldstart-go/coldstart/cmd/internal/cliopts"
	"github.com/coldstart-go/coldstart/internal/render"
	"github.com/coldstart-go/coldstart/internal/stats"
	"github.com/coldstart-go/coldstart/prober"
	"github.com/coldstart-go/coldstart/record"
)

// densityOptions are coldstart density's flags.
type densityOptions struct {
	serverOptions
	Instances int
	Transport string
	Timeout   time.Duration
}

func newDensityCmd(run func(context.Context, *densityOptions, io.Writer) error) *cobra.Command {
	o := &densityOptions{serverOptions: newServerOptions(defaultArms), Instances: 8, Transport: "tcp", Timeout: 30 * time.Second}
	cmd := &cobra.Command{
		Use:   "density [flags] [PKG] [-- SERVER ARGS...]",
		Short: "Start N idle instances of each arm side by side and report PSS and RSS per instance",
		Long: `density starts --instances idle instances of each arm at once, waits until every one
answers its readiness probe, and reads each one's memory: PSS (shared pages divided among
the instances sharing them: what one more instance really costs) and RSS. A UPX binary
unpacks into private memory, so its instances share no pages: PSS shows it, RSS hides it.
Each arm's PSS per instance is set against the --baseline arm's: the ratio, its interval,
the p-value and the verdict, lower or higher.`,
		Example: "  coldstart density --instances 8 --arms static,upx",
		RunE: func(cmd *cobra.Command, args []string) error {
			o.SetArgs(cmd, args)
			if err := o.validate(); err != nil {
				return err
			}
			return run(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	o.serverOptions.bind(cmd)
	f := cmd.Flags()
	f.IntVar(&o.Instances, "instances", o.Instances, "idle instances of each arm to run side by side")
	f.StringVar(&o.Transport, "transport", o.Transport, "where servers listen: tcp or unix")
	timeoutVar(f, &o.Timeout, "start-timeout", "give up on one instance's start after this long (spawn to ready)")
	f.Lookup("budget").Usage = "one CPU and memory budget for every instance, e.g. cores=0.5,mem=256Mi (max = none)"
	return cmd
}

func (o *densityOptions) validate() error {
	if err := o.serverOptions.validate(); err != nil {
		return err
	}
	if o.Instances < 1 {
		return fmt.Errorf("--instances: %d, want at least 1", o.Instances)
	}
	if o.Transport != "tcp" && o.Transport != "unix" {
		return fmt.Errorf("--transport: %q, want tcp or unix", o.Transport)
	}
	if n := len(o.Budgets.Budgets); n != 1 {
		return fmt.Errorf("--budget: %s is %d budgets; density runs every instance under one", o.Budgets.String(), n)
	}
	if o.Addr != "" {
		return fmt.Errorf("--addr: density runs several instances side by side; each needs its own address")
	}
	return nil
}

func runDensity(ctx context.Context, o *densityOptions, w io.Writer) error {
	checker, rf, built, err := o.begin(ctx, "density", o.Transport)
	defer built.Close()
	if err != nil {
		return err
	}
	d := campaign.Density{
		Arms: built.Arms, Budget: o.Budgets.Budgets[0], Instances: o.Instances, Transport: campaign.Transport(o.Transport),
		Checker: checker, Wait: prober.WaitOptions{Timeout: o.Timeout}, Progress: o.Progress(), Log: o.Log(),
	}
	var samples []campaign.DensitySample
	rows, err := d.Run(ctx, func(s campaign.DensitySample) error {
		samples = append(samples, s)
		return rf.Add("density_sample", s)
	})
	base := record.CompareDensity(rows, samples, o.Baseline, stats.DefaultConfidence, stats.DefaultMinEffect)
	if rerr := cliopts.AddAll(rf, "density", rows); rerr != nil && err == nil {
		err = rerr
	}
	return rf.End(w, densityRows(o.Output, rows, base), err, built)
}

// densityRows prints the rows in the -o format: at a terminal (-o table)
// the narrow table writeDensityText writes; json, csv and markdown keep
// every field.
func densityRows(f render.Format, rows []campaign.DensityRow, base string) func(io.Writer) error {
	if f != render.Table {
		return cliopts.Rows(f, rows)
	}
	return func(w io.Writer) error { return writeDensityText(w, rows, base) }
}

// writeDensityText writes density's rows as a person reads them at a
// terminal: a line of what every row shares (instances, budget,
// baseline), then a table of each arm's memory per instance (median PSS,
// its ratio to the baseline's with the interval and verdict, anonymous
// PSS, RSS), the totals over its instances and the binary's size. The
// names carry no units; every figure is MiB.
func writeDensityText(w io.Writer, rows []campaign.DensityRow, base string) error {
	if len(rows) == 0 {
		return nil
	}
	head := fmt.Sprintf("%d idle instances per arm; budget %s; per instance: median PSS, anonymous PSS, RSS", rows[0].Instances, rows[0].Budget)
	if base != "" {
		head += "; baseline " + base
	}
	fmt.Fprintln(w, cliopts.Wrap(head, textWidth, "  "))
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join([]string{"arm", "PSS", cliopts.VsHeader(base), "anon", "RSS", "total PSS", "total RSS", "size"}, "\t"))
	for _, r := range rows {
		cells := []string{r.Arm, mibText(r.PSSBytes), cliopts.VsTextIn(r.VsBaseline, base, fmt.Sprintf("(no CI: %d instances)", r.N)), mibText(r.PSSAnonBytes), mibText(r.RSSBytes), mibText(r.TotalPSSBytes), mibText(r.TotalRSSBytes), mibText(r.SizeBytes)}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}
