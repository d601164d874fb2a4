package record

import (
	"math"
	"testing"
)

func TestPullBreakEven(t *testing.T) {
	static := PullSummary{PullVariant: PullVariant{Arm: "static"}, Deploy: 1, Bandwidth: "10Mbit", ImageBytes: 6e6, ImageReadyMs: 5000}
	upx := PullSummary{PullVariant: PullVariant{Arm: "upx"}, Deploy: 1, Bandwidth: "10Mbit", ImageBytes: 2e6, ImageReadyMs: 1700}
	ss := PullStarts{Arm: "static", ColdMs: 40, WarmMs: 10}
	su := PullStarts{Arm: "upx", ColdMs: 100, WarmMs: 80}
	e := pullBreakEven(static, upx, ss, su)
	// gain 5040-1800 = 3240 ms, penalty 70 ms per later start.
	if e.Small.Arm != "upx" || !e.SmallWinsBelow || e.Always != "" || math.Abs(e.Starts-(1+3240.0/70)) > 1e-9 {
		t.Errorf("pullBreakEven = %+v, want upx winning below %.2f starts", e, 1+3240.0/70)
	}
	slow := upx
	slow.ImageReadyMs = 6000
	if e := pullBreakEven(static, slow, ss, su); e.Always != "other" || e.Small.Arm != "upx" {
		t.Errorf("pullBreakEven(slower and larger first start) = %+v, want other always", e)
	}
	if r := e.resolve(0.01, 0.01); r.Starts != e.Starts || r.Always != "" || r.NoDifference {
		t.Errorf("resolve(significant) = %+v, want it unchanged", r)
	}
	if r := e.resolve(0.2, 0.01); r.Always != "other" || r.Starts != 0 {
		t.Errorf("resolve(first start not significant) = %+v, want the faster later starts (static) always", r)
	}
	if r := e.resolve(0.01, 0.3); r.Always != "small" || !r.SmallWinsBelow {
		t.Errorf("resolve(later starts not significant) = %+v, want the cheaper first start (upx) always", r)
	}
	if r := e.resolve(0.5, 0.5); !r.NoDifference || r.Always != "" || r.Starts != 0 {
		t.Errorf("resolve(nothing significant) = %+v, want no difference", r)
	}
	fast := su
	fast.WarmMs = 5
	if e := pullBreakEven(static, upx, ss, fast); e.Always != "small" {
		t.Errorf("pullBreakEven(faster everywhere) = %+v, want small always", e)
	}
}
