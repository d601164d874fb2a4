package steady

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coldstart-go/coldstart/internal/progress"
)

// reporter records what a run tells a progress.Reporter; as Config.Log,
// progress.For hands the run the reporter itself, and the run's other
// lines are written to it as text.
type reporter struct {
	mu      sync.Mutex
	total   int
	what    string
	steps   []string
	skipped int
	done    int
	written bytes.Buffer
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

func (r *reporter) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.written.Write(p)
}

var _ progress.Reporter = (*reporter)(nil)

// Run's total is every round of every step (2 steps × 3 rounds here), a
// step per round as its line says, and its other lines written as text.
func TestRunProgress(t *testing.T) {
	a := sampleArm(t)
	b := a
	a.Name, b.Name = "a", "b"
	r := &reporter{}
	cfg := Config{
		Arms: []Arm{a, b}, Rounds: 3, Scenarios: []Scenario{Sequential, Throughput}, Concurrency: []int{4},
		Warmup: 100, Calls: 300, Log: r,
	}
	var c collect
	if err := Run(context.Background(), cfg, c.record); err != nil {
		t.Fatal(err)
	}
	if r.total != 6 || r.what != "steady rounds" || r.done != 1 {
		t.Errorf("Start(%d, %q), Done ×%d; want Start(6, \"steady rounds\"), Done ×1", r.total, r.what, r.done)
	}
	line := regexp.MustCompile(`^steady: .+ round [1-3]/3 done$`)
	if len(r.steps) != 6 {
		t.Errorf("%d steps, want 6:\n%s", len(r.steps), strings.Join(r.steps, "\n"))
	}
	for _, s := range r.steps {
		if !line.MatchString(s) {
			t.Errorf("step %q, want a round's line", s)
		}
	}
	if w := r.written.String(); !strings.Contains(w, "ready at") || strings.Contains(w, "round 1/3 done") {
		t.Errorf("other lines %q: want the servers' ready lines and no round lines", w)
	}
}

// Without a Reporter, the round lines are written as before, among the
// others.
func TestRunProgressLines(t *testing.T) {
	var buf syncBuf
	cfg := Config{Arms: []Arm{sampleArm(t)}, Rounds: 2, Scenarios: []Scenario{Sequential}, Warmup: 100, Calls: 300, Log: &buf}
	var c collect
	if err := Run(context.Background(), cfg, c.record); err != nil {
		t.Fatal(err)
	}
	got := regexp.MustCompile(`(?m)^steady: .+ round (\d)/2 done$`).FindAllStringSubmatch(buf.String(), -1)
	if len(got) != 2 || got[0][1] != "1" || got[1][1] != "2" {
		t.Errorf("round lines %q in:\n%s", got, buf.String())
	}
}

// A soak's total is its intervals per server; an interval too short to
// compare at the end is skipped, so the steps and skips add up to it.
func TestSoakProgress(t *testing.T) {
	if testing.Short() {
		t.Skip("a 1-second soak")
	}
	r := &reporter{}
	cfg := Config{Arms: []Arm{sampleArm(t)}, Client: ClientLean, Rate: 200, Soak: time.Second, SoakInterval: 400 * time.Millisecond, MaxInFlight: 16, Warmup: 500, Log: r}
	err := RunSoak(context.Background(), cfg, func(SoakRow) error { return nil }, func(SoakSummary) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if r.total != 3 || r.what != "soak intervals" || r.done != 1 {
		t.Errorf("Start(%d, %q), Done ×%d; want Start(3, \"soak intervals\"), Done ×1", r.total, r.what, r.done)
	}
	if len(r.steps)+r.skipped != 3 || len(r.steps) < 2 {
		t.Errorf("%d steps + %d skipped, want at least 2 steps, 3 in all:\n%s", len(r.steps), r.skipped, strings.Join(r.steps, "\n"))
	}
	for _, s := range r.steps {
		if !strings.HasPrefix(s, "steady: default soak ") {
			t.Errorf("step %q, want a soak interval's line", s)
		}
	}
}

// syncBuf is a bytes.Buffer the run's goroutines can share.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
