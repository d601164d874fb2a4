// Command generators compares load generators side by side against ONE
// running sample server: h2load (nghttp2, raw gRPC frames), ghz, and
// steady with each of its gRPC clients (grpc-go and the lean one), at one
// call in flight and at -concurrency in flight over one connection. The
// server is pinned to -server-cpu and every generator to -generator-cpu.
// bench/generators.sh installs the tools and runs it:
//
//	go run ./bench/generators -server /tmp/echo -steady /tmp/steady -ghz $(go env GOPATH)/bin/ghz
//
// Generator CPU per call: for h2load and ghz, user+system of the measured
// process from wait4, less that of a one-call run of the same tool
// (start-up), divided by the calls; steady reports its own getrusage over
// the measured window. Server CPU per call comes from /proc/PID (all
// threads) over each measured run (steady reads it itself, through
// --server-pid). Each round runs the tools in a rotated order, so drift in
// the machine's load falls on all; every row records the load average and
// how busy the whole machine was (/proc/stat) while it was measured.
//
// With -tls every round also loads a second sample server, on the same
// CPU, serving TLS with a certificate made for the run (an ECDSA P-256
// key signed by a CA made for the run, in the run's temporary directory;
// the results carry fingerprints only): h2load over https:// (HTTP/2 by
// ALPN; it verifies no certificate), ghz and steady verifying against the
// run's CA. Those rows say tls: true and are compared with h2load's over
// TLS.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/coldstart-go/coldstart/internal/echo/echopb"
	"github.com/coldstart-go/coldstart/internal/leangrpc"
	"github.com/coldstart-go/coldstart/internal/procfs"
	"github.com/coldstart-go/coldstart/internal/provenance"
	"github.com/coldstart-go/coldstart/internal/render"
	"github.com/coldstart-go/coldstart/internal/resultfile"
	"github.com/coldstart-go/coldstart/internal/testservers/testcerts"
	"github.com/coldstart-go/coldstart/launch"
	"github.com/coldstart-go/coldstart/prober"
	"github.com/coldstart-go/coldstart/steady"
)

// Row is one tool's figures at one concurrency in one round.
type Row struct {
	Round       int     `json:"round"`
	Tool        string  `json:"tool"`
	Concurrency int     `json:"concurrency"`
	TLS         bool    `json:"tls"` // over TLS, to the -tls server
	Calls       int64   `json:"calls"`
	CallsPerS   float64 `json:"calls_per_s" render:"%.0f"`
	ClientCPU   float64 `json:"client_cpu_us_per_call" render:"%.1f"`
	ServerCPU   float64 `json:"server_cpu_us_per_call" render:"%.1f"`
	// MeanUs is the mean latency (h2load reports no percentiles).
	MeanUs float64 `json:"mean_us" render:"%.0f"`
	P50Us  float64 `json:"p50_us,omitempty" render:"%.0f"`
	Errors int64   `json:"errors"`
	// Load1 is the 1-minute load average at the end of the run; MachineBusy
	// the fraction of all CPUs' time not idle during it (this run's own
	// generator and server included).
	Load1       float64 `json:"load1" render:"%.1f"`
	MachineBusy float64 `json:"machine_busy_frac" render:"%.2f"`
}

// Summary is one tool at one concurrency over one transport: medians over
// rounds, and the ratios to h2load's medians over the same transport.
type Summary struct {
	Tool             string  `json:"tool"`
	Concurrency      int     `json:"concurrency"`
	TLS              bool    `json:"tls"`
	Rounds           int     `json:"rounds"`
	ClientCPU        float64 `json:"client_cpu_us_per_call" render:"%.1f"`
	ClientCPURange   string  `json:"client_cpu_range_us"`
	CallsPerS        float64 `json:"calls_per_s" render:"%.0f"`
	CallsPerSRange   string  `json:"calls_per_s_range"`
	ServerCPU        float64 `json:"server_cpu_us_per_call" render:"%.1f"`
	CPUOverH2load    float64 `json:"client_cpu_over_h2load" render:"%.2f"`
	CallsOverH2load  float64 `json:"calls_per_s_over_h2load" render:"%.2f"`
	MeanLoad1        float64 `json:"load1" render:"%.1f"`
	MeanMachineBusy  float64 `json:"machine_busy_frac" render:"%.2f"`
	ErrorsAllRounds  int64   `json:"errors"`
	RoundsCPUBelowH2 int     `json:"rounds_cpu_at_or_below_h2load"`
}

type options struct {
	server, steady, ghz, h2load, proto string
	steadyBase, steadyBaseRev          string
	serverCPU, genCPU                  string
	tools                              string
	rounds, warmup, seqCalls, parCalls int
	par                                int
	results                            string
	tls                                bool
}

func main() {
	var o options
	flag.StringVar(&o.server, "server", "", "sample echo server binary (examples/echo)")
	flag.StringVar(&o.steady, "steady", "", "steady binary")
	flag.StringVar(&o.steadyBase, "steady-base", "", "a second steady binary (say, built from the commit before a change), run as tool steady-lean-base beside steady-lean; \"\" = none")
	flag.StringVar(&o.steadyBaseRev, "steady-base-rev", "", "the commit -steady-base was built from, for the provenance")
	flag.StringVar(&o.ghz, "ghz", "ghz", "ghz binary (v0.121.0)")
	flag.StringVar(&o.h2load, "h2load", "h2load", "h2load binary (Debian nghttp2-client)")
	flag.StringVar(&o.proto, "proto", "internal/echo/echopb/echo.proto", "echo.proto for ghz")
	flag.StringVar(&o.serverCPU, "server-cpu", "0", "CPU for the server")
	flag.StringVar(&o.genCPU, "generator-cpu", "1", "CPU for every generator")
	flag.StringVar(&o.tools, "tools", "h2load,ghz,steady-grpc,steady-lean", "generators, comma-separated")
	flag.IntVar(&o.rounds, "rounds", 3, "rounds, the tools' order rotated each round")
	flag.IntVar(&o.warmup, "warmup", 5000, "uncounted calls before each measurement")
	flag.IntVar(&o.seqCalls, "seq-calls", 20000, "calls with one in flight")
	flag.IntVar(&o.parCalls, "par-calls", 100000, "calls with -concurrency in flight")
	flag.IntVar(&o.par, "concurrency", 32, "calls in flight in the parallel measurement (one connection)")
	flag.StringVar(&o.results, "results-dir", "results", "where the results go")
	flag.BoolVar(&o.tls, "tls", false, "also load a second server serving TLS (a certificate made for the run), every tool over TLS in every round; rows say tls")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "generators:", err)
		os.Exit(1)
	}
}

type tool func(ctx context.Context, o options, s *server, c, n int) (Row, error)

var tools = map[string]tool{
	"h2load": runH2load,
	"ghz":    runGhz,
	"steady-grpc": func(ctx context.Context, o options, s *server, c, n int) (Row, error) {
		return runSteady(ctx, o, s, "grpc", c, n)
	},
	"steady-lean": func(ctx context.Context, o options, s *server, c, n int) (Row, error) {
		return runSteady(ctx, o, s, "lean", c, n)
	},
	"steady-lean-base": func(ctx context.Context, o options, s *server, c, n int) (Row, error) {
		o.steady = o.steadyBase
		return runSteady(ctx, o, s, "lean", c, n)
	},
}

// server is the one server every generator loads (one per transport
// with -tls).
type server struct {
	inst    launch.Instance
	target  prober.Target
	reqFile string // one gRPC-framed EchoRequest, for h2load -d
	scratch string
	// tls: the server serves TLS with a certificate signed by the CA in
	// caFile; certSHA256 and caSHA256 are their fingerprints.
	tls                  bool
	caFile               string
	certSHA256, caSHA256 string
}

func run(ctx context.Context, o options) error {
	names := strings.Split(o.tools, ",")
	for _, n := range names {
		if tools[n] == nil {
			return fmt.Errorf("-tools: unknown tool %q (known: h2load, ghz, steady-grpc, steady-lean, steady-lean-base)", n)
		}
		if n == "steady-lean-base" && o.steadyBase == "" {
			return fmt.Errorf("-tools: steady-lean-base needs -steady-base, the baseline steady binary")
		}
	}
	prov := provenance.Collect("generators", os.Args)
	prov.Notes = map[string]string{"load_at_start": loadavg(), "server_cpu": o.serverCPU, "generator_cpu": o.genCPU}
	if v, err := exec.Command(o.h2load, "--version").Output(); err == nil {
		prov.Notes["h2load"] = strings.TrimSpace(string(v))
	}
	if v, err := exec.Command("go", "version", "-m", o.ghz).Output(); err == nil {
		for _, l := range strings.Split(string(v), "\n") {
			if f := strings.Fields(l); len(f) >= 3 && f[0] == "mod" {
				prov.Notes["ghz"] = f[1] + " " + f[2]
			}
		}
	}
	if o.steadyBase != "" {
		prov.Notes["steady_base_commit"] = o.steadyBaseRev
	}
	var servers []*server
	defer func() {
		for _, s := range servers {
			s.stop()
		}
	}()
	transports := []bool{false}
	if o.tls {
		transports = append(transports, true)
	}
	for _, tl := range transports {
		s, err := startServer(ctx, o, tl)
		if err != nil {
			return err
		}
		servers = append(servers, s)
		fmt.Fprintf(os.Stderr, "generators: server pid %d at %s on CPU %s, %s; load average %s\n", s.inst.PID(), s.target.Address, o.serverCPU, transportName(tl), loadavg())
		if tl {
			prov.Notes["tls"] = "a second server serving TLS: ECDSA P-256 certificate and CA made for the run (keys in its temporary directory only); " +
				"h2load https:// with ALPN h2 verifies no certificate (its default); ghz --cacert and steady --tls --cacert verify against the run's CA"
			prov.Notes["tls_server_cert_sha256"] = s.certSHA256
			prov.Notes["tls_ca_sha256"] = s.caSHA256
		}
	}
	rf, err := resultfile.Create(o.results, "generators", prov)
	if err != nil {
		return err
	}

	var rows []Row
	for round := 1; round <= o.rounds; round++ {
		order := append(names[round%len(names):], names[:round%len(names)]...)
		// The transports take turns going first, as the tools do.
		ss := append(servers[round%len(servers):], servers[:round%len(servers)]...)
		for _, s := range ss {
			for _, name := range order {
				for _, sc := range []struct{ c, n int }{{1, o.seqCalls}, {o.par, o.parCalls}} {
					if err := ctx.Err(); err != nil {
						return err
					}
					r, err := measure(ctx, func() (Row, error) { return tools[name](ctx, o, s, sc.c, sc.n) })
					if err != nil {
						return fmt.Errorf("%s c=%d %s: %w", name, sc.c, transportName(s.tls), err)
					}
					r.Round, r.Tool, r.Concurrency, r.TLS = round, name, sc.c, s.tls
					fmt.Fprintf(os.Stderr, "round %d %-11s %-5s c=%-2d %7.0f calls/s  generator %6.1f µs/call  server %6.1f µs/call  errors %d  load %.1f busy %.2f\n",
						round, name, transportName(s.tls), sc.c, r.CallsPerS, r.ClientCPU, r.ServerCPU, r.Errors, r.Load1, r.MachineBusy)
					rows = append(rows, r)
					if err := rf.Add("row", r); err != nil {
						return err
					}
				}
			}
		}
	}
	sums := summarize(rows, names)
	for _, sm := range sums {
		if err := rf.Add("summary", sm); err != nil {
			return err
		}
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Generators side by side: one server on CPU %s, each generator on CPU %s (%s)\n\n", o.serverCPU, o.genCPU, prov.StartedAt.Format(time.RFC3339))
	if o.tls {
		fmt.Fprintf(&b, "Two servers on CPU %s, one plaintext (h2c), one serving TLS (tls: true): %s.\n\n", o.serverCPU, prov.Notes["tls"])
	}
	fmt.Fprintf(&b, "%s; %s; Go %s; kernel %s; %s, %d cores. Load average at start %s, at end %s. Medians of %d rounds (range in brackets); every round's rows are in %s.\n\n",
		prov.Notes["h2load"], prov.Notes["ghz"], prov.GoVersion, prov.Kernel, prov.CPUModel, prov.Cores, prov.Notes["load_at_start"], loadavg(), o.rounds, filepath.Base(rf.Path()))
	render.Write(&b, render.Markdown, sums)
	b.WriteString("\n")
	render.Write(&b, render.Markdown, rows)
	md := strings.TrimSuffix(rf.Path(), ".jsonl") + ".md"
	if err := os.WriteFile(md, b.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "results in %s and %s\n", rf.Path(), md)
	return render.Write(os.Stdout, render.Table, sums)
}

func transportName(tls bool) string {
	if tls {
		return "tls"
	}
	return "plain"
}

// startServer starts the sample server pinned to -server-cpu, serving TLS
// when tlsOn (a certificate made now into its scratch directory), and
// returns it ready.
func startServer(ctx context.Context, o options, tlsOn bool) (*server, error) {
	t, err := prober.FreeTCP()
	if err != nil {
		return nil, err
	}
	s := &server{target: t, tls: tlsOn}
	if s.scratch, err = os.MkdirTemp("", "generators-"); err != nil {
		return nil, err
	}
	msg, _ := proto.Marshal(&echopb.EchoRequest{Payload: []byte("abcdefgh")})
	s.reqFile = filepath.Join(s.scratch, "request.bin")
	if err := os.WriteFile(s.reqFile, leangrpc.Encode(msg), 0o644); err != nil {
		s.stop()
		return nil, err
	}
	args := []string{"-c", o.serverCPU, o.server, "--addr=" + t.Address}
	var ready launch.ReadyOptions
	if tlsOn {
		cert, key, err := s.makeCert()
		if err != nil {
			s.stop()
			return nil, fmt.Errorf("-tls: make the server's certificate: %w", err)
		}
		args = append(args, "--tls-cert", cert, "--tls-key", key)
		tl, err := prober.LoadTLS(prober.TLSOptions{CAFile: s.caFile})
		if err != nil {
			s.stop()
			return nil, fmt.Errorf("-tls: %w", err)
		}
		ready.Checker = prober.Health{TLS: tl}
	}
	s.inst, _, err = launch.StartReady(ctx, launch.Process{}, launch.Spec{Arm: "default", Path: "taskset", Args: args, Target: t}, ready)
	if err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// makeCert writes a CA (ca.crt) and a loopback server certificate signed
// by it (server.crt, server.key: ECDSA P-256) into the scratch directory
// and returns the server's files.
func (s *server) makeCert() (cert, key string, err error) {
	ca, err := testcerts.NewCA("coldstart generators CA")
	if err != nil {
		return "", "", err
	}
	p, err := ca.Leaf(testcerts.LeafOptions{Key: testcerts.ECDSAP256})
	if err != nil {
		return "", "", err
	}
	s.caFile = filepath.Join(s.scratch, "ca.crt")
	if err := os.WriteFile(s.caFile, ca.PEM, 0o644); err != nil {
		return "", "", err
	}
	if cert, key, err = p.Write(s.scratch, "server"); err != nil {
		return "", "", err
	}
	leaf, err := tls.X509KeyPair(p.CertPEM, p.KeyPEM)
	if err != nil {
		return "", "", err
	}
	s.caSHA256, s.certSHA256 = prober.Fingerprint(ca.Cert), prober.Fingerprint(leaf.Leaf)
	return cert, key, nil
}

// stop stops the server, if it started, and removes its scratch directory
// (the request file, and the TLS key).
func (s *server) stop() {
	if s.inst != nil {
		s.inst.Stop(context.Background())
	}
	os.RemoveAll(s.scratch)
}

// measure runs f and adds the machine's load over it.
func measure(ctx context.Context, f func() (Row, error)) (Row, error) {
	busy0, total0 := cpuTimes()
	r, err := f()
	busy1, total1 := cpuTimes()
	if total1 > total0 {
		r.MachineBusy = float64(busy1-busy0) / float64(total1-total0)
	}
	r.Load1, _ = strconv.ParseFloat(strings.Fields(loadavg() + " 0")[0], 64)
	return r, err
}

// cpuTimes sums the machine's busy and total CPU time from /proc/stat (in
// clock ticks, 100 per second).
func cpuTimes() (busy, total int64) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return 0, 0
	}
	fs := strings.Fields(sc.Text()) // cpu user nice system idle iowait irq softirq steal ...
	for i, v := range fs[1:] {
		n, _ := strconv.ParseInt(v, 10, 64)
		if i >= 8 { // guest time is already in user
			break
		}
		total += n
		if i != 3 && i != 4 {
			busy += n
		}
	}
	return busy, total
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:3], " ")
}

// timed runs a generator pinned with taskset and returns its stdout and
// CPU time (user+system from wait4).
func timed(ctx context.Context, o options, bin string, args ...string) ([]byte, time.Duration, error) {
	cmd := exec.CommandContext(ctx, "taskset", append([]string{"-c", o.genCPU, bin}, args...)...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	fmt.Fprintf(os.Stderr, "+ %s\n", strings.Join(cmd.Args, " "))
	if err := cmd.Run(); err != nil {
		tail := errb.Bytes()
		if len(tail) > 2000 {
			tail = tail[len(tail)-2000:]
		}
		return nil, 0, fmt.Errorf("run %s: %w: %s", bin, err, tail)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return out.Bytes(), time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// external runs an external generator the same way for h2load and ghz: a
// one-call run (start-up CPU), a warmup run, then the measured run with
// the server's CPU read around it.
func external(ctx context.Context, o options, s *server, bin string, args func(c, n int) []string, parse func([]byte, *Row) error, c, n int) (Row, error) {
	var r Row
	_, base, err := timed(ctx, o, bin, args(1, 1)...)
	if err != nil {
		return r, err
	}
	if o.warmup > 0 {
		if _, _, err := timed(ctx, o, bin, args(c, o.warmup)...); err != nil {
			return r, err
		}
	}
	cpu0, err := procfs.Host.CPU(s.inst.PID())
	if err != nil {
		return r, err
	}
	out, cpu, err := timed(ctx, o, bin, args(c, n)...)
	if err != nil {
		return r, err
	}
	cpu1, err := procfs.Host.CPU(s.inst.PID())
	if err != nil {
		return r, err
	}
	if err := parse(out, &r); err != nil {
		return r, err
	}
	calls := float64(n)
	r.ClientCPU = float64(cpu-base) / 1e3 / calls
	r.ServerCPU = (cpu1.Seconds() - cpu0.Seconds()) * 1e6 / calls
	return r, nil
}

var (
	h2Finished = regexp.MustCompile(`finished in [^,]+, ([0-9.]+) req/s`)
	h2Requests = regexp.MustCompile(`requests: (\d+) total, \d+ started, \d+ done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout`)
	h2Status   = regexp.MustCompile(`status codes: (\d+) 2xx`)
	h2Time     = regexp.MustCompile(`time for request:\s+\S+\s+\S+\s+(\S+)`)
	h2ALPN     = regexp.MustCompile(`Application protocol: (\S+)`)
)

// runH2load: one client, one thread, c streams at once on its connection,
// POSTing a raw gRPC frame with gRPC's headers. h2load checks the HTTP
// status only (a gRPC error in the trailers still counts as success);
// steady's tests check that the echo succeeds. Over TLS it loads https://,
// HTTP/2 by ALPN, without verifying the certificate (h2load has no option
// to), and a run that negotiated anything but h2 is an error.
func runH2load(ctx context.Context, o options, s *server, c, n int) (Row, error) {
	scheme := "http://"
	if s.tls {
		scheme = "https://"
	}
	args := func(c, n int) []string {
		return []string{"-n", strconv.Itoa(n), "-c", "1", "-t", "1", "-m", strconv.Itoa(c), "-d", s.reqFile,
			"-H", "content-type: application/grpc", "-H", "te: trailers",
			scheme + s.target.Address + "/coldstart.echo.v1.Echo/Echo"}
	}
	return external(ctx, o, s, o.h2load, args, func(out []byte, r *Row) error {
		m := h2Finished.FindSubmatch(out)
		q := h2Requests.FindSubmatch(out)
		if m == nil || q == nil {
			return fmt.Errorf("read h2load output: no summary in %q", out)
		}
		if s.tls {
			if a := h2ALPN.FindSubmatch(out); a == nil || string(a[1]) != "h2" {
				return fmt.Errorf("h2load over TLS: ALPN did not negotiate h2: %q", out)
			}
		}
		r.CallsPerS, _ = strconv.ParseFloat(string(m[1]), 64)
		total, _ := strconv.ParseInt(string(q[1]), 10, 64)
		ok, _ := strconv.ParseInt(string(q[2]), 10, 64)
		r.Calls, r.Errors = total, total-ok
		if st := h2Status.FindSubmatch(out); st != nil {
			if n2xx, _ := strconv.ParseInt(string(st[1]), 10, 64); n2xx < ok {
				r.Errors += ok - n2xx
			}
		}
		if t := h2Time.FindSubmatch(out); t != nil {
			r.MeanUs = parseDuration(string(t[1]))
		}
		return nil
	}, c, n)
}

// parseDuration reads h2load's "467us" or "1.40ms" as microseconds.
func parseDuration(s string) float64 {
	d, err := time.ParseDuration(strings.Replace(s, "us", "µs", 1))
	if err != nil {
		return 0
	}
	return float64(d) / 1e3
}

// runGhz: over TLS ghz verifies the server's certificate against the
// run's CA (--cacert).
func runGhz(ctx context.Context, o options, s *server, c, n int) (Row, error) {
	sec := []string{"--insecure"}
	if s.tls {
		sec = []string{"--cacert", s.caFile}
	}
	args := func(c, n int) []string {
		return append(sec, "--proto", o.proto, "--call", "coldstart.echo.v1.Echo/Echo",
			"-d", `{"payload":"YWJjZGVmZ2g="}`, "-c", strconv.Itoa(c), "-n", strconv.Itoa(n), "--connections", "1",
			"-O", "json", s.target.Address)
	}
	return external(ctx, o, s, o.ghz, args, func(out []byte, r *Row) error {
		var rep struct {
			Count   int64   `json:"count"`
			RPS     float64 `json:"rps"`
			Average int64   `json:"average"` // ns
			Latency []struct {
				Percentage int   `json:"percentage"`
				Latency    int64 `json:"latency"` // ns
			} `json:"latencyDistribution"`
			Status map[string]int64 `json:"statusCodeDistribution"`
		}
		if err := json.Unmarshal(out, &rep); err != nil {
			return fmt.Errorf("read ghz report: %w", err)
		}
		r.Calls, r.CallsPerS, r.MeanUs = rep.Count, rep.RPS, float64(rep.Average)/1e3
		for _, l := range rep.Latency {
			if l.Percentage == 50 {
				r.P50Us = float64(l.Latency) / 1e3
			}
		}
		for code, k := range rep.Status {
			if code != "OK" {
				r.Errors += k
			}
		}
		return nil
	}, c, n)
}

// runSteady loads the same server with steady run --target, pinned with
// taskset as the others are and with its own --pin-generator (every
// thread, GOMAXPROCS 1); steady meters itself and the server (--server-pid)
// over its measured window. Over TLS it verifies the server's certificate
// against the run's CA (--tls --cacert).
func runSteady(ctx context.Context, o options, s *server, client string, c, n int) (Row, error) {
	scen := "sequential"
	if c > 1 {
		scen = "throughput"
	}
	args := []string{"run", "--target", s.target.Address, "--server-pid", strconv.Itoa(s.inst.PID()),
		"--client", client, "--rounds", "1", "--pin-generator", o.genCPU, "--scenario", scen, "--concurrency", strconv.Itoa(c), "--conns", "1",
		"--warmup", strconv.Itoa(o.warmup), "--calls", strconv.Itoa(n), "-o", "json", "--results-dir", s.scratch}
	if s.tls {
		args = append(args, "--tls", "--cacert", s.caFile)
	}
	out, _, err := timed(ctx, o, o.steady, args...)
	if err != nil {
		return Row{}, err
	}
	var rs []steady.Row
	if err := json.Unmarshal(out, &rs); err != nil || len(rs) != 1 {
		return Row{}, fmt.Errorf("read steady rows (%d): %v", len(rs), err)
	}
	sr := rs[0]
	if sr.TLS != s.tls {
		return Row{}, fmt.Errorf("steady's row says tls %v, want %v", sr.TLS, s.tls)
	}
	r := Row{Calls: sr.Calls, CallsPerS: sr.CallsPerS, ClientCPU: sr.ClientCPUUsPerCall, P50Us: sr.P50Us, Errors: sr.Errors}
	if sr.ServerCPUUsPerCall != nil {
		r.ServerCPU = *sr.ServerCPUUsPerCall
	}
	return r, nil
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func span(xs []float64, verb string) string {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return fmt.Sprintf(verb+"–"+verb, s[0], s[len(s)-1])
}

func summarize(rows []Row, names []string) []Summary {
	type key struct {
		tool string
		c    int
		tls  bool
	}
	type group struct {
		c   int
		tls bool
	}
	by := map[key][]Row{}
	var gs []group
	for _, r := range rows {
		k := key{r.Tool, r.Concurrency, r.TLS}
		if g := (group{r.Concurrency, r.TLS}); by[k] == nil && !contains(gs, g) {
			gs = append(gs, g)
		}
		by[k] = append(by[k], r)
	}
	sort.SliceStable(gs, func(i, j int) bool { return !gs[i].tls && gs[j].tls })
	var out []Summary
	for _, g := range gs {
		c := g.c
		h2 := by[key{"h2load", c, g.tls}]
		h2CPU, h2Calls := medianOf(h2, func(r Row) float64 { return r.ClientCPU }), medianOf(h2, func(r Row) float64 { return r.CallsPerS })
		for _, name := range names {
			rs := by[key{name, c, g.tls}]
			if len(rs) == 0 {
				continue
			}
			cpu := values(rs, func(r Row) float64 { return r.ClientCPU })
			calls := values(rs, func(r Row) float64 { return r.CallsPerS })
			sm := Summary{
				Tool: name, Concurrency: c, TLS: g.tls, Rounds: len(rs),
				ClientCPU: median(cpu), ClientCPURange: span(cpu, "%.1f"),
				CallsPerS: median(calls), CallsPerSRange: span(calls, "%.0f"),
				ServerCPU:       medianOf(rs, func(r Row) float64 { return r.ServerCPU }),
				MeanLoad1:       mean(values(rs, func(r Row) float64 { return r.Load1 })),
				MeanMachineBusy: mean(values(rs, func(r Row) float64 { return r.MachineBusy })),
			}
			for _, r := range rs {
				sm.ErrorsAllRounds += r.Errors
				// Same round's h2load row.
				for _, h := range h2 {
					if h.Round == r.Round && r.ClientCPU <= h.ClientCPU {
						sm.RoundsCPUBelowH2++
					}
				}
			}
			if h2CPU > 0 {
				sm.CPUOverH2load = sm.ClientCPU / h2CPU
			}
			if h2Calls > 0 {
				sm.CallsOverH2load = sm.CallsPerS / h2Calls
			}
			out = append(out, sm)
		}
	}
	return out
}

func values(rs []Row, f func(Row) float64) []float64 {
	out := make([]float64, len(rs))
	for i, r := range rs {
		out[i] = f(r)
	}
	return out
}

func medianOf(rs []Row, f func(Row) float64) float64 { return median(values(rs, f)) }

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func contains[T comparable](s []T, v T) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
