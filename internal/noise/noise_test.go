package noise

import (
	"math"
	"os/exec"
	"testing"
	"time"
)

func TestWindowFromFixtures(t *testing.T) {
	// before: busy 1000+0+200+0+10+50 = 1260 ticks; after 1300+0+260+0+12+60
	// = 1632 (+372 ticks = 3.72 s, steal +10 ticks = 0.1 s); we used 0.42 s.
	own := time.Duration(0)
	b := Reader{Root: "testdata/before", own: func() time.Duration { return own }}
	a := Reader{Root: "testdata/after", own: func() time.Duration { return own }}
	s, err := b.Take()
	if err != nil {
		t.Fatal(err)
	}
	own = 420 * time.Millisecond
	e, err := a.Take()
	if err != nil {
		t.Fatal(err)
	}
	e.At = s.At.Add(2 * time.Second)
	w := Between(s, e)
	want := Window{Seconds: 2, OtherCPUSeconds: 3.72 - 0.42, OtherCPUs: 1.65, StealSeconds: 0.1, Busy: true}
	if math.Abs(w.OtherCPUSeconds-want.OtherCPUSeconds) > 1e-9 || math.Abs(w.OtherCPUs-want.OtherCPUs) > 1e-9 ||
		math.Abs(w.StealSeconds-want.StealSeconds) > 1e-9 || w.Busy != want.Busy || w.Seconds != want.Seconds {
		t.Errorf("Between() = %+v, want %+v", w, want)
	}
	l, err := a.load1()
	if err != nil || l != 5.25 {
		t.Errorf("load1() = %v, %v, want 5.25", l, err)
	}
}

func TestBadStat(t *testing.T) {
	if _, err := (Reader{Root: "testdata/nonexistent"}).Take(); err == nil {
		t.Error("Take() on a missing /proc/stat = nil error")
	}
}

// TestOwnWorkIsNotOther: CPU burnt by a child we wait for counts as ours,
// not as other work (compared within one window, not against a time).
func TestOwnWorkIsNotOther(t *testing.T) {
	s, err := Host.Take()
	if err != nil {
		t.Skipf("no /proc/stat: %v", err)
	}
	cmd := exec.Command("sh", "-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	e, err := Host.Take()
	if err != nil {
		t.Fatal(err)
	}
	own := (e.Own - s.Own).Seconds()
	if own <= 0 {
		t.Fatalf("own CPU did not grow over a busy child: %v", own)
	}
	w := Between(s, e)
	// Other work may run meanwhile (a shared machine), but our child's
	// CPU must not be in it: other ≤ host busy − own.
	if busy := (e.Busy - s.Busy).Seconds(); w.OtherCPUSeconds > busy-own+0.011 {
		t.Errorf("other CPU %v s > host busy %v s − own %v s", w.OtherCPUSeconds, busy, own)
	}
}
