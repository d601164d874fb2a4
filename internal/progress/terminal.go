package progress

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/vbauerster/cupwriter"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"golang.org/x/term"
)

// Auto is w as a campaign's progress and notes writer: a Terminal when w
// is an *os.File on a terminal that can move its cursor (TERM is not
// "dumb"), else w itself, which For turns into Lines.
func Auto(w io.Writer) io.Writer {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) || os.Getenv("TERM") == "dumb" {
		return w
	}
	return NewTerminal(f)
}

// Terminal is a terminal's stderr during a command: a Reporter that draws
// one live bar per campaign (what, done/total, elapsed, ETA, the last
// step's line), and an io.Writer for all else the command prints there
// (notes, build lines, -v command lines). While a bar is live, whole lines
// written are printed above it, so they never garble it; a partial line
// waits for its newline. With no bar live, writes go straight through.
type Terminal struct {
	out  io.Writer
	fd   int // out's descriptor, -1 when out is not a terminal (tests)
	opts []mpb.ContainerOption

	mu      sync.Mutex
	p       *mpb.Progress // nil when no bar is live
	bar     *mpb.Bar
	st      *barState
	pending []byte // a partial line written while the bar is live
}

// NewTerminal returns the Terminal for f, a terminal.
func NewTerminal(f *os.File) *Terminal { return newTerminal(f, int(f.Fd())) }

// newTerminal draws to out, the terminal whose descriptor is fd; a test
// passes a buffer, fd -1 and options of its own (a fixed width, auto
// refresh).
func newTerminal(out io.Writer, fd int, opts ...mpb.ContainerOption) *Terminal {
	return &Terminal{out: out, fd: fd, opts: opts}
}

// consoleWriter is mpb's terminal writer for t.out, each frame starting
// at the line's first column: mpb moves the cursor up over its last frame
// without a carriage return, so a ^C the terminal echoed below the bar
// would push the redrawn bar two columns right, past the edge, and it
// would wrap and leave a stale line.
func (t *Terminal) consoleWriter() mpb.ConsoleWriter {
	cw := cupwriter.New(carriageReturn{t.out}, t.fd < 0)
	if t.fd >= 0 {
		cw.SetTermFd(t.fd) // its width, and a terminal's redraws
	}
	return cw
}

// carriageReturn writes "\r" before each write: mpb writes a frame (with
// the cursor movement over the previous one first) in one write.
type carriageReturn struct{ w io.Writer }

func (c carriageReturn) Write(p []byte) (int, error) {
	if _, err := c.w.Write(append([]byte{'\r'}, p...)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// barWidth is the width of the bar itself, brackets included: the rest
// of the line is the counts, times and the last step's line.
const barWidth = 18

// barState is what the bar's decorators read, on mpb's goroutine.
type barState struct {
	what  string
	total int
	start time.Time

	mu    sync.Mutex
	label string
	end   time.Time // zero while running: elapsed stops at Done
}

func (s *barState) setLabel(l string) {
	s.mu.Lock()
	s.label = strings.Join(strings.Fields(l), " ")
	s.mu.Unlock()
}

func (s *barState) read() (label string, elapsed time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	end := s.end
	if end.IsZero() {
		end = time.Now()
	}
	return s.label, end.Sub(s.start)
}

// Start draws a new bar for a campaign of total steps, ending the live
// one first.
func (t *Terminal) Start(total int, what string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.doneLocked()
	st := &barState{what: what, total: total, start: time.Now()}
	opts := append([]mpb.ContainerOption{mpb.WithConsoleWriter(t.consoleWriter())}, t.opts...)
	t.p = mpb.New(opts...)
	t.st = st
	t.bar = t.p.New(int64(total), mpb.BarStyle(),
		mpb.BarWidth(barWidth),
		mpb.PrependDecorators(decor.Any(func(s decor.Statistics) string {
			if st.total <= 0 {
				return fmt.Sprintf("%s %d", st.what, s.Current)
			}
			return fmt.Sprintf("%s %d/%d", st.what, s.Current, s.Total)
		})),
		mpb.AppendDecorators(
			decor.Any(func(s decor.Statistics) string {
				_, el := st.read()
				return timing(el, s.Current, s.Total, st.total > 0) + "  "
			}),
			decor.Any(func(s decor.Statistics) string {
				l, _ := st.read()
				// The filler is drawn after the decorators, with a
				// space either side: leave it its width.
				return truncate(l, s.AvailableWidth-barWidth-2)
			}),
		),
	)
}

// timing is "elapsed 12s, ETA 45s": the time left is at the average pace
// so far ("ETA ?" before the first step, none when the total is unknown).
func timing(elapsed time.Duration, done, total int64, known bool) string {
	s := "elapsed " + short(elapsed)
	switch {
	case !known:
		return s
	case done == 0:
		return s + ", ETA ?"
	default:
		left := time.Duration(float64(elapsed) / float64(done) * float64(max(total-done, 0)))
		return s + ", ETA " + short(left)
	}
}

// short is d to the second: "9s", "4m05s", "1h02m".
func short(d time.Duration) string {
	d = d.Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d/time.Minute), int(d/time.Second)%60)
	default:
		return fmt.Sprintf("%dh%02dm", int(d/time.Hour), int(d/time.Minute)%60)
	}
}

// truncate cuts s to n columns, ending in "…" when cut (labels are
// ASCII: arm and budget names, numbers).
func truncate(s string, n int) string {
	switch {
	case n <= 1:
		return ""
	case len(s) <= n:
		return s
	default:
		return s[:n-1] + "…"
	}
}

// Step advances the live bar by one and shows line beside it.
func (t *Terminal) Step(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.bar == nil {
		return
	}
	t.st.setLabel(line)
	t.bar.Increment()
}

// Skip takes n steps off the live bar's total.
func (t *Terminal) Skip(n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.bar == nil || t.st.total <= 0 || n <= 0 {
		return
	}
	t.st.total = max(t.st.total-n, 0)
	t.bar.SetTotal(int64(t.st.total), t.bar.Current() >= int64(t.st.total))
}

// Done leaves the live bar on screen as it last stood, with its elapsed
// time stopped, and moves below it.
func (t *Terminal) Done() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.doneLocked()
}

func (t *Terminal) doneLocked() {
	if t.p == nil {
		return
	}
	t.st.mu.Lock()
	t.st.end = time.Now()
	t.st.mu.Unlock()
	if t.st.total <= 0 {
		t.bar.SetTotal(-1, true) // unknown total: complete where it stands
	}
	t.bar.Abort(false) // no-op when complete; else keep it drawn
	t.p.Wait()
	t.p, t.bar, t.st = nil, nil, nil
	if len(t.pending) > 0 {
		t.out.Write(t.pending)
		t.pending = nil
	}
}

// Write prints b: above the live bar, a whole line at a time, or straight
// to the terminal when no bar is live.
func (t *Terminal) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.p == nil {
		return t.out.Write(b)
	}
	t.pending = append(t.pending, b...)
	i := bytes.LastIndexByte(t.pending, '\n')
	if i < 0 {
		return len(b), nil
	}
	if _, err := t.p.Write(t.pending[:i+1]); err != nil {
		return 0, err
	}
	t.pending = append(t.pending[:0], t.pending[i+1:]...)
	return len(b), nil
}
