package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/vbauerster/mpb/v8"
)

func TestForLines(t *testing.T) {
	var buf bytes.Buffer
	r := For(&buf)
	r.Start(3, "cold starts")
	r.Step("run 0/2  default  max          4.31 ms  3 attempts (warm-up, not counted)")
	r.Skip(1)
	r.Step("run 1/2  default  max          4.02 ms  2 attempts")
	r.Done()
	r.Done()
	want := "run 0/2  default  max          4.31 ms  3 attempts (warm-up, not counted)\n" +
		"run 1/2  default  max          4.02 ms  2 attempts\n"
	if got := buf.String(); got != want {
		t.Errorf("lines wrote %q, want %q", got, want)
	}
}

func TestForQuiet(t *testing.T) {
	r := For(nil)
	r.Start(1, "x")
	r.Step("nothing")
	r.Done()
	if _, ok := r.(quiet); !ok {
		t.Errorf("For(nil) = %T, want quiet", r)
	}
}

func TestForTerminal(t *testing.T) {
	term := newTerminal(&bytes.Buffer{}, -1)
	if got := For(term); got != Reporter(term) {
		t.Errorf("For(terminal) = %T, want the terminal itself", got)
	}
}

func TestAutoNotTerminal(t *testing.T) {
	var buf bytes.Buffer
	if got := Auto(&buf); got != &buf {
		t.Errorf("Auto(buffer) = %T, want the buffer", got)
	}
	// A test's stderr is a file but, under go test, not a terminal.
	f, err := osCreateTemp(t)
	if err != nil {
		t.Fatal(err)
	}
	if got := Auto(f); got != f {
		t.Errorf("Auto(regular file) = %T, want the file", got)
	}
}

func TestTiming(t *testing.T) {
	tests := []struct {
		name        string
		elapsed     time.Duration
		done, total int64
		known       bool
		want        string
	}{
		{"no step yet", 3 * time.Second, 0, 63, true, "elapsed 3s, ETA ?"},
		{"a third", 20 * time.Second, 21, 63, true, "elapsed 20s, ETA 40s"},
		{"minutes", 125 * time.Second, 10, 40, true, "elapsed 2m05s, ETA 6m15s"},
		{"hours", 3 * time.Hour, 1, 2, true, "elapsed 3h00m, ETA 3h00m"},
		{"finished", 61 * time.Second, 63, 63, true, "elapsed 1m01s, ETA 0s"},
		{"unknown total", 9 * time.Second, 4, 4, false, "elapsed 9s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := timing(tt.elapsed, tt.done, tt.total, tt.known); got != tt.want {
				t.Errorf("timing(%v, %d, %d, %v) = %q, want %q", tt.elapsed, tt.done, tt.total, tt.known, got, tt.want)
			}
		})
	}
}

func TestTruncate(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		want string
	}{
		{"run 1/3 default", 40, "run 1/3 default"},
		{"run 1/3 default", 8, "run 1/3…"},
		{"run 1/3 default", 1, ""},
		{"run 1/3 default", -5, ""},
	}
	for _, tt := range tests {
		if got := truncate(tt.s, tt.n); got != tt.want {
			t.Errorf("truncate(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}

// TestTerminalBar draws to a buffer as if to a 100-column terminal: the
// bar's last frame has what, done/total and the last step's line, lines
// written while it is live come out above it whole, and a campaign with
// a skipped step still completes.
func TestTerminalBar(t *testing.T) {
	var buf syncBuffer
	term := newTerminal(&buf, -1, mpb.WithWidth(100), mpb.WithAutoRefresh(), mpb.WithRefreshRate(10*time.Millisecond))
	term.Write([]byte("built default\n")) // no bar yet: straight through
	term.Start(4, "cold starts")
	term.Step("run 0/1  default  max          4.31 ms  3 attempts (warm-up, not counted)")
	// Written once the bar has redrawn over its first frame (every 10 ms).
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(buf.String(), "\x1b[1A"); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the bar did not redraw within 10 s:\n%q", buf.String())
		}
	}
	term.Write([]byte("coldstart: a no"))
	term.Write([]byte("te\n"))
	term.Step("run 0/1  static   max          3.90 ms  2 attempts (warm-up, not counted)")
	term.Skip(1)
	term.Step("run 1/1  static   max          3.12 ms  1 attempts")
	term.Done()
	term.Write([]byte("coldstart: results in x.jsonl\n"))

	out := buf.String()
	if !strings.HasPrefix(out, "built default\n") {
		t.Errorf("output does not start with the line written before the bar:\n%q", out)
	}
	if n := strings.Count(out, "coldstart: a note\n"); n != 1 {
		t.Errorf("note written while the bar was live appears %d times, want 1 whole line:\n%q", n, out)
	}
	if !strings.HasSuffix(out, "coldstart: results in x.jsonl\n") {
		t.Errorf("output does not end with the line written after Done:\n%q", out)
	}
	// Each redraw starts at the first column, whatever was echoed below.
	if up, cr := strings.Count(out, "\x1b[1A"), strings.Count(out, "\r\x1b[1A"); up == 0 || cr != up {
		t.Errorf("%d redraws, %d of them after a carriage return; want some, all", up, cr)
	}
	final := lastFrame(out)
	for _, want := range []string{"cold starts 3/3", "ETA 0s", "run 1/1 static max 3.12 ms 1 attempts"} {
		if !strings.Contains(final, want) {
			t.Errorf("last frame %q lacks %q", final, want)
		}
	}
	if w := len([]rune(final)); w > 100 {
		t.Errorf("last frame is %d columns, want at most 100: %q", w, final)
	}
}

// TestTerminalAbort: a campaign that ends early leaves its bar where it
// stood.
func TestTerminalAbort(t *testing.T) {
	var buf syncBuffer
	term := newTerminal(&buf, -1, mpb.WithWidth(100), mpb.WithAutoRefresh(), mpb.WithRefreshRate(10*time.Millisecond))
	term.Start(10, "density")
	term.Step("density default  instance 1/5 ready")
	term.Done()
	term.Step("after Done: ignored")
	if final := lastFrame(buf.String()); !strings.Contains(final, "density 1/10") || strings.Contains(final, "ignored") {
		t.Errorf("last frame %q, want density 1/10 and no step after Done", final)
	}
}

// lastFrame is the last bar line drawn: the text after the last cursor
// movement, escape sequences removed.
func lastFrame(out string) string {
	lines := strings.Split(strings.ReplaceAll(stripEscapes(out), "\r", ""), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], "[") && strings.Contains(lines[i], "]") {
			return lines[i]
		}
	}
	return ""
}
