package record

// The record kinds of `coldstart replay`: one ReplayRequest per request
// sent, one ReplayPod per pod the replay saw, and one Replay per policy,
// the real autoscaler's counts beside the simulator's on the same
// arrivals.
const (
	ReplayRequestKind = "replay_request"
	ReplayPodKind     = "replay_pod"
	ReplayKind        = "replay"
)

// ReplayTolerancePct is how far, in percent of the real count, the
// simulator's cold requests may be from the real autoscaler's for the
// simulator to agree.
const ReplayTolerancePct = 10.0

// ReplayRequest is one request of a replayed trace at one policy's
// Service. Times are seconds from the replay's t0, when every Service was
// at zero.
type ReplayRequest struct {
	Policy  string `json:"policy"`
	Service string `json:"service"`
	// Index numbers the trace's requests from 0; AtS is when the trace
	// puts it and SentS when it was sent.
	Index int     `json:"index"`
	AtS   float64 `json:"at_s"`
	SentS float64 `json:"sent_s"`
	// LatencyMs is sent → healthy reply, through the activator.
	LatencyMs float64 `json:"latency_ms"`
	// ReadyPods is how many of the Service's pods were Ready and not
	// terminating when it was sent, Pods how many were not terminating
	// (starting ones too), as the replay's pod watch held them. Cold:
	// ReadyPods was 0 (Replay's totals then look at its latency too).
	ReadyPods int    `json:"ready_pods"`
	Pods      int    `json:"pods"`
	Cold      bool   `json:"cold"`
	Error     string `json:"error,omitempty"`
}

// ReplayPod is one pod of a policy's Service during a replay, from its
// watch events. Times are seconds from t0; -1 when the event did not come
// before the replay ended.
type ReplayPod struct {
	Policy  string `json:"policy"`
	Service string `json:"service"`
	Pod     string `json:"pod"`
	// SeenS is when the pod first appeared; ReadyS when it first was
	// Ready; DeletingS when its deletion was asked for (the autoscaler
	// scaled it away); GoneS when it was gone.
	SeenS     float64 `json:"seen_s"`
	ReadyS    float64 `json:"ready_s"`
	DeletingS float64 `json:"deleting_s"`
	GoneS     float64 `json:"gone_s"`
}

// Replay is one scaling policy under one replayed trace: what the real
// autoscaler did beside what the cost package's simulator figures for
// the same arrivals and the same policy.
type Replay struct {
	// Traffic names the trace (a file, or an --arrivals spec), Seed the
	// seed it and the simulator's start samples were drawn with;
	// DurationS its length.
	Traffic   string  `json:"traffic"`
	Seed      uint64  `json:"seed"`
	DurationS float64 `json:"duration_s"`
	Arm       string  `json:"arm"`
	// Policy is the policy as given (--policy); PolicySpec spells out
	// every parameter as the simulator ran it (the cluster's grace period
	// included).
	Policy     string `json:"policy"`
	PolicySpec string `json:"policy_spec"`
	Service    string `json:"service"`
	// Requests is how many requests were sent, Errors how many got no
	// healthy reply.
	Requests int `json:"requests"`
	Errors   int `json:"errors"`
	// Cold is the real count of requests that waited for a start: sent
	// when the Service had no Ready pod, and answered slower than
	// WarmBoundMs (the p99 of the requests sent with a Ready pod) or not
	// at all. ColdByWatch counts those sent with no Ready pod, AnsweredWarm
	// those of them answered within the warm bound: the pod watch's Ready
	// trails the activator, which routes to a pod it has probed itself.
	// SimColdMean is the mean over SimRuns simulations (each its own
	// draw of start samples and tick phase) of the requests that waited
	// for a start, SimCold that mean rounded, SimColdP5 and SimColdP95
	// the spread of one simulation's count. ColdDiffPct is
	// (SimColdMean − Cold) / Cold × 100 (0 when both are 0, 100 when
	// only Cold is); Agrees says it is within ReplayTolerancePct. A file
	// without SimRuns ran one simulation (SimCold).
	Cold         int64   `json:"cold"`
	ColdByWatch  int64   `json:"cold_by_watch"`
	AnsweredWarm int64   `json:"answered_warm"`
	WarmBoundMs  float64 `json:"warm_bound_ms"`
	SimCold      int64   `json:"sim_cold"`
	SimColdMean  float64 `json:"sim_cold_mean,omitempty"`
	SimColdP5    int64   `json:"sim_cold_p5,omitempty"`
	SimColdP95   int64   `json:"sim_cold_p95,omitempty"`
	SimRuns      int     `json:"sim_runs,omitempty"`
	ColdDiffPct  float64 `json:"cold_diff_pct"`
	Agrees       bool    `json:"agrees"`
	// Starts is how many pods appeared after t0, SimStarts how many
	// instances the simulator started (the mean, rounded).
	Starts    int64 `json:"starts"`
	SimStarts int64 `json:"sim_starts"`
	// PodSeconds is the pods' lifetime from appearing to the autoscaler's
	// deletion (or the end), SimInstanceSeconds the simulator's from start
	// to removal (the mean); DrainSeconds the real pods' deletion → gone, which the
	// simulator does not model.
	PodSeconds         float64 `json:"pod_seconds"`
	SimInstanceSeconds float64 `json:"sim_instance_seconds"`
	DrainSeconds       float64 `json:"drain_seconds"`
	// ColdMedianMs is the real cold requests' median latency. The
	// simulator drew its starts from StartSamples latencies: the
	// replay's scales from zero (requests sent when a Service had no
	// pod at all), every policy's.
	ColdMedianMs float64 `json:"cold_median_ms"`
	StartSamples int     `json:"start_samples"`
}

// SimColdExpected is the simulator's cold count as set against the real
// one: the mean of its runs, or the one run of a file from before the
// simulator averaged (no SimRuns).
func (r Replay) SimColdExpected() float64 {
	if r.SimRuns == 0 {
		return float64(r.SimCold)
	}
	return r.SimColdMean
}
