package record

import (
	"fmt"
	"slices"

	"github.com/coldstart-go/coldstart/internal/noise"
	"github.com/coldstart-go/coldstart/internal/stats"
)

// The rows of `steady run` (kinds "step", "step_round", "soak",
// "soak_summary"), written by package steady, which names them Row,
// SoakRow, SoakSummary and Trend.

// Protocol is how steady's load reaches the server (grpc, http1, h2c, h2, h3;
// the constants are package steady's).
type Protocol string

// Scenario names one kind of steady step (sequential, throughput, stream,
// open, ramp, knee, soak; the constants are package steady's).
type Scenario string

// Client is the gRPC client library a steady gRPC step uses (grpc or lean;
// the constants are package steady's).
type Client string

// SteadyRow is one measured step of `steady run` (record kind "step";
// package steady calls it Row). Times are in microseconds, sizes in bytes,
// CPU per call in microseconds of CPU time; pointers are nil (JSON null,
// "–" in tables) when the figure is not available: allocation for a server
// that does not serve runtime metrics, server CPU or memory that could not
// be read. A row with Round > 0 is one measured window; a row with Round
// 0 holds the medians over its step's rounds, with RoundStats.
type SteadyRow struct {
	Arm      string   `json:"arm"`
	Budget   string   `json:"budget"`
	Protocol Protocol `json:"protocol"`
	Scenario Scenario `json:"scenario"`
	// PayloadBytes is the payload size of each request.
	PayloadBytes int `json:"payload_bytes"`
	// Concurrency is the number of calls in flight (closed loop) or the
	// cap on them (open loop).
	Concurrency int `json:"concurrency"`
	// Conns is the number of connections the load used.
	Conns int `json:"conns"`
	// Depth is the HTTP/1.1 pipelining depth, or for gRPC, h2c, h2 and h3
	// the streams in flight per connection (steady run --streams-per-conn).
	Depth int `json:"depth"`
	// RateReq is the requested open-loop rate (0 for closed loop) and
	// Rate the completed calls per second.
	RateReq   float64 `json:"rate_req_per_s" render:"%.0f"`
	Calls     int64   `json:"calls"`
	Seconds   float64 `json:"seconds" render:"%.2f"`
	CallsPerS float64 `json:"calls_per_s" render:"%.0f"`
	// Latency: for open loop, from each call's intended send time.
	P50Us  float64 `json:"p50_us"`
	P90Us  float64 `json:"p90_us"`
	P99Us  float64 `json:"p99_us"`
	P999Us float64 `json:"p999_us"`
	MaxUs  float64 `json:"max_us"`
	// Service time (open loop only): from the actual send.
	ServiceP50Us float64 `json:"service_p50_us,omitempty"`
	ServiceP99Us float64 `json:"service_p99_us,omitempty"`
	ServiceMaxUs float64 `json:"service_max_us,omitempty"`

	// Server figures are nil (null) when they could not be read or the
	// server's process is unknown (a --target without --server-pid),
	// never 0.
	ServerCPUUsPerCall *float64 `json:"server_cpu_us_per_call"`
	ClientCPUUsPerCall float64  `json:"client_cpu_us_per_call"`
	// ServerCPULimit is the CPUs' worth of time the server could use: its
	// budget's CPU set or quota, or the host's CPUs, and no more than its
	// GOMAXPROCS when known (0 = unknown: a target's). ServerCPUShare is
	// the server's CPU time over the window as a share of it (in a row of
	// medians, their median over the rounds); nil when either is unknown.
	// See LoadBound.
	ServerCPULimit    float64  `json:"server_cpu_limit,omitempty" render:"-"`
	ServerCPUShare    *float64 `json:"server_cpu_share,omitempty" render:"-"`
	AllocBytesPerCall *float64 `json:"alloc_bytes_per_call,omitempty"`
	GCCycles          *uint64  `json:"gc_cycles,omitempty"`
	// GCCPUUsPerCall is the garbage collector's CPU per call, as the
	// server's runtime estimates it (/cpu/classes/gc/total:cpu-seconds),
	// when it serves runtime metrics that hold it.
	GCCPUUsPerCall *float64 `json:"gc_cpu_us_per_call,omitempty" render:"-"`
	GoMaxProcs     int      `json:"gomaxprocs,omitempty"`
	PeakRSSBytes   *int64   `json:"peak_rss_bytes"`
	RSSBytes       *int64   `json:"rss_bytes"`
	PSSBytes       *int64   `json:"pss_bytes"`

	Errors     int64   `json:"errors"`
	ErrorRate  float64 `json:"error_rate"`
	FirstError string  `json:"first_error,omitempty"`

	// Round numbers a measured window (1..Config.Rounds); 0 in the row of
	// medians over the rounds.
	Round int `json:"round,omitempty" render:"-"`
	// RoundProtocols are the protocols whose steps of this scenario,
	// payload and concurrency ran in the same rounds as this row's, its
	// own among them, one window of each per round in rotated order:
	// their round numbers pair. nil when the rounds were of one protocol
	// (rows written before steady interleaved protocols have none).
	RoundProtocols []Protocol `json:"round_protocols,omitempty" render:"-"`
	// Noise is what else the machine did during this window (rounds only).
	Noise *noise.Window `json:"noise,omitempty" render:"-"`
	RoundStats
	// Client is the gRPC client library (grpc or lean); empty for HTTP.
	Client Client `json:"client,omitempty"`
	// HeapBytes is the server's live heap objects at the window's end
	// (runtime metrics), when it serves them.
	HeapBytes *uint64 `json:"heap_bytes,omitempty"`
	// Pods is the number of instances serving a target that counts them
	// (a Knative revision's running pods) at the window's end; ScaleEvent
	// marks a window whose start and end counts differ.
	Pods       *int `json:"pods,omitempty"`
	ScaleEvent bool `json:"scale_event,omitempty"`
	// Method is the gRPC method called when it is not coldstart's Echo: a
	// target without it is loaded with health checks (no payload), and
	// steady run --call loads the user's own method.
	Method string `json:"method,omitempty" render:"-"`
	// MetadataKeys are the keys of the metadata sent with every call
	// (--metadata), sorted; their values are never recorded (they are
	// often secrets). Nil when none was sent.
	MetadataKeys []string `json:"metadata_keys,omitempty" render:"-"`
	// ErrorCodes counts the failed calls by gRPC status code ("Unavailable":
	// 12); nil when none failed, or for HTTP.
	ErrorCodes map[string]int64 `json:"error_codes,omitempty" render:"-"`
	// TLS is true when the load spoke TLS: gRPC over TLS, HTTP/1.1 as
	// https, HTTP/2 negotiated by ALPN (protocol h2).
	TLS bool `json:"tls,omitempty"`
	// ReconnectEvery is the number of calls after which each connection
	// was closed and dialled again (0 = never: connections lived for the
	// whole step).
	ReconnectEvery int `json:"reconnect_every,omitempty"`
	// TLSHandshakes counts the TLS handshakes the load's connections
	// completed in the window, and TLSHandshakesPerS is that count per
	// second of the window (in a row of medians, their medians over the
	// rounds); nil without TLS. Sessions are never resumed: each is a full
	// handshake.
	TLSHandshakes     *int64   `json:"tls_handshakes,omitempty"`
	TLSHandshakesPerS *float64 `json:"tls_handshakes_per_s,omitempty" render:"%.1f"`
	// VsBaseline sets the rounds' calls/s against the baseline arm's in
	// the same step (CompareSteady): faster or slower; CPUVsBaseline does
	// the same for server CPU per call: lower or higher. Empty in a
	// round's own row and in rows without rounds (a ramp's).
	VsBaseline
	CPUVsBaseline
	// Variant is what makes the arm a variant (zero for any other); its
	// rows are set against its own arm's rounds.
	Variant
}

// LoadBoundShare is the share of its CPU limit below which a server that a
// closed loop kept busy did not set the pace: a Go server that is the
// bottleneck uses ~95% or more of its CPU set or quota.
const LoadBoundShare = 0.9

// LoadBound reports whether r is a closed-loop step meant to find the
// server's capacity (throughput or stream, more than one call in flight)
// that left the server below LoadBoundShare of its CPU limit: then its
// calls/s is the limit of the load (the generator's CPU, the
// connections, waits), not the server's, and a difference in calls/s
// between such rows is a difference of the whole loop, client included.
// Server CPU per call is the server's own either way.
func (r SteadyRow) LoadBound() bool {
	return (r.Scenario == "throughput" || r.Scenario == "stream") && r.Concurrency > 1 && r.RateReq == 0 &&
		r.ServerCPUShare != nil && *r.ServerCPUShare < LoadBoundShare
}

// LoadBoundText says why r is LoadBound ("" when it is not): "the server
// used 62% of its 1 CPU, the generator 0.91 CPUs: calls/s is the load's
// limit, not the server's".
func (r SteadyRow) LoadBoundText() string {
	if !r.LoadBound() {
		return ""
	}
	return fmt.Sprintf("the server used %s, the generator %.2f CPUs: calls/s is the load's limit, not the server's",
		r.ServerShareText(), r.GeneratorCPUs())
}

// ServerShareText is r's server CPU share against its limit: "62% of its
// 1 CPU" ("" without a share).
func (r SteadyRow) ServerShareText() string {
	if r.ServerCPUShare == nil {
		return ""
	}
	unit := "CPUs"
	if r.ServerCPULimit == 1 {
		unit = "CPU"
	}
	return fmt.Sprintf("%.0f%% of its %g %s", 100**r.ServerCPUShare, r.ServerCPULimit, unit)
}

// GeneratorCPUs is the CPUs' worth of time the load generator spent over
// r's window: calls/s times its CPU per call.
func (r SteadyRow) GeneratorCPUs() float64 {
	return r.CallsPerS * r.ClientCPUUsPerCall / 1e6
}

// ServerCPUs is the CPUs' worth of time the server spent over r's window:
// calls/s times its CPU per call (0 when that was not read). Set against
// ServerCPULimit it is ServerCPUShare.
func (r SteadyRow) ServerCPUs() float64 {
	if r.ServerCPUUsPerCall == nil {
		return 0
	}
	return r.CallsPerS * *r.ServerCPUUsPerCall / 1e6
}

// CPUVsBaseline is a step row's server CPU per call over its rounds
// against the baseline arm's, as VsBaseline is for calls/s: the ratio
// row/baseline with its interval, the Mann–Whitney p-value and the
// verdict (lower, higher, "no difference detected"). Nil or empty when
// there was nothing to compare; the baseline's own row has none.
type CPUVsBaseline struct {
	CPURatio   *float64 `json:"vs_baseline_cpu_ratio,omitempty"`
	CPUCILow   *float64 `json:"vs_baseline_cpu_ci_low,omitempty"`
	CPUCIHigh  *float64 `json:"vs_baseline_cpu_ci_high,omitempty"`
	CPUP       *float64 `json:"vs_baseline_cpu_p,omitempty"`
	CPUVerdict string   `json:"vs_baseline_cpu_verdict,omitempty"`
}

// Vs is c in VsBaseline's shape, for what reads both alike.
func (c CPUVsBaseline) Vs(baseline string) VsBaseline {
	return VsBaseline{Baseline: baseline, Ratio: c.CPURatio, CILow: c.CPUCILow, CIHigh: c.CPUCIHigh, P: c.CPUP, Verdict: c.CPUVerdict}
}

// CompareSteady fills the VsBaseline and CPUVsBaseline of each step row
// (CompareSteadyRow), the baseline ChooseBaseline over the rows' arms in
// order, a variant's its own arm (Baselines), and returns the baseline
// chosen.
func CompareSteady(rows, rounds []SteadyRow, want string, confidence, minEffect float64) string {
	var arms []string
	of := map[string]string{}
	for _, r := range rows {
		if !slices.Contains(arms, r.Arm) {
			arms = append(arms, r.Arm)
		}
		of[r.Arm] = r.Variant.Of
	}
	bl := NewBaselines(arms, want, func(a string) string { return of[a] })
	for i := range rows {
		CompareSteadyRow(&rows[i], rounds, bl.For(rows[i].Arm), confidence, minEffect)
	}
	return bl.Base
}

// CompareSteadyRow fills a step row's (Round 0) VsBaseline and
// CPUVsBaseline when it has rounds: calls/s (more is faster) and server
// CPU per call (lower or higher) of its arm's rounds against base's
// rounds of the same step (budget, protocol, client, scenario, payload,
// concurrency, connections, depth, rate), paired by round where the
// rounds pair (NewVsBaselineRounds). rounds are the windows recorded
// as "step_round" (Round > 0; others are skipped): steady runs every
// arm's rounds of a step before any arm's row, so a row can be compared
// as it arrives. One round per arm gives a ratio with no interval, and no
// verdict but "no difference detected".
func CompareSteadyRow(r *SteadyRow, rounds []SteadyRow, base string, confidence, minEffect float64) {
	r.VsBaseline, r.CPUVsBaseline = VsBaseline{}, CPUVsBaseline{}
	if r.Round != 0 || r.Rounds == 0 {
		return
	}
	if r.Arm == base {
		r.VsBaseline = VsBaseline{Baseline: base, Verdict: VerdictBaseline}
		return
	}
	step := steadyStep(*r)
	calls := [2]stats.Rounds{{}, {}} // this arm's, the baseline's
	cpu := [2]stats.Rounds{{}, {}}
	for _, w := range rounds {
		side := slices.Index([]string{r.Arm, base}, w.Arm)
		if w.Round == 0 || side < 0 || steadyStep(w) != step {
			continue
		}
		if w.CallsPerS > 0 {
			calls[side][w.Round] = w.CallsPerS
		}
		if w.ServerCPUUsPerCall != nil && *w.ServerCPUUsPerCall > 0 {
			cpu[side][w.Round] = *w.ServerCPUUsPerCall
		}
	}
	if len(calls[0]) > 0 && len(calls[1]) > 0 {
		r.VsBaseline = NewVsBaselineRounds(base, calls[0], calls[1], stats.MoreIsFaster, confidence, minEffect)
	}
	if len(cpu[0]) > 0 && len(cpu[1]) > 0 {
		v := NewVsBaselineRounds(base, cpu[0], cpu[1], stats.Neutral, confidence, minEffect)
		r.CPUVsBaseline = CPUVsBaseline{CPURatio: v.Ratio, CPUCILow: v.CILow, CPUCIHigh: v.CIHigh, CPUP: v.P, CPUVerdict: v.Verdict}
	}
}

// steadyStep names what a step row is, apart from its arm: two arms'
// rows of one step are compared.
func steadyStep(r SteadyRow) string {
	return fmt.Sprintf("%s|%s|%s|%s|%d|%d|%d|%d|%g|%s", r.Budget, r.Protocol, r.Client, r.Scenario, r.PayloadBytes, r.Concurrency, r.Conns, r.Depth, r.RateReq, r.Method)
}

// RoundStats are a step row's figures over its rounds: how many rounds
// were measured, how many lacked a server reading, and the intervals of
// the medians the row holds. Empty in a round's own row.
type RoundStats struct {
	// Rounds is the number of windows the row's medians are over.
	Rounds int `json:"rounds,omitempty"`
	// Missing counts the rounds whose server CPU or memory could not be
	// read (left out of those medians).
	Missing int `json:"missing,omitempty"`
	// Confidence is the intervals' level.
	Confidence float64 `json:"confidence,omitempty" render:"-"`
	// The medians' intervals.
	CallsPerSCI          *Interval `json:"calls_per_s_ci,omitempty" render:"-"`
	P50UsCI              *Interval `json:"p50_us_ci,omitempty" render:"-"`
	P99UsCI              *Interval `json:"p99_us_ci,omitempty" render:"-"`
	ServerCPUUsPerCallCI *Interval `json:"server_cpu_us_per_call_ci,omitempty" render:"-"`
	// BusyRounds counts rounds run while other work kept the machine busy
	// (noise.Window.Busy).
	BusyRounds int `json:"busy_rounds,omitempty"`
	// Stopped says why the step's rounds stopped when their number was
	// left open (steady run --rounds auto): "precision" (every arm's
	// calls/s and server CPU per call medians within Precision),
	// "max-rounds" (MaxRounds came first) or "interrupted" (the rounds
	// finished are kept); empty for a fixed number of rounds. Precision
	// and MaxRounds are the rule's settings.
	Stopped   string  `json:"stopped,omitempty" render:"-"`
	Precision float64 `json:"precision,omitempty" render:"-"`
	MaxRounds int     `json:"max_rounds,omitempty" render:"-"`
}

// Interval is a median's confidence interval over rounds; nil bounds are
// not known (too few rounds for one at the level asked).
type Interval struct {
	Low  *float64 `json:"low"`
	High *float64 `json:"high"`
}

// SoakRow is one interval of a soak: the step row of that interval's
// open-loop window, where it lies in the soak, and the server's heap.
type SoakRow struct {
	SteadyRow
	// Interval counts from 1; AtSeconds is the interval's end, in seconds
	// from the soak's start.
	Interval  int     `json:"interval"`
	AtSeconds float64 `json:"at_s" render:"%.0f"`
}

// SoakSummary is a soak's end: the slope of RSS and of p99 over time, each
// with its 95% interval and verdict, and the soak's verdict (drifting if
// either drifts, unknown if either cannot be told, else stable).
type SoakSummary struct {
	Arm       string  `json:"arm"`
	Budget    string  `json:"budget"`
	RateReq   float64 `json:"rate_req_per_s"`
	Intervals int     `json:"intervals"`
	Seconds   float64 `json:"seconds"`
	Calls     int64   `json:"calls"`
	Errors    int64   `json:"errors"`
	RSS       Trend   `json:"rss"`
	P99       Trend   `json:"p99"`
	Verdict   string  `json:"verdict"`
	// Stop, for a soak that stops on precision (steady run --soak auto),
	// says why it ended; nil for a soak of fixed length.
	Stop *SoakStop `json:"stop,omitempty"`
}

// Why a soak that stops on precision ended (SoakStop.Reason).
const (
	SoakStopPrecision   = "precision"   // the RSS slope's interval was narrow enough
	SoakStopMaxSoak     = "max-soak"    // the cap came first
	SoakStopInterrupted = "interrupted" // the run was cancelled: the windows finished are kept
	SoakStopFailed      = "failed"      // a window failed: the windows before it are kept
)

// SoakStop is why a soak that stops on precision ended, and where its RSS
// slope stood then.
type SoakStop struct {
	Reason  string `json:"reason"`
	Windows int    `json:"windows"`
	// MaxSeconds is the cap (--max-soak).
	MaxSeconds float64 `json:"max_seconds"`
	// HalfWidthPerHour is the RSS slope's 95% interval half-width, in
	// bytes/h, at the stop (nil before it had an interval); Target is the
	// half-width the soak stops at.
	HalfWidthPerHour *float64 `json:"rss_half_width_per_hour"`
	TargetPerHour    float64  `json:"rss_target_half_width_per_hour"`
}

// String says why the soak stopped, for people.
func (s SoakStop) String() string {
	w := "has no interval yet"
	if s.HalfWidthPerHour != nil {
		w = fmt.Sprintf("known within ±%.2f MiB/h", *s.HalfWidthPerHour/(1<<20))
	}
	switch s.Reason {
	case SoakStopPrecision:
		return fmt.Sprintf("stopped after %d windows: the RSS slope %s (target ±%.2f MiB/h)", s.Windows, w, s.TargetPerHour/(1<<20))
	case SoakStopMaxSoak:
		return fmt.Sprintf("stopped at the cap (%.0f s, %d windows): the RSS slope %s, short of ±%.2f MiB/h", s.MaxSeconds, s.Windows, w, s.TargetPerHour/(1<<20))
	}
	return fmt.Sprintf("stopped after %d windows (%s): the RSS slope %s", s.Windows, s.Reason, w)
}

// Trend is the least-squares slope of one soak metric over time, per hour,
// with its 95% confidence interval (Student's t on n-2 degrees of freedom),
// and what it says: "drifting" when the whole interval lies above the
// metric's material rate (a leak or a slowdown), else "stable" (a metric
// that fell beyond it is stable, and its text says "falling").
type Trend struct {
	Metric string `json:"metric"` // "rss_bytes", "p99_us", ...
	Unit   string `json:"unit"`   // of PerHour: "bytes/h", "µs/h"
	Points int    `json:"points"`
	// PerHour is the slope; Lo and Hi bound its 95% interval.
	PerHour float64 `json:"per_hour"`
	Lo      float64 `json:"per_hour_ci_lo"`
	Hi      float64 `json:"per_hour_ci_hi"`
	// Material is the smallest rate that counts as drift (per hour).
	Material float64 `json:"material_per_hour"`
	Verdict  string  `json:"verdict"` // stable, drifting, or unknown (fewer than 3 points)
	// Text says it for people: "drifting: +1.2 MiB/h (95% CI +0.9 to +1.5)".
	Text string `json:"text"`
}

// protocolOrder ranks the protocols for their comparisons with each
// other (ProtocolBefore).
var protocolOrder = []Protocol{"h3", "h2", "h2c", "http1", "grpc"}

// ProtocolBefore says whether x comes before y when two protocols are
// compared: the earlier is a, the other b (h3 vs h2, h2 vs http1, http1
// vs grpc), in the report and in steady's own verdicts alike. Protocols
// the order does not name come last, by name.
func ProtocolBefore(x, y Protocol) bool {
	i, j := slices.Index(protocolOrder, x), slices.Index(protocolOrder, y)
	if i < 0 {
		i = len(protocolOrder)
	}
	if j < 0 {
		j = len(protocolOrder)
	}
	if i != j {
		return i < j
	}
	return x < y
}
