package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/coldstart-go/coldstart/cmd/internal/cliopts"
	"github.com/coldstart-go/coldstart/internal/stats"
	"github.com/coldstart-go/coldstart/record"
	"github.com/coldstart-go/coldstart/steady"
)

// textWidth is the widest line the terminal output aims for, as
// coldstart run's: it fits a 100-column terminal. --wide keeps every
// column instead.
const textWidth = 100

// writeStepText writes run's step rows as a person reads them at a
// terminal: one header line of what every row shares, then per step a
// title, a small table (arm, calls/s, calls/s against the baseline with
// its interval and verdict, p50, p99, server CPU per call, PSS, and
// errors where there are any) and a verdict line that sets each arm's
// calls/s and CPU per call against its baseline. -o json, csv and
// markdown, and --wide, keep every field instead.
//
// Protocols that shared their rounds (Row.RoundProtocols) are then set
// against each other (protocolVerdicts), from rounds, the windows.
func writeStepText(w io.Writer, rows, rounds []steady.Row, base string, confidence float64) error {
	if len(rows) == 0 {
		return nil
	}
	fmt.Fprintln(w, cliopts.Wrap(stepHeader(rows, base), textWidth, "  "))
	budgets := cliopts.OrderedBy(rows, func(r steady.Row) string { return r.Budget })
	for _, key := range cliopts.OrderedBy(rows, stepKey) {
		var step []steady.Row
		for _, r := range rows {
			if stepKey(r) == key {
				step = append(step, r)
			}
		}
		title := stepTitle(step[0])
		if len(budgets) > 1 {
			title = step[0].Budget + ": " + title
		}
		fmt.Fprintln(w)
		fmt.Fprintln(w, title)
		if err := stepTable(w, step, base); err != nil {
			return err
		}
		if line := stepVerdicts(step, base); line != "" {
			fmt.Fprintln(w, cliopts.Wrap(line, textWidth, "  "))
		}
		if line := loadBoundLine(step); line != "" {
			fmt.Fprintln(w, cliopts.Wrap(line, textWidth, "  "))
		}
	}
	if lines := protocolVerdicts(rows, rounds, confidence); len(lines) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "protocols, paired by round (a vs b: a/b):")
		for _, l := range lines {
			fmt.Fprintln(w, cliopts.Wrap(l, textWidth, "  "))
		}
	}
	return nil
}

// protocolVerdicts set the protocols whose steps shared their rounds
// against each other, per budget, arm and step (scenario, payload,
// concurrency, rate), each against each later one (record.ProtocolBefore),
// on calls/s and server CPU per call paired by round, as the verdicts
// against the baseline are: "default sequential 8B c=1: h3 vs h2 calls/s
// 0.80× [0.78, 0.82] slower, CPU per call 1.48× [1.41, 1.55] higher".
// Steps of different connection shapes say each side's.
func protocolVerdicts(rows, rounds []steady.Row, confidence float64) []string {
	step := func(r steady.Row) string {
		return fmt.Sprintf("%s|%s|%s|%s|%d|%d|%g|%s", r.Budget, r.Arm, r.Variant.Of, r.Scenario, r.PayloadBytes, r.Concurrency, r.RateReq, r.Method)
	}
	unit := func(r steady.Row) string {
		return fmt.Sprintf("%s|%s|%s|%d|%d", step(r), r.Protocol, r.Client, r.Conns, r.Depth)
	}
	byUnit := map[string][2]stats.Rounds{} // calls/s, server CPU per call
	for _, w := range rounds {
		if w.Round == 0 {
			continue
		}
		k := unit(w)
		v, ok := byUnit[k]
		if !ok {
			v = [2]stats.Rounds{{}, {}}
		}
		if w.CallsPerS > 0 {
			v[0][w.Round] = w.CallsPerS
		}
		if w.ServerCPUUsPerCall != nil && *w.ServerCPUUsPerCall > 0 {
			v[1][w.Round] = *w.ServerCPUUsPerCall
		}
		byUnit[k] = v
	}
	var out []string
	for i, a := range rows {
		for _, b := range rows[i+1:] {
			x, y := a, b
			if record.ProtocolBefore(y.Protocol, x.Protocol) {
				x, y = y, x
			}
			if step(x) != step(y) || x.Protocol == y.Protocol || !slices.Contains(x.RoundProtocols, y.Protocol) || !slices.Contains(y.RoundProtocols, x.Protocol) {
				continue
			}
			rx, ry := byUnit[unit(x)], byUnit[unit(y)]
			if len(rx[0]) == 0 || len(ry[0]) == 0 {
				continue
			}
			where := fmt.Sprintf("%s %s %dB c=%d", x.Arm, x.Scenario, x.PayloadBytes, x.Concurrency)
			if x.RateReq > 0 {
				where += fmt.Sprintf(" rate=%.0f/s", x.RateReq)
			}
			if x.Conns != y.Conns || x.Depth != y.Depth {
				where += fmt.Sprintf(" (%s %d conns × %d, %s %d conns × %d)", x.Protocol, x.Conns, max(x.Depth, 1), y.Protocol, y.Conns, max(y.Depth, 1))
			}
			if x.Budget != "" && x.Budget != "max" {
				where = x.Budget + ": " + where
			}
			none := noCI(x)
			calls := record.NewVsBaselineRounds(string(y.Protocol), rx[0], ry[0], stats.MoreIsFaster, confidence, stats.DefaultMinEffect)
			line := fmt.Sprintf("%s: %s vs %s calls/s %s", where, x.Protocol, y.Protocol, cliopts.VsText(calls, none))
			if x.LoadBound() || y.LoadBound() {
				line += " (load-bound)"
			}
			if len(rx[1]) > 0 && len(ry[1]) > 0 {
				cpu := record.NewVsBaselineRounds(string(y.Protocol), rx[1], ry[1], stats.Neutral, confidence, stats.DefaultMinEffect)
				line += ", CPU per call " + cliopts.VsText(cpu, none)
			}
			out = append(out, line)
		}
	}
	return out
}

// stepHeader states what every row shares: the rounds, the client, TLS
// and reconnection when on, the budget when there is one, the baseline.
func stepHeader(rows []steady.Row, base string) string {
	var parts []string
	if rs := cliopts.OrderedBy(rows, func(r steady.Row) string { return fmt.Sprint(r.Rounds) }); len(rs) == 1 {
		il := "arms interleaved"
		if slices.ContainsFunc(rows, func(r steady.Row) bool { return len(r.RoundProtocols) > 1 }) {
			il = "arms and protocols interleaved"
		}
		parts = append(parts, rs[0]+" round(s) per arm and step, "+il)
	} else {
		parts = append(parts, "rounds per arm differ (see each row)")
	}
	parts = append(parts, "medians over the rounds")
	if cs := cliopts.OrderedBy(rows, func(r steady.Row) string { return string(r.Client) }); len(cs) == 1 && cs[0] != "" {
		parts = append(parts, "client "+cs[0])
	}
	if ts := cliopts.OrderedBy(rows, func(r steady.Row) string { return fmt.Sprint(r.TLS) }); len(ts) == 1 && rows[0].TLS {
		parts = append(parts, "over TLS, hs/s its handshakes per second")
	}
	if bs := cliopts.OrderedBy(rows, func(r steady.Row) string { return r.Budget }); len(bs) == 1 {
		parts = append(parts, "budget "+bs[0])
	}
	if base != "" {
		parts = append(parts, "baseline "+base)
	}
	return strings.Join(parts, "; ")
}

// stepKey is what makes rows one step: every arm's row of it shares it.
func stepKey(r steady.Row) string {
	return fmt.Sprintf("%s|%s", r.Budget, stepTitle(r))
}

// stepTitle names a step as the progress lines do: "grpc throughput 8B
// c=32 conns=1 depth=32", with the rate of an open-loop step and how often
// connections are dialled again.
func stepTitle(r steady.Row) string {
	s := fmt.Sprintf("%s %s %dB c=%d conns=%d depth=%d", r.Protocol, r.Scenario, r.PayloadBytes, r.Concurrency, r.Conns, r.Depth)
	if r.RateReq > 0 {
		s += fmt.Sprintf(" rate=%.0f/s", r.RateReq)
	}
	if r.ReconnectEvery > 0 {
		s += fmt.Sprintf(" reconnect every %d calls", r.ReconnectEvery)
	}
	return s
}

func stepTable(w io.Writer, step []steady.Row, base string) error {
	errs, tls := false, false
	for _, r := range step {
		errs = errs || r.Errors > 0
		tls = tls || r.TLS
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	head := []string{"arm", "calls/s", "calls/s " + cliopts.VsHeader(base), "p50 µs", "p99 µs", "CPU/call", "PSS"}
	if tls {
		head = append(head, "hs/s")
	}
	if errs {
		head = append(head, "errors")
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, r := range step {
		cells := []string{r.Arm, fmt.Sprintf("%.0f", r.CallsPerS), callsVs(r, base), fmt.Sprintf("%.0f", r.P50Us), fmt.Sprintf("%.0f", r.P99Us),
			usCell(r.ServerCPUUsPerCall), mibCell(r.PSSBytes)}
		if tls {
			cells = append(cells, rateCell(r.TLSHandshakesPerS))
		}
		if errs {
			cells = append(cells, fmt.Sprintf("%d (%.2g%%)", r.Errors, 100*r.ErrorRate))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// loadBoundLine says which of a step's rows are record.SteadyRow.
// LoadBound, with their server's CPU share and the generator's CPUs ("" =
// none): their calls/s is the load's limit, so the step's calls/s
// verdicts are of client and server together.
func loadBoundLine(step []steady.Row) string {
	var parts []string
	for _, r := range step {
		if r.LoadBound() {
			parts = append(parts, fmt.Sprintf("%s %s with the generator at %.2f CPUs", r.Arm, r.ServerShareText(), r.GeneratorCPUs()))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("load-bound, the server below %.0f%% of the CPUs it could use: %s; calls/s is the load's limit, "+
		"not the server's (CPU/call compares the servers)", 100*record.LoadBoundShare, strings.Join(parts, ", "))
}

// noCI says why a row has no interval: too few rounds.
func noCI(r steady.Row) string {
	if r.Rounds == 1 {
		return "(no CI: 1 round)"
	}
	return fmt.Sprintf("(no CI: %d rounds)", r.Rounds)
}

func callsVs(r steady.Row, base string) string {
	return cliopts.VsTextIn(r.VsBaseline, base, noCI(r))
}

func cpuVs(r steady.Row, base string) string {
	if r.Verdict == record.VerdictBaseline {
		return "baseline"
	}
	// A variant's is against its own arm's (VsTextIn names it).
	return cliopts.VsTextIn(r.CPUVsBaseline.Vs(r.Baseline), base, noCI(r))
}

// stepVerdicts is one line per step: "static.gc: calls/s 1.12× [1.05,
// 1.20] faster, CPU per call 0.91× [0.88, 0.95] lower than static;
// static.ctl ~ static". Arms alike on both figures are "~".
func stepVerdicts(step []steady.Row, base string) string {
	var parts []string
	for _, r := range step {
		if !r.VsBaseline.Compared() {
			continue
		}
		against := r.VsBaseline.Baseline
		cpu := r.CPUVsBaseline.Vs(r.Baseline)
		if r.VsBaseline.Verdict == string(stats.NoDifference) && (cpu.Verdict == "" || cpu.Verdict == string(stats.NoDifference)) {
			parts = append(parts, fmt.Sprintf("%s ~ %s", r.Arm, against))
			continue
		}
		s := fmt.Sprintf("%s: calls/s %s", r.Arm, cliopts.VsText(r.VsBaseline, noCI(r)))
		if cpu.Verdict != "" {
			s += ", CPU per call " + cliopts.VsText(cpu, noCI(r))
		}
		parts = append(parts, s+" against "+against)
	}
	return strings.Join(parts, "; ")
}

// rateCell is a per-second figure, to a tenth below 10.
func rateCell(v *float64) string {
	switch {
	case v == nil:
		return "–"
	case *v < 10:
		return fmt.Sprintf("%.1f", *v)
	}
	return fmt.Sprintf("%.0f", *v)
}

func usCell(v *float64) string {
	if v == nil {
		return "–"
	}
	return fmt.Sprintf("%.1f µs", *v)
}

func mibCell(v *int64) string {
	if v == nil || *v <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f MiB", float64(*v)/(1<<20))
}
