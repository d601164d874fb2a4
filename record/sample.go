// Package record holds the rows coldstart's results files carry: each
// build's Artifact, each cold start's Sample with its Phases, the Summary of
// an arm under a budget, density rows. Producers (builds, prober, campaign)
// write them and report reads them; this package depends on none of them,
// so reading results pulls in no launcher, container or image code.
package record

// Phase is a named timestamp of one cold start, measured from t0 (taken
// immediately before the server was started).
type Phase struct {
	Name string  `json:"name"`
	Ms   float64 `json:"ms"`
}

// Phase names shared by every launcher, in the order they happen. Launchers
// may add their own (runc: "bundle_ready", "created"; Knative:
// "deployment_scaled", "pod_scheduled", "container_started", "pod_ready").
const (
	PhaseStarted   = "process_started" // Start (fork/exec) returned
	PhaseAccepting = "accepting"       // first successful connect()
	// PhaseTLSHandshake is when a probe's TLS handshake first completed
	// (a probe over TLS only); Sample.TLS has how long it took.
	PhaseTLSHandshake = "tls_handshake"
	PhaseFirstReply   = "first_answer" // first RPC answered (maybe NOT_SERVING)
	PhaseFirstRPC     = "first_rpc"    // first ready answer: the cold start
)

// Sample is one probe of one cold start: a raw row of a campaign.
type Sample struct {
	Arm    string `json:"arm"`
	Budget string `json:"budget"`
	Run    int    `json:"run"`    // 0 is the uncounted warm-up round
	Warmup bool   `json:"warmup"` // excluded from summaries
	// FirstRPCMs is spawn to first ready RPC, in milliseconds.
	FirstRPCMs float64 `json:"first_rpc_ms"`
	// ReadyAttemptMs is when the successful readiness RPC started (the
	// server was ready by then); FirstRPCMs − ReadyAttemptMs is how long
	// that one RPC took.
	ReadyAttemptMs float64 `json:"ready_attempt_ms,omitempty"`
	Phases         []Phase `json:"phases"`
	// StartupCPUMs is the server's utime+stime (all threads) at first RPC;
	// RSSBytes and PSSBytes its memory then. nil (JSON null) when the
	// reading failed: a missing reading, never a made-up 0.
	StartupCPUMs *float64 `json:"startup_cpu_ms"`
	RSSBytes     *int64   `json:"rss_bytes"`
	PSSBytes     *int64   `json:"pss_bytes"`
	// CgroupCPUMs and CgroupMemPeakBytes are what the budget's cgroup
	// itself reports at first RPC (absent without a cgroup, budgets max and
	// cpus=, or when the cgroup could not be read).
	CgroupCPUMs        *float64 `json:"cgroup_cpu_ms,omitempty"`
	CgroupMemPeakBytes *int64   `json:"cgroup_mem_peak_bytes,omitempty"`
	// GOMAXPROCSPredicted is what Go >= 1.25 picks under the budget:
	// min(CPU set, max(2, ceil(quota))). steady run reads the real value.
	GOMAXPROCSPredicted int `json:"gomaxprocs_predicted,omitempty"`
	// ProberCPUMs is the prober's own CPU time during this probe.
	ProberCPUMs float64 `json:"prober_cpu_ms"`
	// LauncherCPUMs is the CPU time of a process the launcher runs before
	// the server (criu restore: user+system), beside StartupCPUMs; 0 for
	// launchers that start the server directly.
	LauncherCPUMs float64 `json:"launcher_cpu_ms,omitempty"`
	// LauncherStats are the launcher's own statistics (criu restore:
	// restore_time_ms, forking_time_ms, pages_restored, ...).
	LauncherStats map[string]float64 `json:"launcher_stats,omitempty"`
	// Containment is how the server's descendants were kept from
	// outliving it, for launchers that say: "cgroup-v1" or "cgroup-v2"
	// (all in its cgroup killed at stop) or "subreaper" (no cgroup could
	// be made; orphans adopted by coldstart killed at stop). See launch.
	Containment string `json:"containment,omitempty"`
	Attempts    int    `json:"attempts"`
	// PID is the server process the probe started, as this host's PID
	// namespace numbers it (the process whose /proc figures these are):
	// every cold start of a campaign is a process of its own, so no two
	// samples of one file share a PID (0 = not recorded: files written
	// before it was, and Knative's pods).
	PID   int    `json:"pid,omitempty"`
	Error string `json:"error,omitempty"`
	// TLS is the ready probe's TLS handshake (nil over plaintext).
	TLS *TLSHandshake `json:"tls,omitempty"`
	// PageCache counts the arm's file pages before and after they were
	// evicted for this start (run --page-cache cold; nil = left warm).
	PageCache *PageCacheEviction `json:"page_cache,omitempty"`
	// ImagePull is what the registry coldstart served sent while this
	// start ran, on Knative under a pull lever (nil otherwise).
	ImagePull *ImagePull `json:"image_pull,omitempty"`
}

// PageCacheEviction is what evicting an arm's files (binary, shared
// libraries, an image's root filesystem) from the page cache found: how
// many pages the files span and how many were resident before and after.
// Pages a running process maps stay resident.
type PageCacheEviction struct {
	FilePages      int64 `json:"file_pages"`
	ResidentBefore int64 `json:"resident_pages_before"`
	ResidentAfter  int64 `json:"resident_pages_after"`
}

// ImagePull is one start's image under a Knative pull lever: the image
// its new revision ran, served by coldstart's own registry, and what that
// registry sent between t0 and the first RPC. A start of pull=BANDWIDTH
// counts only when the registry sent at least the image's bytes (the node
// had none of it); one of pull=cached only when it sent nothing.
type ImagePull struct {
	Image string `json:"image"` // by digest
	Bytes int64  `json:"bytes"` // manifest, config and layers as stored
	// ServedBytes is what the registry sent during the start.
	ServedBytes int64 `json:"served_bytes"`
	// Bandwidth is the registry's link cap ("100Mbit", "max"); "cached"
	// for the control whose image was pulled once, before the counted
	// starts.
	Bandwidth string `json:"bandwidth"`
}

// Phase returns the named phase's time from t0 and whether it was seen.
func (s Sample) Phase(name string) (float64, bool) {
	for _, p := range s.Phases {
		if p.Name == name {
			return p.Ms, true
		}
	}
	return 0, false
}

// TLSHandshake is one probe's TLS handshake, on the probe's own new
// connection, with no session to resume.
type TLSHandshake struct {
	// Ms is from the ClientHello written to the handshake complete.
	Ms      float64 `json:"ms"`
	Version string  `json:"version"`
	Cipher  string  `json:"cipher"`
	ALPN    string  `json:"alpn,omitempty"`
	// Resumed is true if a session was resumed: never, by design.
	Resumed bool `json:"resumed,omitempty"`
	// ServerKey names the server certificate's key ("ECDSA P-256",
	// "RSA-2048"); ServerCertSHA256 is its fingerprint.
	ServerKey        string `json:"server_key,omitempty"`
	ServerCertSHA256 string `json:"server_cert_sha256,omitempty"`
}

// TLSClientKind is the record kind of a campaign's TLSClient.
const TLSClientKind = "tls_client"

// TLSClient is how a campaign's probes spoke TLS: the files' paths and the
// certificates' SHA-256 fingerprints, for provenance. Keys are never
// copied: only their paths.
type TLSClient struct {
	CAFile   string   `json:"cacert,omitempty"`
	CASHA256 []string `json:"cacert_sha256,omitempty"`
	// ServerName is the name verified ("" = the probe's host).
	ServerName string `json:"server_name,omitempty"`
	// InsecureSkipVerify: the server's certificate was not verified, and
	// the figures say so.
	InsecureSkipVerify bool   `json:"insecure_skip_verify"`
	CertFile           string `json:"cert,omitempty"`
	CertSHA256         string `json:"cert_sha256,omitempty"`
	KeyFile            string `json:"key,omitempty"`
}
