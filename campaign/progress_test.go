package campaign

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coldstart-go/coldstart/budget"
	"github.com/coldstart-go/coldstart/internal/progress"
	"github.com/coldstart-go/coldstart/prober"
)

// reporter records what a campaign tells a progress.Reporter; as a
// Progress writer, For hands the campaign the reporter itself.
type reporter struct {
	mu      sync.Mutex
	total   int
	what    string
	steps   []string
	skipped int
	done    int
	written bytes.Buffer // anything written as plain text
}

func (r *reporter) Start(total int, what string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.total, r.what = total, what
}

func (r *reporter) Step(line string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.steps = append(r.steps, line)
}

func (r *reporter) Skip(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.skipped += n
}

func (r *reporter) Done() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done++
}

func (r *reporter) Write(p []byte) (int, error) { return r.written.Write(p) }

var _ progress.Reporter = (*reporter)(nil)

// twoBudgets pins servers to CPU 0, then CPU 1: budgets that need no
// cgroups, so the totals cover several budgets without root.
var twoBudgets = []budget.Budget{{CPUs: []int{0}}, {CPUs: []int{1}}}

// A campaign's total is (runs+1) × budgets × arms; an arm that fails
// under KeepGoing takes its untaken probes off it, so the steps taken and
// the steps skipped add up to the total.
func TestColdStartProgressTotals(t *testing.T) {
	if n := len(mustAllowedCPUs(t)); n < 2 {
		t.Skipf("needs two CPUs for two budgets, have %d", n)
	}
	r := &reporter{}
	c := ColdStart{
		Arms:      []Arm{selfArm("crashy", "crash"), selfArm("good", "health")},
		Budgets:   twoBudgets,
		Runs:      2,
		Wait:      prober.WaitOptions{Timeout: 10 * time.Second},
		KeepGoing: true,
		Progress:  r,
	}
	if _, err := c.Run(context.Background(), func(prober.Sample) error { return nil }); err == nil {
		t.Fatal("Run() = nil error, want the crashy arm's")
	}
	if r.total != 12 || r.what != "cold starts" {
		t.Errorf("Start(%d, %q), want Start(12, \"cold starts\"): 3 rounds × 2 budgets × 2 arms", r.total, r.what)
	}
	// crashy fails once (run 0, cpus=0) and misses 5 probes; good takes 6.
	if len(r.steps) != 7 || r.skipped != 5 {
		t.Errorf("%d steps and %d skipped, want 7 and 5:\n%s", len(r.steps), r.skipped, strings.Join(r.steps, "\n"))
	}
	if r.done != 1 {
		t.Errorf("Done called %d times, want once", r.done)
	}
	if r.written.Len() != 0 {
		t.Errorf("campaign wrote %q beside its steps, want nothing", r.written.String())
	}
	if len(r.steps) > 0 && !strings.HasPrefix(r.steps[0], "run 0/2  crashy   cpus=0       error: ") {
		t.Errorf("first step %q, want crashy's error under cpus=0", r.steps[0])
	}
}

// Without a terminal the progress is today's text: a line per probe.
func TestColdStartProgressLines(t *testing.T) {
	var buf bytes.Buffer
	c := ColdStart{Arms: []Arm{selfArm("self", "health")}, Runs: 2, Progress: &buf}
	if _, err := c.Run(context.Background(), func(prober.Sample) error { return nil }); err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`^run ([0-2])/2  self     max          +[0-9.]+ ms  \d+ attempts( \(warm-up, not counted\))?$`)
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("progress = %q, want 3 lines (warm-up + 2 runs)", buf.String())
	}
	for i, l := range lines {
		m := line.FindStringSubmatch(l)
		if m == nil || m[1] != string(rune('0'+i)) || (m[2] != "") != (i == 0) {
			t.Errorf("progress line %d = %q, want run %d/2 of self (warm-up only at 0)", i, l, i)
		}
	}
}

// Density's total is arms × instances, a line per instance ready.
func TestDensityProgress(t *testing.T) {
	r := &reporter{}
	d := Density{Arms: []Arm{selfArm("self", "health")}, Instances: 2, Progress: r}
	if _, err := d.Run(context.Background(), func(DensitySample) error { return nil }); err != nil {
		t.Fatal(err)
	}
	want := []string{"density self     instance 1/2 ready", "density self     instance 2/2 ready"}
	if r.total != 2 || strings.Join(r.steps, "\n") != strings.Join(want, "\n") || r.done != 1 {
		t.Errorf("Start(%d), steps %q, Done ×%d; want Start(2), %q, Done ×1", r.total, r.steps, r.done, want)
	}
}

func mustAllowedCPUs(t *testing.T) []int {
	t.Helper()
	cpus, err := budget.AllowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	return cpus
}
