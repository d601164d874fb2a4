// Package explain attributes a Go server's start-up time: it starts the
// server with GODEBUG=inittrace=1, reads the runtime's per-package init
// lines from its stderr as they arrive, maps each package to its module
// through the binary's build info, and splits the start into phases
// (exec → runtime ready → inits done → accepting → first RPC).
package explain

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Init is one package's init, as the Go runtime traces it:
//
//	init PKG @T ms, D ms clock, B bytes, N allocs
//
// Times are milliseconds; the runtime truncates them (whole ms from 10 ms
// up, two significant digits below), so each carries its resolution.
type Init struct {
	Package string  `json:"package"`
	AtMs    float64 `json:"at_ms"`    // start, from the runtime's start (runtime.main)
	ClockMs float64 `json:"clock_ms"` // wall time of the package's init functions
	Bytes   int64   `json:"bytes"`    // heap bytes allocated by them
	Allocs  int64   `json:"allocs"`   // heap allocations made by them
	// AtResMs and ClockResMs are the printed values' resolution: the true
	// value lies in [printed, printed+resolution).
	AtResMs    float64 `json:"at_res_ms"`
	ClockResMs float64 `json:"clock_res_ms"`
	// ArrivedMs is when coldstart read the line from the server's stderr,
	// in milliseconds from the launch's t0 (0 when not known).
	ArrivedMs float64 `json:"arrived_ms,omitempty"`
}

// EndMs is when the init ended, from the runtime's start (lower bound).
func (i Init) EndMs() float64 { return i.AtMs + i.ClockMs }

// ParseInit parses one inittrace line. ok is false for any other line.
func ParseInit(line string) (Init, bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), "init ")
	if !ok {
		return Init{}, false
	}
	pkg, rest, ok := strings.Cut(rest, " @")
	if !ok || pkg == "" || strings.ContainsAny(pkg, " \t") {
		return Init{}, false
	}
	// "T ms, D ms clock, B bytes, N allocs"
	f := strings.Split(rest, ", ")
	if len(f) != 4 {
		return Init{}, false
	}
	var in Init
	in.Package = pkg
	var err error
	if in.AtMs, in.AtResMs, err = msField(f[0], " ms"); err != nil {
		return Init{}, false
	}
	if in.ClockMs, in.ClockResMs, err = msField(f[1], " ms clock"); err != nil {
		return Init{}, false
	}
	if in.Bytes, err = intField(f[2], " bytes"); err != nil {
		return Init{}, false
	}
	if in.Allocs, err = intField(f[3], " allocs"); err != nil {
		return Init{}, false
	}
	return in, true
}

func msField(s, suffix string) (v, res float64, err error) {
	num, ok := strings.CutSuffix(s, suffix)
	if !ok {
		return 0, 0, fmt.Errorf("no %q in %q", suffix, s)
	}
	if v, err = strconv.ParseFloat(num, 64); err != nil {
		return 0, 0, err
	}
	// The runtime prints whole milliseconds from 10 ms up, else up to
	// three decimals ("0" is below a microsecond); it truncates.
	res = 1
	if _, dec, ok := strings.Cut(num, "."); ok {
		res = 1 / pow10(len(dec))
	} else if num == "0" {
		res = 0.001
	}
	return v, res, nil
}

func pow10(n int) float64 {
	p := 1.0
	for range n {
		p *= 10
	}
	return p
}

func intField(s, suffix string) (int64, error) {
	num, ok := strings.CutSuffix(s, suffix)
	if !ok {
		return 0, fmt.Errorf("no %q in %q", suffix, s)
	}
	return strconv.ParseInt(num, 10, 64)
}

// Collector is an io.Writer for one server instance's stderr: it keeps the
// init trace lines, each stamped with when its newline arrived, and counts
// the other lines. Safe for one writer and concurrent readers.
type Collector struct {
	t0 time.Time

	mu      sync.Mutex
	partial []byte
	inits   []Init
	other   int
	first   string // first line that is not an init line
}

// NewCollector returns a Collector that stamps lines from t0. Set t0 later
// with SetT0 when the launch stamps it; until then lines are stamped from
// the collector's creation and rebased.
func NewCollector() *Collector { return &Collector{t0: time.Now()} }

// SetT0 rebases arrival stamps on t (the launch's t0).
func (c *Collector) SetT0(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	shift := ms(t.Sub(c.t0))
	for i := range c.inits {
		c.inits[i].ArrivedMs -= shift
	}
	c.t0 = t
}

// Write takes stderr bytes as they come.
func (c *Collector) Write(p []byte) (int, error) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.partial = append(c.partial, p...)
	for {
		i := bytes.IndexByte(c.partial, '\n')
		if i < 0 {
			break
		}
		c.line(string(c.partial[:i]), now)
		c.partial = c.partial[i+1:]
	}
	if len(c.partial) > 64<<10 { // a line this long is no trace line
		c.line(string(c.partial), now)
		c.partial = nil
	}
	return len(p), nil
}

func (c *Collector) line(s string, now time.Time) {
	if in, ok := ParseInit(s); ok {
		in.ArrivedMs = ms(now.Sub(c.t0))
		c.inits = append(c.inits, in)
		return
	}
	if strings.TrimSpace(s) == "" {
		return
	}
	c.other++
	if c.first == "" {
		c.first = s
		if len(c.first) > 200 {
			c.first = c.first[:200] + "…"
		}
	}
}

// Inits returns the init lines seen so far, in order.
func (c *Collector) Inits() []Init {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Init(nil), c.inits...)
}

// OtherLines is how many non-trace lines the server wrote to stderr, and
// the first of them.
func (c *Collector) OtherLines() (int, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.other, c.first
}

// ParseAll reads init lines from a whole stderr text (no arrival times).
func ParseAll(text string) []Init {
	var out []Init
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if in, ok := ParseInit(sc.Text()); ok {
			out = append(out, in)
		}
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
