package pull

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/coldstart-go/coldstart/internal/progress"
	"github.com/coldstart-go/coldstart/internal/testservers"
	"github.com/coldstart-go/coldstart/record"
)

// reporter records what Run tells a progress.Reporter; as Config.Progress,
// progress.For hands Run the reporter itself, and the image lines are
// written to it as text.
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

// Run's total is iterations × bandwidths × images, a step per pull; the
// images built before it are lines of their own.
func TestRunProgress(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the sample server and pulls it")
	}
	r := &reporter{}
	_, err := Run(context.Background(), Config{
		Binaries:     []Binary{{Arm: "static", Path: testservers.BuildPackage(t, testservers.Echo)}},
		Compressions: []record.Compression{record.Gzip, record.Zstd},
		Layerings:    []record.Layering{record.SingleLayer},
		Bandwidths:   []Bandwidth{Max},
		Iterations:   2,
		Port:         freePort(t),
		WorkDir:      t.TempDir(),
		Progress:     r,
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.total != 4 || r.what != "pulls" || r.done != 1 || r.skipped != 0 {
		t.Errorf("Start(%d, %q), Skip %d, Done ×%d; want Start(4, \"pulls\"), no skip, Done ×1", r.total, r.what, r.skipped, r.done)
	}
	if len(r.steps) != 4 {
		t.Errorf("%d steps, want 4:\n%s", len(r.steps), strings.Join(r.steps, "\n"))
	}
	for _, s := range r.steps {
		if !strings.HasPrefix(s, "pull: static/") || !strings.Contains(s, " at max: ") {
			t.Errorf("step %q, want a pull's line", s)
		}
	}
	if n := strings.Count(r.written.String(), "pull: image "); n != 2 {
		t.Errorf("image lines %q, want 2 (gzip, zstd)", r.written.String())
	}
}
