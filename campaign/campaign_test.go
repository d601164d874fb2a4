package campaign

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/coldstart-go/coldstart/internal/testservers"
	"github.com/coldstart-go/coldstart/launch"
	"github.com/coldstart-go/coldstart/prober"
)

// The test binary doubles as a server under test: COLDSTART_TEST_SERVER
// picks how it behaves.
func TestMain(m *testing.M) {
	switch os.Getenv("COLDSTART_TEST_SERVER") {
	case "":
		os.Exit(testservers.Run(m)) // removes the servers the tests built
	case "health":
		serveHealth(os.Getenv("PORT"), healthpb.HealthCheckResponse_SERVING)
	case "never-ready":
		serveHealth(os.Getenv("PORT"), healthpb.HealthCheckResponse_NOT_SERVING)
	case "crash":
		fmt.Fprintln(os.Stderr, "panic: config file /etc/missing.yaml not found")
		os.Exit(3)
	}
	os.Exit(0)
}

func serveHealth(port string, st healthpb.HealthCheckResponse_ServingStatus) {
	network, addr := "tcp", "127.0.0.1:"+port
	if len(os.Args) == 3 && os.Args[1] == "--unix" {
		network, addr = "unix", os.Args[2]
	}
	lis, err := net.Listen(network, addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	s := grpc.NewServer()
	h := health.NewServer()
	h.SetServingStatus("", st)
	healthpb.RegisterHealthServer(s, h)
	s.Serve(lis)
}

func selfArm(name, mode string) Arm {
	return Arm{Name: name, Path: os.Args[0], Env: []string{"COLDSTART_TEST_SERVER=" + mode}, Args: func(t prober.Target) ([]string, error) {
		if t.Network == "unix" {
			return []string{"--unix", t.Address}, nil
		}
		return nil, nil
	}}
}

// echoServer builds the bundled sample server once per test binary.
func echoServer(t *testing.T) string {
	return testservers.BuildPackage(t, testservers.Echo)
}

func echoArm(t *testing.T) Arm {
	return Arm{Name: "default", Path: echoServer(t), Args: func(tg prober.Target) ([]string, error) {
		if tg.Network == "unix" {
			return []string{"--unix", tg.Address}, nil
		}
		return []string{"--addr", tg.Address}, nil
	}}
}

func TestColdStartSampleServer(t *testing.T) {
	for _, tr := range []Transport{TCP, Unix} {
		t.Run(string(tr), func(t *testing.T) {
			var got []prober.Sample
			c := ColdStart{Arms: []Arm{echoArm(t), selfArm("self", "health")}, Runs: 3, Transport: tr}
			sums, err := c.Run(context.Background(), func(s prober.Sample) error { got = append(got, s); return nil })
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 2*4 {
				t.Fatalf("recorded %d samples, want 8 (warm-up + 3 runs, 2 arms)", len(got))
			}
			// Interleaved: arms alternate within every run, taking turns
			// going first. Each start is a process of its own: no PID
			// twice.
			pids := map[int]int{}
			for i, s := range got {
				if j, seen := pids[s.PID]; s.PID <= 0 || seen {
					t.Errorf("sample %d: pid %d (sample %d had it too, or none recorded)", i, s.PID, j)
				}
				pids[s.PID] = i
				wantArm := []string{"default", "self"}[(i+i/2)%2]
				if s.Arm != wantArm || s.Run != i/2 || s.Warmup != (i/2 == 0) {
					t.Errorf("sample %d = %s run %d warmup %v, want %s run %d", i, s.Arm, s.Run, s.Warmup, wantArm, i/2)
				}
				if s.FirstRPCMs <= 0 || s.Attempts < 1 {
					t.Errorf("sample %d: first_rpc_ms %v attempts %d", i, s.FirstRPCMs, s.Attempts)
				}
				// Phases are in order and end at first_rpc.
				prev := 0.0
				for _, p := range s.Phases {
					if p.Ms < prev {
						t.Errorf("sample %d: phase %s at %v ms before the previous (%v)", i, p.Name, p.Ms, prev)
					}
					prev = p.Ms
				}
				if last := s.Phases[len(s.Phases)-1]; last.Name != prober.PhaseFirstRPC || last.Ms != s.FirstRPCMs {
					t.Errorf("sample %d: last phase %+v, want first_rpc at %v", i, last, s.FirstRPCMs)
				}
				if s.StartupCPUMs == nil || s.RSSBytes == nil || s.PSSBytes == nil {
					t.Errorf("sample %d: a reading is missing: startup cpu %v, rss %v, pss %v", i, s.StartupCPUMs, s.RSSBytes, s.PSSBytes)
				} else if *s.StartupCPUMs <= 0 || *s.RSSBytes <= 0 || *s.PSSBytes <= 0 || *s.PSSBytes > *s.RSSBytes {
					t.Errorf("sample %d: startup cpu %v ms, rss %d, pss %d", i, *s.StartupCPUMs, *s.RSSBytes, *s.PSSBytes)
				}
			}
			if len(sums) != 2 || sums[0].Runs != 3 || sums[0].MinMs > sums[0].MedianMs || sums[0].MedianMs > sums[0].MaxMs {
				t.Errorf("summaries = %+v", sums)
			}
		})
	}
}

// The arms take turns starting first: round r starts them rotated by r,
// the warm-up round in order; FixedOrder keeps one order.
func TestColdStartOrder(t *testing.T) {
	for _, tc := range []struct {
		fixed bool
		want  string
	}{
		{false, "a b c | b c a | c a b | a b c"},
		{true, "a b c | a b c | a b c | a b c"},
	} {
		var got []string
		c := ColdStart{Arms: []Arm{selfArm("a", "health"), selfArm("b", "health"), selfArm("c", "health")}, Runs: 3, FixedOrder: tc.fixed}
		if _, err := c.Run(context.Background(), func(s prober.Sample) error {
			if len(got) > 0 && len(got)%4 == 3 {
				got = append(got, "|")
			}
			got = append(got, s.Arm)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if g := strings.Join(got, " "); g != tc.want {
			t.Errorf("FixedOrder %v: order %s, want %s", tc.fixed, g, tc.want)
		}
	}
}

func TestColdStartFailures(t *testing.T) {
	tests := []struct {
		name    string
		arm     Arm
		timeout time.Duration
		want    []string
		is      error
	}{
		{"exits before ready", selfArm("crashy", "crash"), 10 * time.Second,
			[]string{"crashy", "exit status 3", "config file /etc/missing.yaml not found"}, launch.ErrExited},
		{"never ready", selfArm("sleepy", "never-ready"), 700 * time.Millisecond,
			[]string{"sleepy", "700ms", "NOT_SERVING"}, prober.ErrNotReady},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []prober.Sample
			c := ColdStart{Arms: []Arm{tt.arm}, Runs: 2, Wait: prober.WaitOptions{Timeout: tt.timeout}}
			_, err := c.Run(context.Background(), func(s prober.Sample) error { got = append(got, s); return nil })
			if !errors.Is(err, tt.is) {
				t.Fatalf("Run() error = %v, want %v", err, tt.is)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if len(got) != 1 || got[0].Error == "" {
				t.Errorf("recorded %+v, want one sample carrying the error", got)
			}
		})
	}
}

func TestColdStartRefusesBusyAddress(t *testing.T) {
	// Something already listens on the socket path the arm would use.
	dir := t.TempDir()
	sock := filepath.Join(dir, "busy.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	err = prober.EnsureFree(context.Background(), prober.Target{Network: "unix", Address: sock})
	if !errors.Is(err, prober.ErrInUse) {
		t.Fatalf("EnsureFree(busy) = %v, want ErrInUse", err)
	}
	if err := prober.EnsureFree(context.Background(), prober.Target{Network: "unix", Address: filepath.Join(dir, "free.sock")}); err != nil {
		t.Fatalf("EnsureFree(free) = %v", err)
	}
}

func TestColdStartInterruptReapsServer(t *testing.T) {
	// Cancel while the server is up but never ready: the campaign returns,
	// the child is gone, and the sample so far was recorded.
	ctx, cancel := context.WithCancel(context.Background())
	var pids []int
	arm := selfArm("sleepy", "never-ready")
	arm.Launcher = recordPIDs{&pids}
	// Cancelled once the server has answered "not ready": up, never ready.
	notReady := &onAnswer{Checker: prober.Health{}, answered: make(chan struct{})}
	go func() {
		<-notReady.answered
		cancel()
	}()
	var got []prober.Sample
	c := ColdStart{Arms: []Arm{arm}, Runs: 1, Checker: notReady}
	_, err := c.Run(ctx, func(s prober.Sample) error { got = append(got, s); return nil })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run() error = %v, want context.Canceled", err)
	}
	if len(got) != 1 {
		t.Errorf("recorded %d samples, want the interrupted one", len(got))
	}
	for _, pid := range snapshot(&pids) {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("server pid %d still exists after interrupt (kill 0: %v)", pid, err)
		}
	}
}

// onAnswer is a Checker that closes answered the first time the server
// answers a check (ready or not).
type onAnswer struct {
	prober.Checker
	once     sync.Once
	answered chan struct{}
}

func (c *onAnswer) Check(ctx context.Context, t prober.Target) (prober.Answer, error) {
	a, err := c.Checker.Check(ctx, t)
	if err == nil && a.Answered {
		c.once.Do(func() { close(c.answered) })
	}
	return a, err
}

var pidMu sync.Mutex

func snapshot(p *[]int) []int {
	pidMu.Lock()
	defer pidMu.Unlock()
	return append([]int(nil), *p...)
}

type recordPIDs struct{ pids *[]int }

func (r recordPIDs) Launch(ctx context.Context, s launch.Spec) (launch.Instance, error) {
	in, err := launch.Process{}.Launch(ctx, s)
	if err == nil {
		pidMu.Lock()
		*r.pids = append(*r.pids, in.PID())
		pidMu.Unlock()
	}
	return in, err
}

func TestDensity(t *testing.T) {
	var got []DensitySample
	d := Density{Arms: []Arm{echoArm(t)}, Instances: 3}
	rows, err := d.Run(context.Background(), func(s DensitySample) error { got = append(got, s); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || len(rows) != 1 {
		t.Fatalf("got %d samples, %d rows; want 3, 1", len(got), len(rows))
	}
	r := rows[0]
	// Instances of one binary share its text pages: each one's PSS is
	// below its RSS, and the totals add up the per-instance figures.
	if r.PSSBytes <= 0 || r.PSSBytes >= r.RSSBytes {
		t.Errorf("pss %d, rss %d: want 0 < pss < rss for shared instances", r.PSSBytes, r.RSSBytes)
	}
	var sum int64
	for _, s := range got {
		sum += s.PSSBytes
		if err := syscall.Kill(s.PID, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("instance pid %d still exists after Run", s.PID)
		}
	}
	if sum != r.TotalPSSBytes {
		t.Errorf("total_pss_bytes %d, want the sum %d", r.TotalPSSBytes, sum)
	}
}
