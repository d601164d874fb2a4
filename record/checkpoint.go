package record

// The start arms: a built binary started another way, rather than another
// build.
const (
	// PreboundArm starts the binary with its listening socket already
	// bound by coldstart (socket activation: fd 3, LISTEN_FDS).
	PreboundArm = "prebound"
	// SnapshotArm restores a CRIU checkpoint of the binary's warmed server.
	SnapshotArm = "snapshot"
)

// IsStartArm reports whether arm is a start arm (PreboundArm,
// SnapshotArm): shipping it takes a way of starting the server that the
// platform must provide (socket activation, CRIU), not a build alone.
func IsStartArm(arm string) bool { return arm == PreboundArm || arm == SnapshotArm }

// Phases of the start arms, from t0.
const (
	// PhaseQueued: the first connection was seen waiting in the listening
	// socket's accept queue (prebound).
	PhaseQueued = "queued"
	// PhaseServerAccepted: the server first took a connection off that
	// queue; server_accepted − queued is the time the first connection
	// waited in the backlog (prebound).
	PhaseServerAccepted = "server_accepted"
	// PhaseProcessRestored: `criu restore --restore-detached` returned
	// (snapshot); t0 is right before criu started.
	PhaseProcessRestored = "process_restored"
)

// Checkpoint is what a results file says (kind "checkpoint") about the
// snapshot arm's checkpoint.
type Checkpoint struct {
	Arm string `json:"arm"`
	// Base is the build arm that was started and dumped.
	Base        string  `json:"base"`
	CRIUVersion string  `json:"criu_version"`
	Bytes       int64   `json:"bytes" render:"bytes"`
	DumpMs      float64 `json:"dump_ms"`
	// Warmup is how many readiness calls the server answered before the
	// dump.
	Warmup int `json:"warmup_calls"`
	// Env is what the arm added to the server's environment
	// (GODEBUG=multipathtcp=0).
	Env []string `json:"env"`
	// Stats are criu's dump statistics (frozen_time_ms,
	// memory_pages_written, ...).
	Stats  map[string]float64 `json:"stats,omitempty"`
	Target string             `json:"target"`
	// KdatCache says whether criu could keep its kernel-feature cache
	// (/run is a tmpfs); without it every restore probes the kernel again.
	KdatCache bool `json:"kdat_cache"`
}

// KdatRestore is one restore of bench/criukdat (kind "kdat_restore").
type KdatRestore struct {
	// Mode is "tmpfs" (criu kept its kernel-feature cache) or "none".
	Mode string `json:"mode"`
	Run  int    `json:"run"`
	// RestoreMs is wrapper start → criu's exit.
	RestoreMs     float64 `json:"restore_ms"`
	CRIURestoreMs float64 `json:"criu_restore_time_ms"`
	CacheLoaded   bool    `json:"cache_loaded"`
}

// KdatSummary is one mode of bench/criukdat (kind "kdat_summary").
type KdatSummary struct {
	Mode            string  `json:"mode"`
	Runs            int     `json:"runs"`
	MedianMs        float64 `json:"median_restore_ms"`
	MinMs           float64 `json:"min_restore_ms"`
	MaxMs           float64 `json:"max_restore_ms"`
	MedianCRIUMs    float64 `json:"median_criu_restore_time_ms"`
	SavedVsNoneMs   float64 `json:"saved_vs_none_ms,omitempty"`
	CacheLoadedRuns int     `json:"cache_loaded_runs"`
}
