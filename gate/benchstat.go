package gate

import (
	"fmt"
	"io"
	"math"
	"strings"

	"golang.org/x/perf/benchfmt"

	"github.com/coldstart-go/coldstart/record"
)

// SideKey is the file configuration key that names each result's side
// in the benchstat output: `benchstat -col side FILE` sets base and new
// side by side.
const SideKey = "side"

// Benchstat writes the compared starts in the Go benchmark format, each
// side under the file configuration "side: base" or "side: new", so that
// `benchstat -col side FILE` compares them with benchstat's own test:
//
//	BenchmarkColdStart/budget=max/arm=default 1 5.2e+06 ns/op 1.1e+07 startup-cpu-ns 1.5e+07 pss-B 2.1e+07 size-B 1.2e+06 process_started-ns ...
//
// one line per counted, accepted cold start (ns/op is spawn → first RPC;
// each phase is <name>-ns), one per idle instance (BenchmarkIdleInstance,
// pss-B) and one per traced start (BenchmarkExplainStart). The budget
// comes before the arm in each name because a trailing "-N" (cpus=0-1)
// would be read as GOMAXPROCS. The gate's own rows and verdict go first,
// in '#' lines, which benchstat ignores.
func (r *Result) Benchstat(w io.Writer) error {
	var werr error
	pf := func(format string, args ...any) {
		if werr == nil {
			_, werr = fmt.Fprintf(w, format, args...)
		}
	}
	pf("# coldstart gate: benchstat format; compare the sides with `benchstat -col %s FILE`\n", SideKey)
	pf("# %s\n", r.Summary())
	for _, row := range r.Rows {
		pf("# %s %s %s: base %s, new %s, ratio %s, p %s, %s\n", row.Arm, row.Budget, row.Figure,
			value(row.Base, row.Unit), value(row.New, row.Unit), ratioCell(row), pCell(row), strings.ReplaceAll(r.verdictCell(row), "**", ""))
	}
	pf("Unit size-B assume=exact\n")
	if werr != nil {
		return werr
	}
	bw := benchfmt.NewWriter(w)
	for _, d := range []*sideData{r.b, r.n} {
		if d == nil {
			continue
		}
		cfg := []benchfmt.Config{
			{Key: "pkg", Value: []byte("github.com/coldstart-go/coldstart"), File: true},
			{Key: SideKey, Value: []byte(d.Name), File: true},
		}
		write := func(name string, vals ...benchfmt.Value) error {
			var vs []benchfmt.Value
			for _, v := range vals {
				if v.Value > 0 && !math.IsInf(v.Value, 0) {
					// Whole ns and bytes.
					v.Value = math.Round(v.Value)
					vs = append(vs, v)
				}
			}
			if len(vs) == 0 {
				return nil
			}
			return bw.Write(&benchfmt.Result{Config: cfg, Name: benchfmt.Name(name), Iters: 1, Values: vs})
		}
		for _, k := range d.startKeys.keys {
			size := 0.0
			if s := d.sizes[k.arm]; len(s) > 0 {
				size = medianSize(s)
			}
			for _, s := range d.starts[k] {
				vals := []benchfmt.Value{
					{Value: s.firstRPC * 1e6, Unit: "ns/op"},
					{Value: s.cpu * 1e6, Unit: "startup-cpu-ns"},
					{Value: s.pss, Unit: "pss-B"},
					{Value: size, Unit: "size-B"},
				}
				for _, p := range s.phases {
					// first_rpc is ns/op; first_answer is too when the
					// server was ready at its first answer.
					if p.Name != record.PhaseFirstRPC && (p.Name != record.PhaseFirstReply || p.Ms != s.firstRPC) {
						vals = append(vals, benchfmt.Value{Value: p.Ms * 1e6, Unit: part(p.Name) + "-ns"})
					}
				}
				if err := write(fmt.Sprintf("ColdStart/budget=%s/arm=%s", part(k.budget), part(k.arm)), vals...); err != nil {
					return err
				}
			}
		}
		for _, k := range d.idleKeys.keys {
			for _, v := range d.idle[k] {
				if err := write(fmt.Sprintf("IdleInstance/budget=%s/arm=%s", part(k.budget), part(k.arm)), benchfmt.Value{Value: v, Unit: "pss-B"}); err != nil {
					return err
				}
			}
		}
		for _, k := range d.traceKeys.keys {
			for _, s := range d.traces[k] {
				var vals []benchfmt.Value
				for _, p := range s.phases {
					vals = append(vals, benchfmt.Value{Value: p.Ms * 1e6, Unit: part(p.Name) + "-ns"})
				}
				if err := write(fmt.Sprintf("ExplainStart/budget=%s/arm=%s", part(k.budget), part(k.arm)), vals...); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// part makes a value safe inside a benchmark name or unit: no spaces
// (they end it) and no '/' (it separates a name's parts).
func part(s string) string {
	if s == "" {
		return "none"
	}
	return strings.NewReplacer(" ", "_", "/", ":", "\t", "_").Replace(s)
}
