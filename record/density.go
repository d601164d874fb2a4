package record

// DensityRow is one arm's memory with Instances idle instances running.
// PSS divides shared pages among the processes sharing them, so it is what
// one more instance really costs; RSS counts shared pages in full.
type DensityRow struct {
	Arm       string `json:"arm"`
	Budget    string `json:"budget"`
	Instances int    `json:"instances"`
	// N is the number of instances read (a failed read ends the
	// measurement with an error, so nothing is missing).
	N int `json:"n" render:"-"`
	// Per instance: the median over the instances; PSS with its interval
	// at 95% (nil below 6 instances).
	PSSBytes       int64  `json:"pss_bytes" render:"bytes"`
	PSSCILowBytes  *int64 `json:"pss_ci_low_bytes" render:"-"`
	PSSCIHighBytes *int64 `json:"pss_ci_high_bytes" render:"-"`
	PSSAnonBytes   int64  `json:"pss_anon_bytes" render:"bytes"`
	RSSBytes       int64  `json:"rss_bytes" render:"bytes"`
	// Sums over all instances.
	TotalPSSBytes int64 `json:"total_pss_bytes" render:"bytes"`
	TotalRSSBytes int64 `json:"total_rss_bytes" render:"bytes"`
	SizeBytes     int64 `json:"size_bytes" render:"bytes"`
}

// DensitySample is one instance's memory, a raw row.
type DensitySample struct {
	Arm          string `json:"arm"`
	Budget       string `json:"budget"`
	Instance     int    `json:"instance"`
	PID          int    `json:"pid"`
	RSSBytes     int64  `json:"rss_bytes"`
	PSSBytes     int64  `json:"pss_bytes"`
	PSSAnonBytes int64  `json:"pss_anon_bytes"`
}
