package explain

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/coldstart-go/coldstart/record"
)

// tracedPhases estimates when the runtime started and when the inits
// ended, from t0, from when each init line arrived: a line is written as
// its init ends, so runtime start ≤ arrival − (at + clock) for every line,
// and the smallest bound (the line read soonest, printed most precisely)
// is the estimate. Inits end no later than the last line's arrival, nor
// than runtime start + the last init's end (with its resolution).
func tracedPhases(inits []record.PackageInit) (ready, done float64, ok bool) {
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
func NewTrace(s record.Sample, col *Collector) record.Trace {
	tr := record.Trace{
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
			record.Phase{Name: record.PhaseRuntimeReady, Ms: ready},
			record.Phase{Name: record.PhaseInitsDone, Ms: done})
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
