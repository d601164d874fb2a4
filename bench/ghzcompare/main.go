// Command ghzcompare checks that steady's load generator is not the
// bottleneck: it loads the same sample server with ghz and with steady,
// server pinned to one CPU and generator to the other, and compares
// generator CPU per call (sequential) and calls/s (32 in flight over one
// connection). bench/ghz.sh installs ghz and runs it:
//
//	go run ./bench/ghzcompare -ghz $(go env GOPATH)/bin/ghz -server /tmp/echo -steady /tmp/steady
//
// ghz's CPU comes from wait4's rusage of its process, less the CPU of a
// one-call run (start-up: flag and proto parsing, dialing), divided by its
// calls; steady's is its own getrusage over the measured window. Server CPU
// per call is read from /proc for both. Rounds alternate the tools so that
// drift in the machine's load falls on both.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/coldstart-go/coldstart/internal/procfs"
	"github.com/coldstart-go/coldstart/internal/provenance"
	"github.com/coldstart-go/coldstart/internal/render"
	"github.com/coldstart-go/coldstart/internal/resultfile"
	"github.com/coldstart-go/coldstart/launch"
	"github.com/coldstart-go/coldstart/prober"
	"github.com/coldstart-go/coldstart/steady"
)

// Row is one tool's figures for one scenario in one round.
type Row struct {
	Round       int     `json:"round"`
	Tool        string  `json:"tool"`
	Scenario    string  `json:"scenario"`
	Concurrency int     `json:"concurrency"`
	Calls       int64   `json:"calls"`
	CallsPerS   float64 `json:"calls_per_s" render:"%.0f"`
	P50Us       float64 `json:"p50_us"`
	P99Us       float64 `json:"p99_us"`
	ServerCPU   float64 `json:"server_cpu_us_per_call"`
	ClientCPU   float64 `json:"client_cpu_us_per_call"`
	Errors      int64   `json:"errors"`
}

// Summary is the medians over rounds.
type Summary struct {
	Scenario        string  `json:"scenario"`
	Concurrency     int     `json:"concurrency"`
	GhzCallsPerS    float64 `json:"ghz_calls_per_s" render:"%.0f"`
	SteadyCallsPerS float64 `json:"steady_calls_per_s" render:"%.0f"`
	Ratio           float64 `json:"steady_over_ghz" render:"%.2f"`
	GhzClientCPU    float64 `json:"ghz_client_cpu_us_per_call"`
	SteadyClientCPU float64 `json:"steady_client_cpu_us_per_call"`
	GhzP50Us        float64 `json:"ghz_p50_us"`
	SteadyP50Us     float64 `json:"steady_p50_us"`
	GhzServerCPU    float64 `json:"ghz_server_cpu_us_per_call"`
	SteadyServerCPU float64 `json:"steady_server_cpu_us_per_call"`
}

type options struct {
	ghz, server, steady, proto string
	serverCPU, genCPU          string
	rounds, warmup, seqCalls   int
	ghzCPUs                    int
	parCalls, par              int
	results                    string
}

func main() {
	var o options
	flag.StringVar(&o.ghz, "ghz", "ghz", "ghz binary (v0.121.0)")
	flag.StringVar(&o.server, "server", "", "sample echo server binary")
	flag.StringVar(&o.steady, "steady", "", "steady binary")
	flag.StringVar(&o.proto, "proto", "internal/echo/echopb/echo.proto", "echo.proto for ghz")
	flag.StringVar(&o.serverCPU, "server-cpu", "0", "CPU for the server")
	flag.StringVar(&o.genCPU, "generator-cpu", "1", "CPU for the generator")
	flag.IntVar(&o.ghzCPUs, "ghz-cpus", 0, "ghz --cpus (its GOMAXPROCS; 0 = ghz's default, the machine's CPU count)")
	flag.IntVar(&o.rounds, "rounds", 3, "rounds, tools alternating")
	flag.IntVar(&o.warmup, "warmup", 5000, "uncounted calls before each measurement")
	flag.IntVar(&o.seqCalls, "seq-calls", 20000, "calls in the sequential measurement")
	flag.IntVar(&o.parCalls, "par-calls", 100000, "calls in the parallel measurement")
	flag.IntVar(&o.par, "concurrency", 32, "calls in flight in the parallel measurement (one connection)")
	flag.StringVar(&o.results, "results-dir", "results", "where the results go")
	flag.Parse()
	if err := run(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, "ghzcompare:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	prov := provenance.Collect("ghzcompare", os.Args)
	if v, err := exec.Command("go", "version", "-m", o.ghz).Output(); err == nil {
		for _, l := range strings.Split(string(v), "\n") {
			if f := strings.Fields(l); len(f) >= 3 && f[0] == "mod" {
				prov.Notes = map[string]string{"ghz": f[1] + " " + f[2], "ghz_cpus": strconv.Itoa(o.ghzCPUs)}
			}
		}
	}
	rf, err := resultfile.Create(o.results, "ghz-compare", prov)
	if err != nil {
		return err
	}
	var rows []Row
	add := func(r Row) error {
		rows = append(rows, r)
		fmt.Fprintf(os.Stderr, "round %d %-6s %-10s c=%-2d %7.0f calls/s p50 %6.0f µs client %6.1f server %6.1f µs/call errors %d\n",
			r.Round, r.Tool, r.Scenario, r.Concurrency, r.CallsPerS, r.P50Us, r.ClientCPU, r.ServerCPU, r.Errors)
		return rf.Add("row", r)
	}
	// steady's own results files would repeat the rows kept here.
	scratch, err := os.MkdirTemp("", "ghzcompare-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	so := o
	so.results = scratch
	for round := 1; round <= o.rounds; round++ {
		tools := []func(context.Context, options, int, func(Row) error) error{runGhz, runSteady}
		if round%2 == 0 {
			tools[0], tools[1] = tools[1], tools[0]
		}
		for _, t := range tools {
			if err := t(ctx, so, round, add); err != nil {
				return err
			}
		}
	}
	sums := summarize(rows)
	for _, s := range sums {
		if err := rf.Add("summary", s); err != nil {
			return err
		}
	}
	md := strings.TrimSuffix(rf.Path(), ".jsonl") + ".md"
	var b bytes.Buffer
	ghzCPUs := "default"
	if o.ghzCPUs > 0 {
		ghzCPUs = strconv.Itoa(o.ghzCPUs)
	}
	fmt.Fprintf(&b, "# ghz %s (--cpus %s) vs steady, server on CPU %s, generator on CPU %s (%s)\n\n", prov.Notes["ghz"], ghzCPUs, o.serverCPU, o.genCPU, prov.StartedAt.Format(time.RFC3339))
	fmt.Fprintf(&b, "Medians of %d rounds; every round's rows are in %s.\n\n", o.rounds, filepath.Base(rf.Path()))
	render.Write(&b, render.Markdown, sums)
	b.WriteString("\n")
	render.Write(&b, render.Markdown, rows)
	if err := os.WriteFile(md, b.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "results in %s and %s\n", rf.Path(), md)
	return render.Write(os.Stdout, render.Table, sums)
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

func summarize(rows []Row) []Summary {
	type key struct {
		scen string
		c    int
	}
	var keys []key
	vals := map[key]map[string][][]float64{}
	for _, r := range rows {
		k := key{r.Scenario, r.Concurrency}
		if vals[k] == nil {
			keys = append(keys, k)
			vals[k] = map[string][][]float64{}
		}
		if vals[k][r.Tool] == nil {
			vals[k][r.Tool] = make([][]float64, 4)
		}
		v := vals[k][r.Tool]
		v[0] = append(v[0], r.CallsPerS)
		v[1] = append(v[1], r.ClientCPU)
		v[2] = append(v[2], r.P50Us)
		if r.ServerCPU > 0 { // a failed reading is absent, not a 0 in the median
			v[3] = append(v[3], r.ServerCPU)
		}
	}
	var out []Summary
	for _, k := range keys {
		g, s := vals[k]["ghz"], vals[k]["steady"]
		if g == nil || s == nil {
			continue
		}
		sum := Summary{
			Scenario: k.scen, Concurrency: k.c,
			GhzCallsPerS: median(g[0]), SteadyCallsPerS: median(s[0]),
			GhzClientCPU: median(g[1]), SteadyClientCPU: median(s[1]),
			GhzP50Us: median(g[2]), SteadyP50Us: median(s[2]),
			GhzServerCPU: median(g[3]), SteadyServerCPU: median(s[3]),
		}
		if sum.GhzCallsPerS > 0 {
			sum.Ratio = sum.SteadyCallsPerS / sum.GhzCallsPerS
		}
		out = append(out, sum)
	}
	return out
}

// runSteady runs steady with its own pinning flags (which match the
// taskset pinning ghz gets) and reads its JSON rows.
func runSteady(ctx context.Context, o options, round int, add func(Row) error) error {
	// One invocation per scenario so each gets its own call count.
	for _, sc := range []struct {
		name  string
		calls int
	}{{"sequential", o.seqCalls}, {"throughput", o.parCalls}} {
		a := []string{"run", "--bin", "default=" + o.server, "--pin-server", o.serverCPU, "--pin-generator", o.genCPU,
			"--scenario", sc.name, "--concurrency", strconv.Itoa(o.par), "--conns", "1",
			"--warmup", strconv.Itoa(o.warmup), "--calls", strconv.Itoa(sc.calls), "--rounds", "1", "-o", "json", "--results-dir", o.results,
			"--", "--addr={addr}"}
		cmd := exec.CommandContext(ctx, o.steady, a...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		fmt.Fprintf(os.Stderr, "+ %s %s\n", o.steady, strings.Join(a, " "))
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("run steady: %w: %s", err, errb.String())
		}
		var rs []steady.Row
		if err := json.Unmarshal(out.Bytes(), &rs); err != nil {
			return fmt.Errorf("read steady rows: %w", err)
		}
		for _, r := range rs {
			// One window per invocation (--rounds 1): the rounds alternate
			// with ghz here. A server CPU reading that failed stays 0 and is
			// left out of the medians below.
			srvCPU := 0.0
			if r.ServerCPUUsPerCall != nil {
				srvCPU = *r.ServerCPUUsPerCall
			}
			if err := add(Row{
				Round: round, Tool: "steady", Scenario: string(r.Scenario), Concurrency: r.Concurrency,
				Calls: r.Calls, CallsPerS: r.CallsPerS, P50Us: r.P50Us, P99Us: r.P99Us,
				ServerCPU: srvCPU, ClientCPU: r.ClientCPUUsPerCall, Errors: r.Errors,
			}); err != nil {
				return err
			}
		}
	}
	return nil
}

// runGhz starts a pinned server, then runs ghz pinned to the other CPU:
// one call (its start-up cost, subtracted), then per scenario a warmup run
// and the measured run.
func runGhz(ctx context.Context, o options, round int, add func(Row) error) error {
	t, err := prober.FreeTCP()
	if err != nil {
		return err
	}
	inst, _, err := launch.StartReady(ctx, launch.Process{}, launch.Spec{
		Arm: "default", Path: "taskset", Args: []string{"-c", o.serverCPU, o.server, "--addr=" + t.Address}, Target: t,
	}, launch.ReadyOptions{})
	if err != nil {
		return err
	}
	defer inst.Stop(context.Background())
	base, _, err := ghz(ctx, o, t, 1, 1)
	if err != nil {
		return err
	}
	for _, sc := range []struct {
		name string
		c, n int
	}{{"sequential", 1, o.seqCalls}, {"throughput", o.par, o.parCalls}} {
		// Warm the server (and its connection-handling paths) with the
		// scenario's own shape, then measure a separate run.
		if _, _, err := ghz(ctx, o, t, sc.c, o.warmup); err != nil {
			return err
		}
		cpu0, err := procfs.Host.CPU(inst.PID())
		if err != nil {
			return err
		}
		cpu, rep, err := ghz(ctx, o, t, sc.c, sc.n)
		if err != nil {
			return err
		}
		cpu1, err := procfs.Host.CPU(inst.PID())
		if err != nil {
			return err
		}
		calls := float64(sc.n)
		r := Row{
			Round: round, Tool: "ghz", Scenario: sc.name, Concurrency: sc.c, Calls: rep.Count,
			CallsPerS: rep.RPS, P50Us: rep.quantile(50), P99Us: rep.quantile(99),
			ClientCPU: float64(cpu-base) / 1e3 / calls,
			ServerCPU: (cpu1.Seconds() - cpu0.Seconds()) * 1e6 / calls,
			Errors:    rep.errors(),
		}
		if err := add(r); err != nil {
			return err
		}
	}
	return nil
}

type ghzReport struct {
	Count   int64   `json:"count"`
	RPS     float64 `json:"rps"`
	Latency []struct {
		Percentage int   `json:"percentage"`
		Latency    int64 `json:"latency"` // ns
	} `json:"latencyDistribution"`
	Status map[string]int64 `json:"statusCodeDistribution"`
}

func (r ghzReport) quantile(p int) float64 {
	for _, l := range r.Latency {
		if l.Percentage == p {
			return float64(l.Latency) / 1e3
		}
	}
	return 0
}

func (r ghzReport) errors() int64 {
	var n int64
	for code, c := range r.Status {
		if code != "OK" {
			n += c
		}
	}
	return n
}

// ghz runs ghz once, pinned, and returns its CPU time (user+system, from
// wait4) and report.
func ghz(ctx context.Context, o options, t prober.Target, c, n int) (time.Duration, ghzReport, error) {
	args := []string{"-c", o.genCPU, o.ghz, "--insecure", "--proto", o.proto, "--call", "coldstart.echo.v1.Echo/Echo",
		"-d", `{"payload":"YWJjZGVmZ2g="}`, "-c", strconv.Itoa(c), "-n", strconv.Itoa(n), "--connections", "1",
		"-O", "json"}
	if o.ghzCPUs > 0 {
		args = append(args, "--cpus", strconv.Itoa(o.ghzCPUs))
	}
	args = append(args, t.Address)
	cmd := exec.CommandContext(ctx, "taskset", args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	fmt.Fprintf(os.Stderr, "+ taskset %s\n", strings.Join(args, " "))
	if err := cmd.Run(); err != nil {
		return 0, ghzReport{}, fmt.Errorf("run ghz: %w: %s", err, errb.String())
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	var rep ghzReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		return 0, rep, fmt.Errorf("read ghz report: %w", err)
	}
	return cpu, rep, nil
}
