// Package explain collects what attributes a Go server's start-up time: it
// reads the runtime's per-package init lines (GODEBUG=inittrace=1) from the
// server's stderr as they arrive, turns each start into a record.Trace with
// the traced phases (exec → runtime ready → inits done → accepting → first
// RPC), and reads the binary's build info (record.Modules) so packages map
// to modules. Analyze attributes their start-up time.
package explain

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coldstart-go/coldstart/record"
)

// ParseInit parses one inittrace line. ok is false for any other line.
func ParseInit(line string) (record.PackageInit, bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), "init ")
	if !ok {
		return record.PackageInit{}, false
	}
	pkg, rest, ok := strings.Cut(rest, " @")
	if !ok || pkg == "" || strings.ContainsAny(pkg, " \t") {
		return record.PackageInit{}, false
	}
	// "T ms, D ms clock, B bytes, N allocs"
	f := strings.Split(rest, ", ")
	if len(f) != 4 {
		return record.PackageInit{}, false
	}
	var in record.PackageInit
	in.Package = pkg
	var err error
	if in.AtMs, in.AtResMs, err = msField(f[0], " ms"); err != nil {
		return record.PackageInit{}, false
	}
	if in.ClockMs, in.ClockResMs, err = msField(f[1], " ms clock"); err != nil {
		return record.PackageInit{}, false
	}
	if in.Bytes, err = intField(f[2], " bytes"); err != nil {
		return record.PackageInit{}, false
	}
	if in.Allocs, err = intField(f[3], " allocs"); err != nil {
		return record.PackageInit{}, false
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
	inits   []record.PackageInit
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
func (c *Collector) Inits() []record.PackageInit {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]record.PackageInit(nil), c.inits...)
}

// OtherLines is how many non-trace lines the server wrote to stderr, and
// the first of them.
func (c *Collector) OtherLines() (int, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.other, c.first
}

// ParseAll reads init lines from a whole stderr text (no arrival times).
func ParseAll(text string) []record.PackageInit {
	var out []record.PackageInit
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
