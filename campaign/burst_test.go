package campaign

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coldstart-go/coldstart/budget"
	"github.com/coldstart-go/coldstart/internal/testservers"
	"github.com/coldstart-go/coldstart/prober"
	"github.com/coldstart-go/coldstart/record"
)

// burstRecords are what a burst campaign recorded.
type burstRecords struct {
	instances []record.BurstInstance
	bursts    []record.Burst
}

func (r *burstRecords) add(kind string, v any) error {
	switch kind {
	case record.BurstInstanceKind:
		r.instances = append(r.instances, v.(record.BurstInstance))
	case record.BurstKind:
		r.bursts = append(r.bursts, v.(record.Burst))
	}
	return nil
}

// checkNoInstanceLeft fails for any recorded instance still running.
func checkNoInstanceLeft(t *testing.T, ins []record.BurstInstance) {
	t.Helper()
	for _, in := range ins {
		if in.PID > 0 && syscall.Kill(in.PID, 0) == nil {
			if b, err := os.ReadFile("/proc/" + strconv.Itoa(in.PID) + "/stat"); err == nil && !strings.Contains(string(b), ") Z ") {
				t.Errorf("instance %d of %s N=%d (pid %d) still runs", in.Instance, in.Arm, in.N, in.PID)
			}
		}
	}
}

func burstArm(ts, name string, args ...string) Arm {
	return Arm{Name: name, Path: ts, Args: func(prober.Target) ([]string, error) { return append([]string{"-mode", "grpc"}, args...), nil }}
}

// TestBurstRecordsAndCleansUp bursts N=1 and 4 of two arms under a CPU
// quota shared by the group and checks the records, the pairing by round
// and that nothing is left behind. The slow arm sleeps 150 ms before it
// listens: a lower bound on its times, never a measured ratio.
func TestBurstRecordsAndCleansUp(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a burst's shared budget is a cgroup: needs root (CI runs as root)")
	}
	ts := testservers.Build(t)
	b := budget.Budget{Cores: 1, MemBytes: 512 << 20}
	if err := b.Check(); err != nil {
		t.Skipf("budget %s unavailable here: %v", b, err)
	}
	var rec burstRecords
	c := Burst{
		Arms:    []Arm{burstArm(ts, "fast"), burstArm(ts, "slow", "-start-delay", "150ms")},
		Budgets: []budget.Budget{b}, Sizes: []int{1, 4}, Runs: 2,
		Wait: prober.WaitOptions{Timeout: 20 * time.Second},
	}
	bursts, err := c.Run(context.Background(), rec.add)
	checkNoInstanceLeft(t, rec.instances)
	checkNoCgroupLeft(t)
	if err != nil {
		t.Fatal(err)
	}
	// Warm-up: N=1 of each arm; then 2 rounds × 2 sizes × 2 arms.
	if len(bursts) != 2+8 || len(rec.bursts) != len(bursts) {
		t.Fatalf("%d bursts returned, %d recorded; want 10", len(bursts), len(rec.bursts))
	}
	if want := 2 + 2*2*(1+4); len(rec.instances) != want {
		t.Errorf("%d instances recorded, want %d", len(rec.instances), want)
	}
	seen := map[[3]int]int{} // run, N, arm index → bursts
	for _, bu := range rec.bursts {
		if bu.Error != "" || bu.Failed != 0 {
			t.Errorf("burst %+v failed", bu)
		}
		if bu.Warmup != (bu.Run == 0) || (bu.Run == 0 && bu.N != 1) {
			t.Errorf("burst run %d N=%d warm-up %v: want only N=1 in the warm-up round 0", bu.Run, bu.N, bu.Warmup)
		}
		ai := 0
		if bu.Arm == "slow" {
			ai = 1
		}
		seen[[3]int{bu.Run, bu.N, ai}]++
		if !(bu.P50Ms <= bu.P99Ms && bu.P99Ms <= bu.MaxMs && bu.MaxMs <= bu.AllReadyMs+0.001) {
			t.Errorf("burst %s N=%d run %d: p50 %.2f, p99 %.2f, max %.2f, all ready %.2f: want them in that order",
				bu.Arm, bu.N, bu.Run, bu.P50Ms, bu.P99Ms, bu.MaxMs, bu.AllReadyMs)
		}
		if bu.GroupCPUMs == nil || *bu.GroupCPUMs <= 0 || bu.GroupMemPeakBytes == nil || *bu.GroupMemPeakBytes <= 0 {
			t.Errorf("burst %s N=%d run %d: group figures %v, %v: want both", bu.Arm, bu.N, bu.Run, bu.GroupCPUMs, bu.GroupMemPeakBytes)
		}
		if bu.ProbeGapMs != 0.2*float64(bu.N) {
			t.Errorf("burst N=%d: probe gap %v ms, want 0.2 × N", bu.N, bu.ProbeGapMs)
		}
		if bu.Arm == "slow" && bu.P50Ms < 150 {
			t.Errorf("slow arm's p50 %.2f ms, below its 150 ms start delay", bu.P50Ms)
		}
	}
	for run := 1; run <= 2; run++ {
		for _, n := range []int{1, 4} {
			for ai := range 2 {
				if seen[[3]int{run, n, ai}] != 1 {
					t.Errorf("run %d N=%d arm %d: %d bursts, want 1 (every arm at every size in every round)", run, n, ai, seen[[3]int{run, n, ai}])
				}
			}
		}
	}
	for _, in := range rec.instances {
		if in.Error != "" || in.FirstRPCMs <= 0 || in.ReadyMs < in.SpawnMs || in.PID == 0 {
			t.Errorf("instance %+v: want ready, after its spawn", in)
		}
	}
	sums := record.SummarizeBursts(bursts, nil, "fast", 0.95, 0.05)
	if len(sums) != 4 {
		t.Fatalf("%d summaries, want 2 arms × 2 sizes", len(sums))
	}
	for _, s := range sums {
		if s.Runs != 2 {
			t.Errorf("%s N=%d: %d runs, want 2 (the warm-up not counted)", s.Arm, s.N, s.Runs)
		}
		if (s.N == 1) != (s.N1Verdict == record.VerdictBaseline) || (s.Arm == "fast") != (s.VsBaseline.Verdict == record.VerdictBaseline) {
			t.Errorf("%s N=%d: vs N=1 %q, vs baseline %q", s.Arm, s.N, s.N1Verdict, s.VsBaseline.Verdict)
		}
	}
}

// TestBurstFailureCleansUp: an instance that exits before it is ready
// ends the campaign with its error, its burst recorded, and every other
// instance stopped.
func TestBurstFailureCleansUp(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	ts := testservers.Build(t)
	var rec burstRecords
	c := Burst{
		Arms: []Arm{burstArm(ts, "ok"), {Name: "broken", Path: ts, Args: func(prober.Target) ([]string, error) {
			return []string{"-mode", "exit", "-message", "burst-test: no config"}, nil
		}}},
		Sizes: []int{1, 3}, Runs: 1,
		Wait: prober.WaitOptions{Timeout: 20 * time.Second},
	}
	_, err := c.Run(context.Background(), rec.add)
	checkNoInstanceLeft(t, rec.instances)
	checkNoCgroupLeft(t)
	if err == nil || !strings.Contains(err.Error(), "burst-test: no config") {
		t.Fatalf("Run: %v, want the server's exit", err)
	}
	last := rec.bursts[len(rec.bursts)-1]
	if last.Arm != "broken" || last.Failed == 0 || last.Error == "" {
		t.Errorf("last burst %+v: want the broken arm's, failed", last)
	}
}

// TestBurstDoesNotFit: a burst larger than the memory limit holds, by one
// instance's peak in the warm-up, ends the campaign before any counted
// burst, saying how many fit.
func TestBurstDoesNotFit(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	ts := testservers.Build(t)
	b := budget.Budget{Cores: 1, MemBytes: 64 << 20}
	var rec burstRecords
	c := Burst{Arms: []Arm{burstArm(ts, "default")}, Budgets: []budget.Budget{b}, Sizes: []int{1, 1000}, Runs: 1}
	_, err := c.Run(context.Background(), rec.add)
	checkNoCgroupLeft(t)
	if err == nil || !strings.Contains(err.Error(), "a burst of 1000 does not fit cores=1,mem=64Mi") || !strings.Contains(err.Error(), " fit") {
		t.Fatalf("Run: %v, want a burst of 1000 not to fit", err)
	}
	if len(rec.bursts) != 1 || !rec.bursts[0].Warmup {
		t.Errorf("%d bursts before the error, want the one warm-up", len(rec.bursts))
	}
}

func TestBurstSizes(t *testing.T) {
	for _, tt := range []struct {
		in, want, err string
	}{
		{"1,2,4", "[1 2 4]", ""},
		{"8, 2,2", "[1 2 8]", ""},
		{"0", "", "0, want at least 1"},
		{"4,-2", "", "-2, want at least 1"},
		{"four", "", `"four" is not a whole number`},
		{"", "", `"" is not a whole number`},
	} {
		got, err := BurstSizes(tt.in)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("BurstSizes(%q) = %v, %v; want error %q", tt.in, got, err, tt.err)
		case tt.err == "" && (err != nil || fmt.Sprint(got) != tt.want):
			t.Errorf("BurstSizes(%q) = %v, %v; want %s", tt.in, got, err, tt.want)
		}
	}
}

func TestBurstArmsLeavesOutSnapshot(t *testing.T) {
	ok, not := BurstArms([]Arm{{Name: "default"}, {Name: "fixed", Target: prober.Target{Network: "tcp", Address: "127.0.0.1:1"}}})
	if len(ok) != 1 || len(not) != 1 || !strings.Contains(not[0].Error(), "fixed address") {
		t.Errorf("BurstArms: %v, %v", ok, not)
	}
}

// TestBurstPrebound: the prebound arm bursts, each instance handed a
// socket of its own, and nothing is left; the snapshot arm is left out.
func TestBurstPrebound(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	echo := testservers.BuildPackage(t, testservers.Echo)
	base := Arm{Name: "default", Path: echo, Args: func(t prober.Target) ([]string, error) { return []string{"--addr", t.Address}, nil }}
	b := Built{Arms: []Arm{base}}
	if err := AddStartArms(context.Background(), &b, []string{PreboundArm}, StartConfig{Checker: prober.Health{}}); err != nil || len(b.Failed) > 0 {
		t.Fatalf("AddStartArms: %v, %v", err, b.Failed)
	}
	var rec burstRecords
	c := Burst{Arms: b.Arms, Sizes: []int{1, 3}, Runs: 1, Wait: prober.WaitOptions{Timeout: 20 * time.Second}}
	_, err := c.Run(context.Background(), rec.add)
	checkNoInstanceLeft(t, rec.instances)
	checkNoCgroupLeft(t)
	if err != nil {
		t.Fatal(err)
	}
	if want := 2 + 2*(1+3); len(rec.instances) != want {
		t.Errorf("%d instances, want %d", len(rec.instances), want)
	}
}
