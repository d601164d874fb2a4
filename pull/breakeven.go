package pull

import (
	"sort"

	"gonum.org/v1/gonum/stat"

	"github.com/coldstart-go/coldstart/internal/stats"
)

// Summary is the medians of one variant's rows at one bandwidth and deploy.
type Summary struct {
	Variant
	Deploy           int     `json:"deploy"`
	Bandwidth        string  `json:"bandwidth"`
	BandwidthBits    int64   `json:"bandwidth_bits_per_second"`
	N                int     `json:"n"`
	ImageBytes       int64   `json:"image_bytes"`
	WireBytes        int64   `json:"wire_bytes"`
	LayersPulled     int     `json:"layers_pulled"`
	LayersReused     int     `json:"layers_reused"`
	PullMs           float64 `json:"pull_ms"`
	UnpackMs         float64 `json:"unpack_ms"`
	ImageReadyMs     float64 `json:"image_ready_ms"`
	AfterPullStartMs float64 `json:"after_pull_start_ms,omitempty"`
	ColdStartMs      float64 `json:"cold_start_ms,omitempty"`
	WarmStartMs      float64 `json:"warm_start_ms,omitempty"`
	NodeToFirstRPCMs float64 `json:"node_to_first_rpc_ms,omitempty"`
	// CapRatio is the median of measured/cap over the rows (0 without a
	// cap): 1.0 means the link ran exactly at its cap.
	CapRatio float64 `json:"cap_ratio,omitempty"`
}

// Summarize groups rows by variant, deploy and bandwidth (in the order
// first seen) and takes each column's median (empirical, no interpolation).
func Summarize(rows []Row) []Summary {
	type key struct {
		v      Variant
		deploy int
		bw     string
	}
	var order []key
	groups := map[key][]Row{}
	for _, r := range rows {
		k := key{r.Variant, r.Deploy, r.Bandwidth}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	out := make([]Summary, 0, len(order))
	for _, k := range order {
		g := groups[k]
		col := func(f func(Row) float64) float64 {
			xs := make([]float64, len(g))
			for i, r := range g {
				xs[i] = f(r)
			}
			return median(xs)
		}
		s := Summary{
			Variant: k.v, Deploy: k.deploy, Bandwidth: k.bw, BandwidthBits: g[0].BandwidthBits, N: len(g),
			ImageBytes:       g[0].ImageBytes,
			WireBytes:        int64(col(func(r Row) float64 { return float64(r.WireBytes) })),
			LayersPulled:     g[0].LayersPulled,
			LayersReused:     g[0].LayersReused,
			PullMs:           col(func(r Row) float64 { return r.PullMs }),
			UnpackMs:         col(func(r Row) float64 { return r.UnpackMs }),
			ImageReadyMs:     col(func(r Row) float64 { return r.ImageReadyMs }),
			AfterPullStartMs: col(func(r Row) float64 { return r.AfterPullStartMs }),
			ColdStartMs:      col(func(r Row) float64 { return r.ColdStartMs }),
			WarmStartMs:      col(func(r Row) float64 { return r.WarmStartMs }),
			NodeToFirstRPCMs: col(func(r Row) float64 { return r.NodeToFirstRPCMs }),
		}
		if s.BandwidthBits > 0 {
			s.CapRatio = col(func(r Row) float64 { return r.MeasuredBits / float64(r.BandwidthBits) })
		}
		out = append(out, s)
	}
	return out
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return stat.Quantile(0.5, stat.Empirical, s, nil)
}

// BreakEven compares two images at one bandwidth for a node that pulls
// once and then serves Starts starts: the first start costs the image
// (pull and unpack) plus a cold-page-cache start, every later start a warm
// start. Small is the image with fewer bytes.
type BreakEven struct {
	Bandwidth     string  `json:"bandwidth"`
	BandwidthBits int64   `json:"bandwidth_bits_per_second"`
	Small         Variant `json:"small"`
	Other         Variant `json:"other"`
	SmallBytes    int64   `json:"small_image_bytes"`
	OtherBytes    int64   `json:"other_image_bytes"`
	// SmallFirstMs and OtherFirstMs are image_ready_ms + cold_start_ms;
	// SmallWarmMs and OtherWarmMs the later starts.
	SmallFirstMs float64 `json:"small_first_ms"`
	OtherFirstMs float64 `json:"other_first_ms"`
	SmallWarmMs  float64 `json:"small_warm_ms"`
	OtherWarmMs  float64 `json:"other_warm_ms"`
	// Starts is the number of starts per pull at which both cost the
	// same (0 when one image wins at any number: see Always).
	Starts float64 `json:"break_even_starts,omitempty"`
	// SmallWinsBelow: the small image wins with fewer starts per pull than
	// Starts, the other with more (false: the other way round).
	SmallWinsBelow bool `json:"small_wins_below"`
	// Always is "small" or "other" when that image wins at any number of
	// starts per pull ("" when there is a break-even, or no difference).
	Always string `json:"always_wins,omitempty"`
	// FirstP and WarmP are the Mann–Whitney p-values of the two images'
	// first-start costs (node → first RPC, per pull) and of their arms'
	// warm starts; a difference that is not significant at
	// stats.DefaultConfidence counts as none.
	FirstP float64 `json:"first_p"`
	WarmP  float64 `json:"warm_p"`
	// NoDifference: neither difference is significant; nothing is
	// concluded.
	NoDifference bool `json:"no_difference,omitempty"`
}

// Starts are one arm's start figures pooled over every deploy-1 row (all
// compressions, layerings and bandwidths: the unpacked files are the same,
// so only the binary decides), medians in milliseconds.
type Starts struct {
	Arm         string  `json:"arm"`
	N           int     `json:"n"`
	AfterPullMs float64 `json:"after_pull_start_ms"`
	ColdMs      float64 `json:"cold_start_ms"`
	WarmMs      float64 `json:"warm_start_ms"`
}

// ArmStarts pools the start figures of rows per arm (rows without starts
// are left out).
func ArmStarts(rows []Row) map[string]Starts {
	by := map[string][]Row{}
	for _, r := range rows {
		if r.Deploy == 1 && r.ColdStartMs > 0 {
			by[r.Arm] = append(by[r.Arm], r)
		}
	}
	out := map[string]Starts{}
	for arm, g := range by {
		col := func(f func(Row) float64) float64 {
			xs := make([]float64, len(g))
			for i, r := range g {
				xs[i] = f(r)
			}
			return median(xs)
		}
		out[arm] = Starts{
			Arm: arm, N: len(g),
			AfterPullMs: col(func(r Row) float64 { return r.AfterPullStartMs }),
			ColdMs:      col(func(r Row) float64 { return r.ColdStartMs }),
			WarmMs:      col(func(r Row) float64 { return r.WarmStartMs }),
		}
	}
	return out
}

// BreakEvens compares, at each bandwidth on a node without the image
// (deploy 1): each pair of arms with the same compression and layering
// (upx vs static), and each pair of compressions for the same arm and
// layering (gzip vs zstd). The image's cost is each variant's median
// image_ready_ms; the start figures are the arm's pooled ones (ArmStarts),
// so two images of one binary differ in their image cost alone. Variants
// without start figures are skipped.
func BreakEvens(rows []Row) []BreakEven {
	sums := Summarize(rows)
	starts := ArmStarts(rows)
	first := map[string][]float64{} // variant@bandwidth: node → first RPC per pull
	warm := map[string][]float64{}  // arm: warm starts
	for _, r := range rows {
		if r.Deploy == 1 && r.ColdStartMs > 0 {
			k := r.Variant.String() + "@" + r.Bandwidth
			first[k] = append(first[k], r.NodeToFirstRPCMs)
			warm[r.Arm] = append(warm[r.Arm], r.WarmStartMs)
		}
	}
	var out []BreakEven
	for i, a := range sums {
		for _, b := range sums[i+1:] {
			if a.Deploy != 1 || b.Deploy != 1 || a.Bandwidth != b.Bandwidth || a.Layering != b.Layering {
				continue
			}
			armPair := a.Arm != b.Arm && a.Compression == b.Compression
			compPair := a.Arm == b.Arm && a.Compression != b.Compression
			sa, oka := starts[a.Arm]
			sb, okb := starts[b.Arm]
			if !armPair && !compPair || !oka || !okb {
				continue
			}
			e := breakEven(a, b, sa, sb)
			fp := stats.Compare(first[a.Variant.String()+"@"+a.Bandwidth], first[b.Variant.String()+"@"+b.Bandwidth], stats.DefaultConfidence).P
			wp := 1.0
			if a.Arm != b.Arm {
				wp = stats.Compare(warm[a.Arm], warm[b.Arm], stats.DefaultConfidence).P
			}
			out = append(out, e.resolve(fp, wp))
		}
	}
	return out
}

func breakEven(a, b Summary, sa, sb Starts) BreakEven {
	if b.ImageBytes < a.ImageBytes {
		a, b, sa, sb = b, a, sb, sa
	}
	e := BreakEven{
		Bandwidth: a.Bandwidth, BandwidthBits: a.BandwidthBits, Small: a.Variant, Other: b.Variant,
		SmallBytes: a.ImageBytes, OtherBytes: b.ImageBytes,
		SmallFirstMs: a.ImageReadyMs + sa.ColdMs, OtherFirstMs: b.ImageReadyMs + sb.ColdMs,
		SmallWarmMs: sa.WarmMs, OtherWarmMs: sb.WarmMs,
	}
	// cost(n) = first + (n-1)·warm; equal where
	// (n-1)·(smallWarm-otherWarm) = otherFirst - smallFirst.
	gain := e.OtherFirstMs - e.SmallFirstMs  // what the small image saves on the first start
	penalty := e.SmallWarmMs - e.OtherWarmMs // what it loses on every later one
	switch {
	case gain > 0 && penalty <= 0:
		e.Always, e.SmallWinsBelow = "small", true
	case gain <= 0 && penalty >= 0:
		e.Always = "other"
	case gain > 0: // penalty > 0
		e.Starts, e.SmallWinsBelow = 1+gain/penalty, true
	default: // gain <= 0, penalty < 0
		e.Starts = 1 + gain/penalty
	}
	return e
}

// resolve drops the differences that are not significant: with the first
// start's not, the image costs count as equal; with the warm starts' not,
// the later starts do; with neither, nothing is concluded.
func (e BreakEven) resolve(firstP, warmP float64) BreakEven {
	e.FirstP, e.WarmP = firstP, warmP
	alpha := 1 - stats.DefaultConfidence
	gainSig, penaltySig := firstP < alpha, warmP < alpha
	if gainSig && penaltySig {
		return e
	}
	e.Starts, e.Always, e.SmallWinsBelow = 0, "", false
	gain := e.OtherFirstMs - e.SmallFirstMs
	penalty := e.SmallWarmMs - e.OtherWarmMs
	switch {
	case !gainSig && !penaltySig:
		e.NoDifference = true
	case !gainSig: // only the later starts differ
		if penalty > 0 {
			e.Always = "other"
		} else {
			e.Always, e.SmallWinsBelow = "small", true
		}
	default: // only the first start differs
		if gain > 0 {
			e.Always, e.SmallWinsBelow = "small", true
		} else {
			e.Always = "other"
		}
	}
	return e
}
