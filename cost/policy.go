package cost

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	knconfig "knative.dev/serving/pkg/autoscaler/config"
)

// Policy is a scaling policy: Knative, KeepAlive or Hybrid. String is its
// spec with every parameter spelled out, which ParsePolicy reads back.
// Short names only the parameters that differ from the defaults
// (knative:delay=5m), for tables.
type Policy interface {
	String() string
	Short() string
	new() policy
}

// short keeps the key=value pairs of spec that def's spec lacks.
func short(spec, def string) string {
	name, args, _ := strings.Cut(spec, ":")
	_, dargs, _ := strings.Cut(def, ":")
	var keep []string
	for _, kv := range strings.Split(args, ",") {
		if !slices.Contains(strings.Split(dargs, ","), kv) {
			keep = append(keep, kv)
		}
	}
	if len(keep) == 0 {
		return name
	}
	return name + ":" + strings.Join(keep, ",")
}

// ParsePolicy reads a policy spec: "knative[:key=value,...]",
// "keepalive:DURATION" or "hybrid[:key=value,...]". Knative's parameters
// are checked by Knative's own config-autoscaler validation, whose message
// an error quotes.
func ParsePolicy(spec string) (Policy, error) {
	name, args, _ := strings.Cut(spec, ":")
	switch name {
	case "knative":
		return parseKnative(args)
	case "keepalive":
		d, err := time.ParseDuration(args)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("keepalive:%s: want a positive duration such as keepalive:10m", args)
		}
		return KeepAlive{T: d}, nil
	case "hybrid":
		return parseHybrid(args)
	}
	return nil, fmt.Errorf("policy %q: want knative[:key=value,...], keepalive:DURATION or hybrid[:key=value,...]", spec)
}

// keyValues splits "a=1,b=2" into ordered pairs, refusing keys not in known.
func keyValues(what, args string, known []string) ([][2]string, error) {
	var out [][2]string
	if args == "" {
		return nil, nil
	}
	for _, kv := range strings.Split(args, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || v == "" {
			return nil, fmt.Errorf("%s: %q: want key=value", what, kv)
		}
		if !slices.Contains(known, k) {
			return nil, fmt.Errorf("%s: unknown key %q (known: %s)", what, k, strings.Join(known, ", "))
		}
		out = append(out, [2]string{k, v})
	}
	return out, nil
}

// durText writes d as briefly as it reads: 30s, 5m, 1h, 1m30s.
func durText(d time.Duration) string {
	switch {
	case d == 0:
		return "0"
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	s := d.String() // 1m30s, 1h0m30s, 1.5s
	return strings.Replace(s, "h0m", "h", 1)
}

// Knative is Knative Serving's KPA scale-to-zero as its autoscaler (v0.42)
// times it, with the config-autoscaler defaults as the zero-free values
// NewKnative gives:
//
//   - every 2 s the autoscaler averages the concurrency (requests in
//     flight, those the activator holds included) over the stable Window
//     and wants ceil(average / (Target × Utilization/100)) pods, at least
//     one while any request fell in the window, and no fewer than half the
//     ready pods (max-scale-down-rate 2). The window is whole seconds of
//     one-second buckets, the current one included, as the autoscaler
//     keeps them: a request that ended in second k leaves it at the first
//     tick of second k+Window. Where the ticks fall within their 2 s is
//     drawn from the seed (the KPA ticks from when it made the revision's
//     decider);
//   - with Delay, it wants the most it wanted over the last Delay;
//   - never fewer than Min;
//   - wanting zero, a revision active for less than Window keeps one pod;
//     past that it turns inactive (the activator in the path) and its last
//     pod goes once it has been inactive for max(Grace, Retention);
//   - a request when no pod exists is held by the activator, which starts
//     one at once; Initial pods start at time 0.
//
// Not modelled: the panic window (a burst scales up on the next tick from
// the stable average, or by the request that finds no room), pods'
// termination grace, and max-scale.
type Knative struct {
	Grace, Window, Retention, Delay time.Duration
	Min, Initial                    int
	// AllowZeroInitial is allow-zero-initial-scale, which Knative requires
	// for Initial 0.
	AllowZeroInitial bool
	// Target is the concurrency target per pod; Utilization the percentage
	// of it the autoscaler aims at.
	Target, Utilization float64
}

// NewKnative is Knative's config-autoscaler defaults: grace 30s, window
// 60s, no retention or delay, min-scale 0, initial-scale 1, target 100
// at 70%.
func NewKnative() Knative {
	return Knative{Grace: 30 * time.Second, Window: 60 * time.Second, Initial: 1, Target: 100, Utilization: 70}
}

var knativeKeys = []string{"grace", "window", "retention", "delay", "min", "initial", "allowzero", "target", "utilization"}

// knativeConfigKey is each parameter's config-autoscaler key, which
// Knative's own error messages name.
var knativeConfigKey = map[string]string{
	"grace": "scale-to-zero-grace-period", "window": "stable-window", "retention": "scale-to-zero-pod-retention-period",
	"delay": "scale-down-delay", "min": "min-scale", "initial": "initial-scale", "allowzero": "allow-zero-initial-scale",
	"target": "container-concurrency-target-default", "utilization": "container-concurrency-target-percentage",
}

func parseKnative(args string) (Policy, error) {
	kvs, err := keyValues("knative", args, knativeKeys)
	if err != nil {
		return nil, err
	}
	k := NewKnative()
	for _, kv := range kvs {
		key, v := kv[0], kv[1]
		bad := func(want string) error {
			return fmt.Errorf("knative: %s=%s: want %s", key, v, want)
		}
		switch key {
		case "grace", "window", "retention", "delay":
			d, err := time.ParseDuration(v)
			if v == "0" {
				d, err = 0, nil
			}
			if err != nil {
				return nil, bad("a duration such as 30s")
			}
			*map[string]*time.Duration{"grace": &k.Grace, "window": &k.Window, "retention": &k.Retention, "delay": &k.Delay}[key] = d
		case "min", "initial":
			n, err := strconv.Atoi(v)
			if err != nil {
				return nil, bad("a whole number of pods")
			}
			*map[string]*int{"min": &k.Min, "initial": &k.Initial}[key] = n
		case "allowzero":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return nil, bad("true or false")
			}
			k.AllowZeroInitial = b
		case "target", "utilization":
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return nil, bad("a number")
			}
			*map[string]*float64{"target": &k.Target, "utilization": &k.Utilization}[key] = f
		}
	}
	if err := k.Validate(); err != nil {
		return nil, err
	}
	return k, nil
}

// Validate checks k as Knative checks config-autoscaler (its
// NewConfigFromMap), and returns Knative's own message naming its limit.
func (k Knative) Validate() error {
	m := map[string]string{
		"scale-to-zero-grace-period":              k.Grace.String(),
		"stable-window":                           k.Window.String(),
		"scale-to-zero-pod-retention-period":      k.Retention.String(),
		"scale-down-delay":                        k.Delay.String(),
		"min-scale":                               strconv.Itoa(k.Min),
		"initial-scale":                           strconv.Itoa(k.Initial),
		"allow-zero-initial-scale":                strconv.FormatBool(k.AllowZeroInitial),
		"container-concurrency-target-default":    strconv.FormatFloat(k.Target, 'g', -1, 64),
		"container-concurrency-target-percentage": strconv.FormatFloat(k.Utilization, 'g', -1, 64),
	}
	if k.Min > math.MaxInt32 || k.Initial > math.MaxInt32 {
		return fmt.Errorf("knative: min or initial scale %d/%d does not fit Knative's int32", k.Min, k.Initial)
	}
	if _, err := knconfig.NewConfigFromMap(m); err != nil {
		return fmt.Errorf("knative: Knative rejects it: %v", err)
	}
	return nil
}

func (k Knative) String() string {
	s := fmt.Sprintf("knative:grace=%s,window=%s,retention=%s,delay=%s,min=%d,initial=%d,target=%g",
		durText(k.Grace), durText(k.Window), durText(k.Retention), durText(k.Delay), k.Min, k.Initial, k.Target)
	if k.Utilization != 70 {
		s += fmt.Sprintf(",utilization=%g", k.Utilization)
	}
	if k.AllowZeroInitial {
		s += ",allowzero=true"
	}
	return s
}

func (k Knative) Short() string { return short(k.String(), NewKnative().String()) }

func (k Knative) new() policy { return &knState{k: k, tick: knTick} }

// knTick is the KPA's decision interval, seconds (its tickInterval).
const knTick = 2.0

// knTickPhase is where a simulation seeded seed puts the KPA's ticks
// within one interval, [0, knTick): a stream of its own, so that the
// start samples drawn do not depend on it.
func knTickPhase(seed uint64) float64 {
	return knTick * rand.New(rand.NewPCG(seed, 0x7469636b)).Float64()
}

// tickSlop absorbs the rounding of tick times summed from a fractional
// phase, so that a duration of whole ticks compares as whole.
const tickSlop = 1e-9

type knMode int

const (
	knZero knMode = iota
	knActive
	knInactive
)

type span struct{ a, b float64 }

type knState struct {
	k    Knative
	tick float64
	// phase is where the ticks fall within one interval: the KPA ticks
	// from when the revision's decider was made, which the traffic does
	// not know, so it is drawn from the seed.
	phase float64
	next  float64
	// reqs are the requests that may still fall in the stable window,
	// from arrival (held by the activator or queued) to end.
	reqs []span
	// delay is a monotonic queue of (time, wanted) for the most wanted
	// over the last Delay.
	delay []struct {
		t float64
		n int
	}
	mode                       knMode
	activeSince, inactiveSince float64
}

func (st *knState) begin(s *sim) {
	st.phase = knTickPhase(s.o.Seed)
	st.next = st.phase + st.tick
	last := 0.0
	for range st.k.Initial {
		last = math.Max(last, s.startInstance(0).ready)
	}
	if st.k.Initial > 0 {
		st.mode, st.activeSince = knActive, last
	}
}

func (st *knState) advance(s *sim, t float64) {
	for st.next <= t {
		if len(s.insts) == 0 && st.mode == knZero && len(st.reqs) == 0 && len(st.delay) == 0 {
			// Nothing up and nothing remembered: every tick until t
			// would decide zero.
			if n := st.phase + math.Ceil((t-st.phase)/st.tick)*st.tick; n > st.next {
				st.next = n
			}
			if st.next > t {
				break
			}
		}
		st.decide(s, st.next)
		st.next += st.tick
	}
}

func (st *knState) decide(s *sim, now float64) {
	w := st.k.Window.Seconds()
	from := math.Floor(now) - w + 1
	kept := st.reqs[:0]
	var sum float64
	seen := false
	for _, r := range st.reqs {
		if math.Floor(r.b) < from {
			continue
		}
		kept = append(kept, r)
		if r.a <= now {
			seen = true
			sum += math.Max(0, math.Min(r.b, now)-math.Max(r.a, from))
		}
	}
	st.reqs = kept
	want := int(math.Ceil(sum / w / (st.k.Target * st.k.Utilization / 100)))
	if seen && want == 0 {
		want = 1
	}
	ready := 0
	for _, in := range s.insts {
		if in.ready <= now {
			ready++
		}
	}
	want = max(want, ready/2) // max-scale-down-rate 2
	if st.k.Delay > 0 {
		for len(st.delay) > 0 && st.delay[len(st.delay)-1].n <= want {
			st.delay = st.delay[:len(st.delay)-1]
		}
		st.delay = append(st.delay, struct {
			t float64
			n int
		}{now, want})
		for st.delay[0].t <= now-st.k.Delay.Seconds()+tickSlop {
			st.delay = st.delay[1:]
		}
		want = st.delay[0].n
		if want == 0 && len(st.delay) == 1 {
			st.delay = st.delay[:0] // nothing wanted over the whole delay
		}
	}
	want = max(want, st.k.Min)
	n := len(s.insts)
	target := want
	if want == 0 {
		switch st.mode {
		case knActive:
			if now-st.activeSince >= w-tickSlop {
				st.mode, st.inactiveSince = knInactive, now
				target = n // deactivated: the pods stay until the grace is up
			} else {
				target = min(1, n)
			}
		case knInactive:
			if now-st.inactiveSince >= math.Max(st.k.Grace.Seconds(), st.k.Retention.Seconds())-tickSlop {
				st.mode, target = knZero, 0
			} else {
				target = n
			}
		case knZero:
			target = 0
		}
	} else if st.mode != knActive {
		st.mode, st.activeSince = knActive, now
	}
	for ; n < target; n++ {
		s.startInstance(now)
	}
	if n > target {
		var idle []*instance
		for _, in := range s.insts {
			if in.idleAt(now) {
				idle = append(idle, in)
			}
		}
		slices.SortFunc(idle, func(a, b *instance) int { return cmpFloat(a.lastUsed, b.lastUsed) })
		for _, in := range idle {
			if n == target {
				break
			}
			s.remove(in, now)
			n--
		}
	}
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (st *knState) served(s *sim, t float64, in *instance, wait, start, end float64) {
	st.reqs = append(st.reqs, span{t, end})
	if st.mode == knZero {
		// The activator held it and scaled from zero.
		st.mode, st.activeSince = knActive, in.ready
	}
}

// KeepAlive keeps each instance for T after its last request ends, then
// removes it: the fixed keep-alive of FaaS platforms (10 min on AWS, 20
// on Azure in 2019).
type KeepAlive struct{ T time.Duration }

func (k KeepAlive) String() string { return "keepalive:" + durText(k.T) }
func (k KeepAlive) Short() string  { return k.String() }
func (k KeepAlive) new() policy    { return &kaState{t: k.T.Seconds()} }

type kaState struct{ t float64 }

func (st *kaState) begin(*sim) {}

func (st *kaState) advance(s *sim, t float64) {
	for i := 0; i < len(s.insts); {
		in := s.insts[i]
		if exp := in.idleFrom() + st.t; exp <= t {
			s.remove(in, exp)
			continue
		}
		i++
	}
}

func (st *kaState) served(*sim, float64, *instance, float64, float64, float64) {}
