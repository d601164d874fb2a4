package explain

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/coldstart-go/coldstart/record"
)

func TestParseInit(t *testing.T) {
	tests := []struct {
		line string
		want record.PackageInit
		ok   bool
	}{
		{"init internal/bytealg @0.008 ms, 0 ms clock, 0 bytes, 0 allocs",
			record.PackageInit{Package: "internal/bytealg", AtMs: 0.008, AtResMs: 0.001, ClockMs: 0, ClockResMs: 0.001}, true},
		{"init google.golang.org/grpc @32 ms, 0.13 ms clock, 29352 bytes, 486 allocs",
			record.PackageInit{Package: "google.golang.org/grpc", AtMs: 32, AtResMs: 1, ClockMs: 0.13, ClockResMs: 0.01, Bytes: 29352, Allocs: 486}, true},
		{"init example.com/heavy @1.8 ms, 30 ms clock, 4198728 bytes, 22 allocs\n",
			record.PackageInit{Package: "example.com/heavy", AtMs: 1.8, AtResMs: 0.1, ClockMs: 30, ClockResMs: 1, Bytes: 4198728, Allocs: 22}, true},
		{"heavy: init took 30.633 ms", record.PackageInit{}, false},
		{"init x @1 ms, 2 ms clock, 3 bytes", record.PackageInit{}, false},
		{"init x @1 ms, 2 ms clock, many bytes, 4 allocs", record.PackageInit{}, false},
		{"init  @1 ms, 2 ms clock, 3 bytes, 4 allocs", record.PackageInit{}, false},
		{"", record.PackageInit{}, false},
	}
	for _, tt := range tests {
		got, ok := ParseInit(tt.line)
		if ok != tt.ok {
			t.Errorf("ParseInit(%q) ok = %v, want %v", tt.line, ok, tt.ok)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("ParseInit(%q) (-want +got):\n%s", tt.line, diff)
		}
	}
}

func TestCollectorSplitsWritesAndRebases(t *testing.T) {
	c := NewCollector()
	// the runtime writes a line in pieces; a read may also join lines
	for _, p := range []string{"init a @0.010 ms, 0.", "020 ms clock, 8 bytes, 1 allocs\nhello from the server\ni", "nit b @0.050 ms, 1.5 ms clock, 16 bytes, 2 allocs\n", "tail without newline"} {
		c.Write([]byte(p))
	}
	got := c.Inits()
	if len(got) != 2 || got[0].Package != "a" || got[1].Package != "b" || got[1].ClockMs != 1.5 {
		t.Fatalf("Inits() = %+v, want a then b (1.5 ms)", got)
	}
	if n, first := c.OtherLines(); n != 1 || first != "hello from the server" {
		t.Errorf("OtherLines() = %d, %q, want 1, %q", n, first, "hello from the server")
	}
	before := got[0].ArrivedMs
	c.SetT0(c.t0.Add(-10 * time.Millisecond))
	if after := c.Inits()[0].ArrivedMs; after-before < 9.99 || after-before > 10.01 {
		t.Errorf("after moving t0 10 ms earlier, arrival %.3f -> %.3f ms, want +10", before, after)
	}
}

func TestTracedPhases(t *testing.T) {
	inits := []record.PackageInit{
		// runtime started at 2.0 ms from t0: this line was read 0.05 ms late
		{Package: "a", AtMs: 0.010, ClockMs: 0.020, AtResMs: 0.001, ClockResMs: 0.001, ArrivedMs: 2.080},
		// read 1 ms late (the reader was busy): must not move the estimate
		{Package: "b", AtMs: 0.05, ClockMs: 1.5, AtResMs: 0.01, ClockResMs: 0.1, ArrivedMs: 4.55},
		{Package: "c", AtMs: 12, ClockMs: 30, AtResMs: 1, ClockResMs: 1, ArrivedMs: 44.9},
	}
	ready, done, ok := tracedPhases(inits)
	if !ok || ready < 2.049 || ready > 2.051 {
		t.Errorf("runtime ready = %.3f (ok %v), want 2.050", ready, ok)
	}
	// last end 42 (+2 resolution) after a start at 2.05 = 46.05; the line came at 44.9
	if done != 44.9 {
		t.Errorf("inits done = %.3f, want 44.9 (the last line's arrival)", done)
	}
	if _, _, ok := tracedPhases(nil); ok {
		t.Error("tracedPhases(nil) ok, want not ok")
	}
	if _, _, ok := tracedPhases([]record.PackageInit{{Package: "x"}}); ok {
		t.Error("tracedPhases without arrival times ok, want not ok")
	}
}

func TestStripTrace(t *testing.T) {
	in := "server exited: default: exit status 3; stderr:\ninit a @0.01 ms, 0 ms clock, 0 bytes, 0 allocs\ntestserver: cannot start"
	want := "server exited: default: exit status 3; stderr:\ntestserver: cannot start"
	if got := StripTrace(in); got != want {
		t.Errorf("StripTrace() = %q, want %q", got, want)
	}
	cut := "server exited: default: exit status 3; stderr:\n21 ms, 0.019 ms clock, 1536 bytes, 1 allocs\ntestserver: cannot start"
	if got := StripTrace(cut); got != want {
		t.Errorf("StripTrace(cut line) = %q, want %q", got, want)
	}
	only := "server exited: x: exit status 0; stderr:\ninit a @0.01 ms, 0 ms clock, 0 bytes, 0 allocs"
	if got := StripTrace(only); !strings.Contains(got, "1 init trace lines, nothing else") {
		t.Errorf("StripTrace(only trace) = %q, want it to say only trace lines were written", got)
	}
}
