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
