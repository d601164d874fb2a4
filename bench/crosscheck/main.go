// Command crosscheck checks coldstart's prober against an independent one.
//
// For each binary it alternates two probers over the same fresh processes'
// kind: coldstart's campaign (connect() check, then a fail-fast health RPC
// on a fresh channel) and a deliberately plain one written separately here
// (no connect check, a fresh channel per attempt, a fixed 0.5 ms gap). The
// medians must agree within ±15%, and no reading may sit at a gRPC reconnect
// backoff multiple (≥ 1 s) for a server ready in milliseconds.
//
//	go run ./bench/crosscheck -n 20 default=/path/to/server static=/path/to/other
//	go run ./bench/crosscheck -n 20 -arms default,static,upx   # the sample server's arms, built (cached) by builds/
//
// Servers are started with --addr 127.0.0.1:PORT (the sample server's flag).
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/coldstart-go/coldstart/builds"
	"github.com/coldstart-go/coldstart/campaign"
	"github.com/coldstart-go/coldstart/internal/provenance"
	"github.com/coldstart-go/coldstart/internal/resultfile"
	"github.com/coldstart-go/coldstart/pgocollect"
	"github.com/coldstart-go/coldstart/prober"
	"github.com/coldstart-go/coldstart/report"
)

func main() {
	n := flag.Int("n", 20, "cold starts per arm and prober")
	results := flag.String("results-dir", "results", "where to write the results file")
	armList := flag.String("arms", "", "build these arms of the sample server instead of naming ARM=BINARY")
	flag.Parse()
	ctx := context.Background()
	pairs := flag.Args()
	if *armList != "" {
		var err error
		if pairs, err = buildSample(ctx, *armList); err != nil {
			fmt.Fprintln(os.Stderr, "crosscheck:", err)
			os.Exit(1)
		}
	}
	if len(pairs) == 0 {
		fmt.Fprintln(os.Stderr, "crosscheck: name at least one ARM=BINARY, or -arms")
		os.Exit(2)
	}
	rf, err := resultfile.Create(*results, "crosscheck", provenance.Collect("crosscheck", os.Args))
	if err != nil {
		fmt.Fprintln(os.Stderr, "crosscheck:", err)
		os.Exit(1)
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "arm\truns\tcoldstart_median_ms\tplain_median_ms\tdiff_pct\tmax_ms\tagree")
	failed := false
	for _, a := range pairs {
		name, bin, ok := strings.Cut(a, "=")
		if !ok {
			fmt.Fprintf(os.Stderr, "crosscheck: %q: want ARM=BINARY\n", a)
			os.Exit(2)
		}
		arm := campaign.Arm{Name: name, Path: bin, Args: func(t prober.Target) ([]string, error) { return []string{"--addr", t.Address}, nil }}
		var cs, plain []float64
		for i := 0; i < *n; i++ {
			// Interleave the two probers run by run.
			sums, err := campaign.ColdStart{Arms: []campaign.Arm{arm}, Runs: 1}.Run(ctx, func(prober.Sample) error { return nil })
			if err != nil {
				fmt.Fprintln(os.Stderr, "crosscheck:", err)
				os.Exit(1)
			}
			cs = append(cs, sums[0].MedianMs)
			d, err := plainProbe(ctx, bin)
			if err != nil {
				fmt.Fprintln(os.Stderr, "crosscheck:", name, err)
				os.Exit(1)
			}
			plain = append(plain, d)
		}
		r := report.CrosscheckRow{Arm: name, Runs: *n, ColdstartMedian: median(cs), PlainMedian: median(plain)}
		r.DiffPct = 100 * (r.ColdstartMedian - r.PlainMedian) / r.PlainMedian
		r.MaxMs = max(maxOf(cs), maxOf(plain))
		r.Agree = r.DiffPct >= -15 && r.DiffPct <= 15 && r.MaxMs < 1000
		failed = failed || !r.Agree
		if err := rf.Add("crosscheck", r); err != nil {
			fmt.Fprintln(os.Stderr, "crosscheck:", err)
		}
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.2f\t%+.1f\t%.1f\t%v\n", r.Arm, r.Runs, r.ColdstartMedian, r.PlainMedian, r.DiffPct, r.MaxMs, r.Agree)
	}
	tw.Flush()
	fmt.Fprintln(os.Stderr, "crosscheck: results in", rf.Path())
	if failed {
		os.Exit(1)
	}
}

// buildSample builds the sample server's arms and returns ARM=BINARY pairs.
func buildSample(ctx context.Context, list string) ([]string, error) {
	arms, err := builds.ParseArms(list)
	if err != nil {
		return nil, err
	}
	src, err := builds.SampleSource()
	if err != nil {
		return nil, err
	}
	arts, errs := builds.BuildAll(ctx, src, arms, builds.Options{Progress: os.Stderr, CollectProfile: pgocollect.Collect})
	var pairs []string
	for i, a := range arts {
		if errs[i] != nil {
			return nil, errs[i]
		}
		if a.Arm == builds.ImageArm {
			return nil, fmt.Errorf("the image arm runs under runc; crosscheck compares plain processes")
		}
		pairs = append(pairs, a.Arm+"="+a.Path)
	}
	return pairs, nil
}

// plainProbe starts bin and times its first SERVING health reply the plain
// way: a new channel per attempt, fail-fast, 0.5 ms apart.
func plainProbe(ctx context.Context, bin string) (float64, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	addr := l.Addr().String()
	l.Close()
	_, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command(bin, "--addr", addr)
	cmd.Env = append(os.Environ(), "PORT="+port)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	for time.Since(start) < 30*time.Second {
		cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return 0, err
		}
		actx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		resp, err := healthpb.NewHealthClient(cc).Check(actx, &healthpb.HealthCheckRequest{})
		cancel()
		cc.Close()
		if err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return float64(time.Since(start)) / float64(time.Millisecond), nil
		}
		time.Sleep(500 * time.Microsecond)
	}
	return 0, fmt.Errorf("not ready within 30s at %s", addr)
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func maxOf(xs []float64) float64 {
	m := 0.0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}
