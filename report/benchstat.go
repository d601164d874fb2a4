package report

import (
	"fmt"
	"io"
	"math"
	"strings"

	"golang.org/x/perf/benchfmt"
)

// Benchstat writes the campaigns in the Go benchmark format, so that
// `benchstat old.txt new.txt` compares two campaigns:
//
//	BenchmarkColdStart/budget=cpus=0/arm=upx 1 1.16e+07 ns/op ... pss-B ...
//
// one line per counted cold start (ns/op is spawn → first RPC, so
// benchstat sees each arm's distribution), one per idle instance of a
// density campaign (BenchmarkIdleInstance), and one per steady step
// (BenchmarkSteady, iterations = calls). The budget comes before the arm
// in each name because a trailing "-N" (as in cpus=0-1) would be read as
// GOMAXPROCS. Provenance goes in '#' lines, which benchstat ignores, so
// campaigns from different commits still land in one table; the cpu line
// is file configuration, as `go test` writes it. A Knative campaign's
// names carry /on=knative. Within one campaign, `benchstat -col /arm
// file.txt` sets the arms side by side.
func (r *Report) Benchstat(w io.Writer) error {
	var werr error
	pf := func(format string, args ...any) {
		if werr == nil {
			_, werr = fmt.Fprintf(w, format, args...)
		}
	}
	pf("# coldstart report: benchstat format; compare two campaigns with `benchstat old.txt new.txt`\n")
	for _, u := range []struct{ unit, key, val string }{
		{"calls/s", "better", "higher"},
		{"size-B", "assume", "exact"},
	} {
		pf("Unit %s %s=%s\n", u.unit, u.key, u.val)
	}
	bw := benchfmt.NewWriter(w)
	for _, c := range r.Campaigns {
		p := c.Provenance
		pf("\n# %s: %s UTC on %s, %s, %s, commit %s\n", c.Label, p.StartedAt.UTC().Format("2006-01-02 15:04"),
			orUnknown(p.Host), orUnknown(p.GoVersion), orUnknown(p.Kernel), short(p.Commit))
		cfg := []benchfmt.Config{{Key: "pkg", Value: []byte("github.com/coldstart-go/coldstart"), File: true}}
		if p.CPUModel != "" {
			cfg = append(cfg, benchfmt.Config{Key: "cpu", Value: []byte(p.CPUModel), File: true})
		}
		write := func(name string, iters int, vals ...benchfmt.Value) {
			if werr != nil {
				return
			}
			var vs []benchfmt.Value
			for _, v := range vals {
				// Whole units: ns, bytes; calls/s keeps one decimal.
				v.Value = math.Round(v.Value*10) / 10
				if v.Unit != "calls/s" {
					v.Value = math.Round(v.Value)
				}
				if v.Value != 0 {
					vs = append(vs, v)
				}
			}
			if len(vs) == 0 {
				return
			}
			werr = bw.Write(&benchfmt.Result{Config: cfg, Name: benchfmt.Name(name), Iters: max(iters, 1), Values: vs})
		}
		// A Knative campaign's rows must not pool with local ones of the
		// same budget.
		on := ""
		if c.Knative() {
			on = "/on=knative"
		}
		size := map[string]int64{}
		for _, a := range c.Artifacts {
			size[a.Arm] = a.SizeBytes
		}
		for _, s := range c.Summaries {
			if size[s.Arm] == 0 {
				size[s.Arm] = s.SizeBytes
			}
		}
		for _, s := range c.Samples {
			if s.Warmup || s.Error != "" {
				continue
			}
			acc := 0.0
			for _, ph := range s.Phases {
				if ph.Name == "accepting" {
					acc = ph.Ms
				}
			}
			write(fmt.Sprintf("ColdStart/budget=%s%s/arm=%s", part(s.Budget), on, part(s.Arm)), 1,
				benchfmt.Value{Value: s.FirstRPCMs * 1e6, Unit: "ns/op"},
				benchfmt.Value{Value: acc * 1e6, Unit: "accepting-ns"},
				// A failed reading is 0 here, and write drops 0 values.
				benchfmt.Value{Value: valF(s.StartupCPUMs) * 1e6, Unit: "startup-cpu-ns"},
				benchfmt.Value{Value: float64(valI(s.PSSBytes)), Unit: "pss-B"},
				benchfmt.Value{Value: float64(valI(s.RSSBytes)), Unit: "rss-B"},
				benchfmt.Value{Value: float64(size[s.Arm]), Unit: "size-B"},
			)
		}
		if len(c.DensitySamples) > 0 {
			for _, s := range c.DensitySamples {
				write(fmt.Sprintf("IdleInstance/budget=%s%s/arm=%s", part(s.Budget), on, part(s.Arm)), 1,
					benchfmt.Value{Value: float64(s.PSSBytes), Unit: "pss-B"},
					benchfmt.Value{Value: float64(s.PSSAnonBytes), Unit: "pss-anon-B"},
					benchfmt.Value{Value: float64(s.RSSBytes), Unit: "rss-B"},
				)
			}
		} else {
			for _, d := range c.Density {
				write(fmt.Sprintf("IdleInstance/budget=%s%s/arm=%s", part(d.Budget), on, part(d.Arm)), 1,
					benchfmt.Value{Value: float64(d.PSSBytes), Unit: "pss-B"},
					benchfmt.Value{Value: float64(d.PSSAnonBytes), Unit: "pss-anon-B"},
					benchfmt.Value{Value: float64(d.RSSBytes), Unit: "rss-B"},
				)
			}
		}
		for _, s := range c.Steady {
			name := fmt.Sprintf("Steady/budget=%s/protocol=%s/scenario=%s/payload=%dB/inflight=%d/conns=%d",
				part(s.Budget), part(string(s.Protocol)), part(string(s.Scenario)), s.PayloadBytes, s.Concurrency, s.Conns)
			if s.RateReq > 0 {
				name += fmt.Sprintf("/rate=%.0f", s.RateReq)
			}
			name += on + "/arm=" + part(s.Arm)
			alloc := 0.0
			if s.AllocBytesPerCall != nil {
				alloc = *s.AllocBytesPerCall
			}
			write(name, int(s.Calls),
				benchfmt.Value{Value: s.P50Us * 1e3, Unit: "p50-ns"},
				benchfmt.Value{Value: s.P90Us * 1e3, Unit: "p90-ns"},
				benchfmt.Value{Value: s.P99Us * 1e3, Unit: "p99-ns"},
				benchfmt.Value{Value: s.P999Us * 1e3, Unit: "p999-ns"},
				benchfmt.Value{Value: s.CallsPerS, Unit: "calls/s"},
				benchfmt.Value{Value: valF(s.ServerCPUUsPerCall) * 1e3, Unit: "server-cpu-ns/call"},
				benchfmt.Value{Value: s.ClientCPUUsPerCall * 1e3, Unit: "client-cpu-ns/call"},
				benchfmt.Value{Value: alloc, Unit: "alloc-B/call"},
				benchfmt.Value{Value: float64(valI(s.PeakRSSBytes)), Unit: "peak-rss-B"},
			)
		}
	}
	return werr
}

// part makes a value safe inside a benchmark name: no spaces (they end
// the name) and no '/' (it separates parts).
func part(s string) string {
	if s == "" {
		return "none"
	}
	return strings.NewReplacer(" ", "_", "/", ":", "\t", "_").Replace(s)
}

// valF and valI read an optional figure, 0 when it is missing.
func valF(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

func valI(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}
