package record

import (
	"math"
	"testing"

	"github.com/coldstart-go/coldstart/internal/stats"
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

// pulls are n deploy-1 pulls of variant v at 10Mbit, node → first RPC
// near ms (a little spread, no ties), and n deploy-2 pulls without starts.
func pulls(v PullVariant, n int, ms float64) []PullRow {
	var rs []PullRow
	for i := 0; i < n; i++ {
		f := 1 + float64(i)/1000
		rs = append(rs,
			PullRow{PullVariant: v, Deploy: 1, Bandwidth: "10Mbit", Iteration: i + 1, ImageReadyMs: ms / 2 * f, ColdStartMs: ms / 2 * f, NodeToFirstRPCMs: ms * f},
			PullRow{PullVariant: v, Deploy: 2, Bandwidth: "10Mbit", Iteration: i + 1, ImageReadyMs: ms / 10 * f})
	}
	return rs
}

// TestComparePulls: each image against the baseline arm's image of the
// same compression and layering, at the same bandwidth and deploy. Ten
// times the node → first RPC over eight pulls each is slower beyond
// doubt; the same pulls are no different; a deploy 2, which starts
// nothing, is compared on the image alone; an image with no baseline
// twin is not compared.
func TestComparePulls(t *testing.T) {
	gz := func(arm string) PullVariant { return PullVariant{Arm: arm, Compression: Gzip, Layering: SingleLayer} }
	var rows []PullRow
	rows = append(rows, pulls(gz("static"), 8, 100)...)
	rows = append(rows, pulls(gz("upx"), 8, 1000)...)
	rows = append(rows, pulls(gz("pgo"), 8, 100)...)
	rows = append(rows, pulls(PullVariant{Arm: "upx", Compression: Zstd, Layering: SingleLayer}, 8, 1000)...)
	sums := SummarizePulls(rows)
	if base := ComparePulls(sums, rows, "", 0.95, 0.05); base != "static" {
		t.Fatalf("ComparePulls chose %q, want static (no default: the first arm)", base)
	}
	for _, s := range sums {
		v, what := s.VsBaseline, s.PullVariant.String()+" deploy "+string(rune('0'+s.Deploy))
		switch {
		case s.Arm == "static":
			if v.Verdict != VerdictBaseline {
				t.Errorf("%s: %+v, want the baseline's own row", what, v)
			}
		case s.Compression == Zstd:
			if v.Verdict != "" || s.VsBaselineOn != "" {
				t.Errorf("%s (static has no zstd image): %+v on %q, want nothing compared", what, v, s.VsBaselineOn)
			}
		case s.Arm == "upx":
			on := "node_to_first_rpc_ms"
			if s.Deploy == 2 {
				on = "image_ready_ms"
			}
			if v.Verdict != "slower" || v.Ratio == nil || math.Abs(*v.Ratio-10) > 0.1 || v.P == nil || *v.P >= 0.001 || v.CILow == nil || s.VsBaselineOn != on {
				t.Errorf("%s (10× the time): %+v on %q, want slower, ratio 10 with an interval, p < 0.001, on %s", what, v, s.VsBaselineOn, on)
			}
		case s.Arm == "pgo":
			if v.Verdict != "no difference detected" || v.Ratio == nil || math.Abs(*v.Ratio-1) > 1e-9 {
				t.Errorf("%s (the same pulls): %+v, want no difference detected, ratio 1", what, v)
			}
		}
	}
}

// TestPullBreakEvensPaired: two images' first starts pair by iteration.
// Each iteration's noise (a burst of steal hits the whole round) moves
// both alike, and the small image is 3% cheaper in every round: paired by
// iteration that is significant, where the same values unpaired, the
// rounds' spread swamping 3%, are not.
func TestPullBreakEvensPaired(t *testing.T) {
	small := PullVariant{Arm: "upx", Compression: "gzip", Layering: "single"}
	big := PullVariant{Arm: "static", Compression: "gzip", Layering: "single"}
	var rows []PullRow
	var fa, fb []float64
	for it := 1; it <= 10; it++ {
		round := 1 + 0.5*float64((it*7)%10)/10 // 1.0 … 1.45, one per round
		for _, v := range []struct {
			v     PullVariant
			ms    float64
			bytes int64
		}{{small, 970, 2e6}, {big, 1000, 6e6}} {
			ms := v.ms * round
			rows = append(rows, PullRow{PullVariant: v.v, Deploy: 1, Bandwidth: "10Mbit", Iteration: it, ImageBytes: v.bytes,
				ImageReadyMs: ms / 2, ColdStartMs: ms / 2, WarmStartMs: 10 + float64(it)/100, NodeToFirstRPCMs: ms})
			if v.v == small {
				fa = append(fa, ms)
			} else {
				fb = append(fb, ms)
			}
		}
	}
	es := PullBreakEvens(rows)
	if len(es) != 1 {
		t.Fatalf("%d break-evens, want 1: %+v", len(es), es)
	}
	e := es[0]
	if e.FirstTest != stats.PairedWilcoxon || e.FirstP >= 0.05 {
		t.Errorf("first start: test %s p %.3f, want paired-wilcoxon and significant", e.FirstTest, e.FirstP)
	}
	if p := stats.Compare(fa, fb, stats.DefaultConfidence).P; p < 0.05 {
		t.Errorf("unpaired p %.3f: the test shows nothing unless unpaired misses it", p)
	}
}
