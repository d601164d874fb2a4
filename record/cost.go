package record

// CostKind and CostAnswerKind are the record kinds `coldstart cost`
// writes: one CostRow per traffic model, arm and policy, and one
// CostAnswer per traffic model when a constraint was given.
const (
	CostKind       = "cost"
	CostAnswerKind = "cost_answer"
)

// CostRow is one arm under one scaling policy and one traffic model, as
// the cost package's simulator figures it: what the requests paid in cold
// starts and what the instances cost. Rates are per day of simulated
// traffic (the totals over DurationHours, times 24 / DurationHours).
type CostRow struct {
	// Traffic names the traffic model (a trace file, or an --arrivals
	// spec such as poisson:1/s); Seed the seed its arrivals and the start
	// samples were drawn with.
	Traffic       string  `json:"traffic"`
	Seed          uint64  `json:"seed"`
	DurationHours float64 `json:"duration_hours"`
	Arm           string  `json:"arm"`
	// Platform is where the start samples were measured: "local" (a
	// budget's spawn → first RPC) or "knative" (a scale from zero through
	// the activator); Budget the budget whose samples were used.
	Platform string `json:"platform"`
	Budget   string `json:"budget"`
	// StartSamples is how many measured starts the added latency and the
	// start CPU were drawn from.
	StartSamples int `json:"start_samples"`
	// Policy names the scaling policy by the parameters that differ from
	// its defaults (knative:delay=5m); PolicySpec spells out every one, as
	// `coldstart cost --policy` accepts it.
	Policy     string `json:"policy"`
	PolicySpec string `json:"policy_spec"`
	// Requests is how many requests arrived; Cold how many waited for an
	// instance to start, and ColdPct that as a percentage (0 when no
	// request arrived).
	Requests int64   `json:"requests"`
	Cold     int64   `json:"cold"`
	ColdPct  float64 `json:"cold_pct"`
	// AddedP50Ms, AddedP99Ms and AddedP999Ms are percentiles, over every
	// request (a warm one adds 0), of the time it waited for a start.
	AddedP50Ms  float64 `json:"added_p50_ms"`
	AddedP99Ms  float64 `json:"added_p99_ms"`
	AddedP999Ms float64 `json:"added_p999_ms"`
	// Starts is how many instances were started (by requests, the
	// policy's own scaling, pre-warming or initial scale).
	Starts int64 `json:"starts"`
	// InstanceHoursPerDay is instance lifetime, start to removal;
	// IdleGiBHoursPerDay the idle part of it (ready, serving nothing)
	// times IdleBytes; StartCPUSecondsPerDay the CPU the starts took.
	InstanceHoursPerDay   float64 `json:"instance_hours_per_day"`
	IdleGiBHoursPerDay    float64 `json:"idle_gib_hours_per_day"`
	StartCPUSecondsPerDay float64 `json:"start_cpu_seconds_per_day"`
	// IdleBytes is one idle instance's memory and IdleSource where it was
	// read (local density PSS until a pod's is measured).
	IdleBytes  int64  `json:"idle_bytes"`
	IdleSource string `json:"idle_source"`
	// Front: no other row of the same traffic model has both a lower or
	// equal p99 added latency and lower or equal idle GiB-hours, one of
	// them strictly lower.
	Front bool `json:"front"`
}

// CostAnswer is the cheapest row of a traffic model that meets a
// constraint (such as p99<=300ms): least idle GiB-hours per day, then
// least instance-hours. Found is false when no row met it.
type CostAnswer struct {
	Traffic    string  `json:"traffic"`
	Constraint string  `json:"constraint"`
	Found      bool    `json:"found"`
	Arm        string  `json:"arm"`
	Policy     string  `json:"policy"`
	PolicySpec string  `json:"policy_spec"`
	Platform   string  `json:"platform"`
	Budget     string  `json:"budget"`
	AddedP99Ms float64 `json:"added_p99_ms"`
	ColdPct    float64 `json:"cold_pct"`
	// IdleGiBHoursPerDay and InstanceHoursPerDay are the row's.
	IdleGiBHoursPerDay  float64 `json:"idle_gib_hours_per_day"`
	InstanceHoursPerDay float64 `json:"instance_hours_per_day"`
	// Text is the answer in one line, as the command prints it.
	Text string `json:"text"`
}
