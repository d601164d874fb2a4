package record

import (
	"slices"
	"sort"

	"gonum.org/v1/gonum/stat"

	"github.com/coldstart-go/coldstart/internal/pagecache"
	"github.com/coldstart-go/coldstart/internal/stats"
)

// The rows of `coldstart pull` (record kind "pull", written by package pull)
// and what is derived from them: medians per variant, and break-evens
// between images.

// PullRow is one pull of one variant at one bandwidth.
type PullRow struct {
	PullVariant
	// Deploy is 1 for a node without the image, 2 for a node holding
	// deploy 1 when the next build (a changed binary) arrives.
	Deploy int `json:"deploy"`
	// Bandwidth is the cap as given ("max" = none); BandwidthBits is it in
	// bits per second (0 = none).
	Bandwidth     string `json:"bandwidth"`
	BandwidthBits int64  `json:"bandwidth_bits_per_second"`
	Iteration     int    `json:"iteration"`
	// ImageBytes is all layers, compressed; LayerBytes the layers this pull
	// fetched; WireBytes every response body byte the registry sent for
	// it (manifest and config included).
	ImageBytes   int64 `json:"image_bytes"`
	LayerBytes   int64 `json:"layer_bytes"`
	WireBytes    int64 `json:"wire_bytes"`
	LayersPulled int   `json:"layers_pulled"`
	LayersReused int   `json:"layers_reused"`
	// ManifestMs: manifest and config; LayersMs: the layers' bytes; PullMs
	// both; UnpackMs: decompress and untar; ImageReadyMs: PullMs+UnpackMs.
	ManifestMs   float64 `json:"manifest_ms"`
	LayersMs     float64 `json:"layers_ms"`
	PullMs       float64 `json:"pull_ms"`
	UnpackMs     float64 `json:"unpack_ms"`
	ImageReadyMs float64 `json:"image_ready_ms"`
	// UnpackedBytes is the file bytes the unpack wrote.
	UnpackedBytes int64 `json:"unpacked_bytes"`
	// MeasuredBits is LayerBytes over LayersMs, in bits per second: what
	// the cap let through.
	MeasuredBits float64 `json:"measured_bits_per_second"`
	// AfterPullStartMs is spawn to first RPC right after the unpack (the
	// files still in the page cache the unpack wrote); ColdStartMs the same
	// after the root filesystem was evicted from the page cache (as after
	// memory pressure: the first start's worst case); WarmStartMs a
	// third start, everything cached (what later starts on the node cost).
	// Zero on deploy 2 rows and without a Starter.
	AfterPullStartMs float64 `json:"after_pull_start_ms,omitempty"`
	ColdStartMs      float64 `json:"cold_start_ms,omitempty"`
	WarmStartMs      float64 `json:"warm_start_ms,omitempty"`
	// ResidentBefore and ResidentAfter count the root filesystem's pages
	// in the page cache before and after the eviction for the cold start.
	ResidentBefore *pagecache.Pages `json:"resident_before,omitempty"`
	ResidentAfter  *pagecache.Pages `json:"resident_after,omitempty"`
	// NodeToFirstRPCMs is ImageReadyMs + ColdStartMs: a node without the
	// image to the first answered RPC (deploy 1 with a Starter only).
	NodeToFirstRPCMs float64 `json:"node_to_first_rpc_ms,omitempty"`
}

// PullVariant names one image: an arm's binary, its layers' compression, and
// how its files are split into layers.
type PullVariant struct {
	Arm         string      `json:"arm"`
	Compression Compression `json:"compression"`
	Layering    Layering    `json:"layering"`
}

// String is arm/compression/layering, e.g. "upx/zstd/single".
func (v PullVariant) String() string {
	return v.Arm + "/" + string(v.Compression) + "/" + string(v.Layering)
}

// Compression is how an image's layers are compressed.
type Compression string

// The layer compressions go-containerregistry writes.
const (
	Gzip Compression = "gzip"
	Zstd Compression = "zstd"
)

// Layering is how an image's files are split into layers.
type Layering string

// SingleLayer puts the base files and the binary in one layer; SplitLayers puts the
// base files (which do not change between deploys) in one layer and the
// binary (which changes on every build) in another.
const (
	SingleLayer Layering = "single"
	SplitLayers Layering = "split"
)

// PullSummary is the medians of one variant's rows at one bandwidth and deploy.
type PullSummary struct {
	PullVariant
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
	// VsBaseline sets this image's pulls against the baseline arm's image
	// of the same compression and layering, at the same bandwidth and
	// deploy (ComparePulls), on VsBaselineOn: node_to_first_rpc_ms (image
	// and cold start) where both were started, else image_ready_ms.
	VsBaseline
	VsBaselineOn string `json:"vs_baseline_on,omitempty" render:"-"`
}

// ComparePulls fills each summary's VsBaseline: its pulls (rows of its
// variant, deploy and bandwidth) against those of the baseline arm's
// variant with the same compression and layering, at the same bandwidth
// and deploy. The figure is node → first RPC per pull where every pull
// on both sides started the server, else the image's pull and unpack
// alone (deploy 2 starts nothing). The baseline is ChooseBaseline over
// the summaries' arms in order; it is returned.
func ComparePulls(sums []PullSummary, rows []PullRow, want string, confidence, minEffect float64) string {
	var arms []string
	for _, s := range sums {
		if !slices.Contains(arms, s.Arm) {
			arms = append(arms, s.Arm)
		}
	}
	base := ChooseBaseline(arms, want)
	type key struct {
		v      PullVariant
		deploy int
		bw     string
	}
	groups := map[key][]PullRow{}
	for _, r := range rows {
		k := key{r.PullVariant, r.Deploy, r.Bandwidth}
		groups[k] = append(groups[k], r)
	}
	for i := range sums {
		s := &sums[i]
		s.VsBaseline, s.VsBaselineOn = VsBaseline{}, ""
		if s.Arm == base {
			s.VsBaseline = VsBaseline{Baseline: base, Verdict: VerdictBaseline}
			continue
		}
		bv := s.PullVariant
		bv.Arm = base
		mine, theirs := groups[key{s.PullVariant, s.Deploy, s.Bandwidth}], groups[key{bv, s.Deploy, s.Bandwidth}]
		if len(mine) == 0 || len(theirs) == 0 {
			continue
		}
		on, get := "image_ready_ms", func(r PullRow) float64 { return r.ImageReadyMs }
		if allStarted(mine) && allStarted(theirs) {
			on, get = "node_to_first_rpc_ms", func(r PullRow) float64 { return r.NodeToFirstRPCMs }
		}
		xs := func(g []PullRow) []float64 {
			out := make([]float64, len(g))
			for j, r := range g {
				out[j] = get(r)
			}
			return out
		}
		s.VsBaseline = NewVsBaseline(base, xs(mine), xs(theirs), stats.LessIsFaster, confidence, minEffect)
		s.VsBaselineOn = on
	}
	return base
}

// allStarted reports whether every pull of g also started the server.
func allStarted(g []PullRow) bool {
	for _, r := range g {
		if r.NodeToFirstRPCMs <= 0 {
			return false
		}
	}
	return true
}

// SummarizePulls groups rows by variant, deploy and bandwidth (in the order
// first seen) and takes each column's median (empirical, no interpolation).
func SummarizePulls(rows []PullRow) []PullSummary {
	type key struct {
		v      PullVariant
		deploy int
		bw     string
	}
	var order []key
	groups := map[key][]PullRow{}
	for _, r := range rows {
		k := key{r.PullVariant, r.Deploy, r.Bandwidth}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	out := make([]PullSummary, 0, len(order))
	for _, k := range order {
		g := groups[k]
		col := func(f func(PullRow) float64) float64 {
			xs := make([]float64, len(g))
			for i, r := range g {
				xs[i] = f(r)
			}
			return pullMedian(xs)
		}
		s := PullSummary{
			PullVariant: k.v, Deploy: k.deploy, Bandwidth: k.bw, BandwidthBits: g[0].BandwidthBits, N: len(g),
			ImageBytes:       g[0].ImageBytes,
			WireBytes:        int64(col(func(r PullRow) float64 { return float64(r.WireBytes) })),
			LayersPulled:     g[0].LayersPulled,
			LayersReused:     g[0].LayersReused,
			PullMs:           col(func(r PullRow) float64 { return r.PullMs }),
			UnpackMs:         col(func(r PullRow) float64 { return r.UnpackMs }),
			ImageReadyMs:     col(func(r PullRow) float64 { return r.ImageReadyMs }),
			AfterPullStartMs: col(func(r PullRow) float64 { return r.AfterPullStartMs }),
			ColdStartMs:      col(func(r PullRow) float64 { return r.ColdStartMs }),
			WarmStartMs:      col(func(r PullRow) float64 { return r.WarmStartMs }),
			NodeToFirstRPCMs: col(func(r PullRow) float64 { return r.NodeToFirstRPCMs }),
		}
		if s.BandwidthBits > 0 {
			s.CapRatio = col(func(r PullRow) float64 { return r.MeasuredBits / float64(r.BandwidthBits) })
		}
		out = append(out, s)
	}
	return out
}

func pullMedian(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return stat.Quantile(0.5, stat.Empirical, s, nil)
}

// PullBreakEven compares two images at one bandwidth for a node that pulls
// once and then serves Starts starts: the first start costs the image
// (pull and unpack) plus a cold-page-cache start, every later start a warm
// start. Small is the image with fewer bytes.
type PullBreakEven struct {
	Bandwidth     string      `json:"bandwidth"`
	BandwidthBits int64       `json:"bandwidth_bits_per_second"`
	Small         PullVariant `json:"small"`
	Other         PullVariant `json:"other"`
	SmallBytes    int64       `json:"small_image_bytes"`
	OtherBytes    int64       `json:"other_image_bytes"`
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
	// FirstP and WarmP are the p-values of the two images' first-start
	// costs (node → first RPC, per pull), compared by FirstTest: paired by
	// iteration (the signed-rank test) where enough iterations pair, else
	// Mann–Whitney; and of their arms' warm starts (Mann–Whitney: pooled
	// over each arm's variants). A difference that is not significant at
	// stats.DefaultConfidence counts as none.
	FirstP    float64 `json:"first_p"`
	FirstTest string  `json:"first_test"`
	WarmP     float64 `json:"warm_p"`
	// NoDifference: neither difference is significant; nothing is
	// concluded.
	NoDifference bool `json:"no_difference,omitempty"`
}

// PullStarts are one arm's start figures pooled over every deploy-1 row (all
// compressions, layerings and bandwidths: the unpacked files are the same,
// so only the binary decides), medians in milliseconds.
type PullStarts struct {
	Arm         string  `json:"arm"`
	N           int     `json:"n"`
	AfterPullMs float64 `json:"after_pull_start_ms"`
	ColdMs      float64 `json:"cold_start_ms"`
	WarmMs      float64 `json:"warm_start_ms"`
}

// PullArmStarts pools the start figures of rows per arm (rows without starts
// are left out).
func PullArmStarts(rows []PullRow) map[string]PullStarts {
	by := map[string][]PullRow{}
	for _, r := range rows {
		if r.Deploy == 1 && r.ColdStartMs > 0 {
			by[r.Arm] = append(by[r.Arm], r)
		}
	}
	out := map[string]PullStarts{}
	for arm, g := range by {
		col := func(f func(PullRow) float64) float64 {
			xs := make([]float64, len(g))
			for i, r := range g {
				xs[i] = f(r)
			}
			return pullMedian(xs)
		}
		out[arm] = PullStarts{
			Arm: arm, N: len(g),
			AfterPullMs: col(func(r PullRow) float64 { return r.AfterPullStartMs }),
			ColdMs:      col(func(r PullRow) float64 { return r.ColdStartMs }),
			WarmMs:      col(func(r PullRow) float64 { return r.WarmStartMs }),
		}
	}
	return out
}

// PullBreakEvens compares, at each bandwidth on a node without the image
// (deploy 1): each pair of arms with the same compression and layering
// (upx vs static), and each pair of compressions for the same arm and
// layering (gzip vs zstd). The image's cost is each variant's median
// image_ready_ms; the start figures are the arm's pooled ones (PullArmStarts),
// so two images of one binary differ in their image cost alone. Variants
// without start figures are skipped.
func PullBreakEvens(rows []PullRow) []PullBreakEven {
	sums := SummarizePulls(rows)
	starts := PullArmStarts(rows)
	// Every variant is pulled once per iteration at each bandwidth, the
	// iterations interleaved: an iteration is a round, and two variants'
	// first starts pair by it.
	first := map[string]stats.Rounds{} // variant@bandwidth: node → first RPC per iteration
	warm := map[string][]float64{}     // arm: warm starts, pooled over its variants
	for _, r := range rows {
		if r.Deploy == 1 && r.ColdStartMs > 0 {
			k := r.PullVariant.String() + "@" + r.Bandwidth
			if first[k] == nil {
				first[k] = stats.Rounds{}
			}
			first[k][r.Iteration] = r.NodeToFirstRPCMs
			warm[r.Arm] = append(warm[r.Arm], r.WarmStartMs)
		}
	}
	var out []PullBreakEven
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
			e := pullBreakEven(a, b, sa, sb)
			fc := stats.CompareRounds(first[a.PullVariant.String()+"@"+a.Bandwidth], first[b.PullVariant.String()+"@"+b.Bandwidth], stats.DefaultConfidence)
			wp := 1.0
			if a.Arm != b.Arm {
				wp = stats.Compare(warm[a.Arm], warm[b.Arm], stats.DefaultConfidence).P
			}
			e.FirstTest = fc.Test
			out = append(out, e.resolve(fc.P, wp))
		}
	}
	return out
}

func pullBreakEven(a, b PullSummary, sa, sb PullStarts) PullBreakEven {
	if b.ImageBytes < a.ImageBytes {
		a, b, sa, sb = b, a, sb, sa
	}
	e := PullBreakEven{
		Bandwidth: a.Bandwidth, BandwidthBits: a.BandwidthBits, Small: a.PullVariant, Other: b.PullVariant,
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
func (e PullBreakEven) resolve(firstP, warmP float64) PullBreakEven {
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
