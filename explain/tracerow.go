package explain

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/coldstart-go/coldstart/record"
)

// Trace is one traced cold start: the raw row of an explain campaign.
type Trace struct {
	Arm    string `json:"arm"`
	Budget string `json:"budget"`
	Run    int    `json:"run"`
	Warmup bool   `json:"warmup"`
	// FirstRPCMs and Phases are the cold start as `coldstart run` measures
	// it (from t0, immediately before the fork), with the traced phases
	// added: runtime_ready (runtime.main began, estimated from when the
	// init lines arrived) and inits_done (the last init ended).
	FirstRPCMs     float64        `json:"first_rpc_ms"`
	ReadyAttemptMs float64        `json:"ready_attempt_ms,omitempty"`
	Phases         []record.Phase `json:"phases"`
	Inits          []Init         `json:"inits"`
	// OtherStderrLines counts the server's stderr lines that are not init
	// trace lines; FirstOtherLine is the first of them.
	OtherStderrLines int    `json:"other_stderr_lines"`
	FirstOtherLine   string `json:"first_other_line,omitempty"`
	Error            string `json:"error,omitempty"`
}

// The phases explain adds to a cold start's.
const (
	PhaseRuntimeReady = "runtime_ready" // runtime.main began: the runtime is up, inits start
	PhaseInitsDone    = "inits_done"    // the last package init ended: main.main begins
)

// Phase returns the named phase's time from t0 and whether it was seen.
func (t Trace) Phase(name string) (float64, bool) {
	for _, p := range t.Phases {
		if p.Name == name {
			return p.Ms, true
		}
	}
	return 0, false
}

// tracedPhases estimates when the runtime started and when the inits
// ended, from t0, from when each init line arrived: a line is written as
// its init ends, so runtime start ≤ arrival − (at + clock) for every line,
// and the smallest bound (the line read soonest, printed most precisely)
// is the estimate. Inits end no later than the last line's arrival, nor
// than runtime start + the last init's end (with its resolution).
func tracedPhases(inits []Init) (ready, done float64, ok bool) {
	first := true
	var lastArrival, lastEnd float64
	for _, in := range inits {
		if in.ArrivedMs <= 0 {
			return 0, 0, false
		}
		b := in.ArrivedMs - in.EndMs()
		if first || b < ready {
			ready = b
		}
		first = false
		lastArrival = max(lastArrival, in.ArrivedMs)
		lastEnd = max(lastEnd, in.EndMs()+in.AtResMs+in.ClockResMs)
	}
	if first {
		return 0, 0, false
	}
	ready = max(ready, 0)
	return ready, min(lastArrival, ready+lastEnd), true
}

// NewTrace makes the trace row of one cold start from its sample and what
// its stderr held (col nil = nothing was collected).
func NewTrace(s record.Sample, col *Collector) Trace {
	tr := Trace{
		Arm: s.Arm, Budget: s.Budget, Run: s.Run, Warmup: s.Warmup,
		FirstRPCMs: s.FirstRPCMs, ReadyAttemptMs: s.ReadyAttemptMs,
		Phases: append([]record.Phase(nil), s.Phases...), Error: StripTrace(s.Error),
	}
	if col == nil {
		return tr
	}
	tr.Inits = col.Inits()
	tr.OtherStderrLines, tr.FirstOtherLine = col.OtherLines()
	if ready, done, ok := tracedPhases(tr.Inits); ok {
		tr.Phases = append(tr.Phases,
			record.Phase{Name: PhaseRuntimeReady, Ms: ready},
			record.Phase{Name: PhaseInitsDone, Ms: done})
	}
	return tr
}

// traceTail matches the end of an init line whose start a bounded
// stderr tail cut off.
var traceTail = regexp.MustCompile(`(^|[0-9] bytes, )[0-9]+ allocs$`)

// StripTrace removes init trace lines from an error text (a server's
// stderr tail quoted in it), keeping what the server itself said.
func StripTrace(s string) string {
	if !strings.Contains(s, " allocs") {
		return s
	}
	lines := strings.Split(s, "\n")
	out := lines[:0]
	dropped := 0
	for _, l := range lines {
		if _, ok := ParseInit(l); ok || traceTail.MatchString(l) {
			dropped++
			continue
		}
		out = append(out, l)
	}
	r := strings.Join(out, "\n")
	if dropped > 0 && strings.HasSuffix(r, "stderr:") {
		r += fmt.Sprintf(" (%d init trace lines, nothing else)", dropped)
	}
	return r
}
