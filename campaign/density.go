package campaign

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/coldstart-go/coldstart/budget"
	"github.com/coldstart-go/coldstart/internal/procfs"
	"github.com/coldstart-go/coldstart/internal/progress"
	"github.com/coldstart-go/coldstart/internal/stats"
	"github.com/coldstart-go/coldstart/launch"
	"github.com/coldstart-go/coldstart/prober"
	"github.com/coldstart-go/coldstart/record"
)

// Density configures a density measurement: N idle instances of each arm
// side by side, each ready, then their memory read.
type Density struct {
	Arms      []Arm
	Budget    budget.Budget
	Instances int
	Transport Transport
	Checker   prober.Checker
	Wait      prober.WaitOptions
	// Progress gets each instance as it is ready, through progress.For: a
	// line per instance, or a live bar when it is a progress.Terminal; the
	// total is arms × Instances (nil = quiet). Log gets each spawned
	// command line (-v).
	Progress io.Writer
	Log      io.Writer
}

// DensityRow is one arm's memory with Instances idle instances running
// (record.DensityRow).
type DensityRow = record.DensityRow

// DensitySample is one instance's memory, a raw row (record.DensitySample).
type DensitySample = record.DensitySample

// Run starts the instances of one arm at a time, waits until all answer,
// lets them settle, reads each one's memory, and stops them all. An arm
// that fails ends the measurement, but for a variant (Arm.Variant): it is
// left out, the others measured, and its error joined to Run's.
func (d Density) Run(ctx context.Context, onSample func(DensitySample) error) ([]DensityRow, error) {
	if d.Instances <= 0 {
		return nil, fmt.Errorf("instances: %d, want at least 1", d.Instances)
	}
	checker := d.Checker
	if checker == nil {
		checker = prober.Health{}
	}
	prog := progress.For(d.Progress)
	prog.Start(len(d.Arms)*d.Instances, "instances ready")
	defer prog.Done() // before the caller prints results or the error
	var rows []DensityRow
	var failed []error
	for _, a := range d.Arms {
		row, err := d.arm(ctx, a, checker, prog, onSample)
		if err != nil && a.Variant.IsVariant() && ctx.Err() == nil {
			// A setting its server refuses fails the variant alone.
			failed = append(failed, a.variantErr(err))
			continue
		}
		if err != nil {
			return rows, errors.Join(append(failed, err)...)
		}
		rows = append(rows, row)
	}
	return rows, errors.Join(failed...)
}

func (d Density) arm(ctx context.Context, a Arm, checker prober.Checker, prog progress.Reporter, onSample func(DensitySample) error) (DensityRow, error) {
	row := DensityRow{Arm: a.Name, Budget: d.Budget.String(), Instances: d.Instances, SizeBytes: a.SizeBytes, Variant: a.Variant}
	var insts []launch.Instance
	var cleanups []func()
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		for _, in := range insts {
			in.Stop(sctx)
		}
		for _, c := range cleanups {
			c()
		}
	}()
	for i := 0; i < d.Instances; i++ {
		t, cleanup, err := newTarget(d.Transport, a.Target, checker)
		if err != nil {
			return row, err
		}
		cleanups = append(cleanups, cleanup)
		// Restored copies of one checkpoint all listen at its address
		// (criu restores each listener with SO_REUSEADDR semantics): only
		// the first finds it free, and readiness there is any copy's.
		if i == 0 || a.Target.Address == "" {
			if err := prober.EnsureFree(ctx, t); err != nil {
				return row, fmt.Errorf("%s: %w", a.Name, err)
			}
		}
		if err := a.prepare(ctx, t); err != nil {
			return row, err
		}
		inst, _, err := a.startReady(ctx, t, d.Budget, nil, d.Log, launch.ReadyOptions{
			Checker: checker, Wait: d.Wait, Name: fmt.Sprintf("%s instance %d", a.Name, i+1)})
		if err != nil {
			return row, err // StartReady stopped it
		}
		insts = append(insts, inst)
		prog.Step(fmt.Sprintf("density %-8s instance %d/%d ready", a.Name, i+1, d.Instances))
	}
	// Idle instances settle (the Go runtime returns start-up memory and
	// background goroutines finish) before memory is read.
	select {
	case <-time.After(500 * time.Millisecond):
	case <-ctx.Done():
		return row, ctx.Err()
	}
	var pss, anon, rss []float64
	for i, in := range insts {
		select {
		case <-in.Done():
			return row, in.Err()
		default:
		}
		m, err := procfs.Host.Mem(in.PID())
		if err != nil {
			return row, fmt.Errorf("%s instance %d: %w", a.Name, i+1, err)
		}
		s := DensitySample{Arm: a.Name, Budget: row.Budget, Instance: i + 1, PID: in.PID(), RSSBytes: m.RSS, PSSBytes: m.PSS, PSSAnonBytes: m.Anon}
		if err := onSample(s); err != nil {
			return row, fmt.Errorf("record sample: %w", err)
		}
		pss, anon, rss = append(pss, float64(m.PSS)), append(anon, float64(m.Anon)), append(rss, float64(m.RSS))
		row.TotalPSSBytes += m.PSS
		row.TotalRSSBytes += m.RSS
	}
	m := stats.MedianCI(pss, stats.DefaultConfidence)
	row.N, row.PSSBytes = len(pss), int64(m.Value)
	if m.Finite() {
		lo, hi := int64(m.Low), int64(m.High)
		row.PSSCILowBytes, row.PSSCIHighBytes = &lo, &hi
	}
	row.PSSAnonBytes = int64(record.Quantiles(anon, 0.5)[0])
	row.RSSBytes = int64(record.Quantiles(rss, 0.5)[0])
	return row, nil
}
