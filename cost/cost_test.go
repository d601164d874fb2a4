package cost

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/coldstart-go/coldstart/record"
	"github.com/coldstart-go/coldstart/report"
)

// instant is an arm whose starts take no time and no CPU, 1 GiB idle.
var instant = Arm{Name: "instant", Platform: Local, StartMs: []float64{0}, StartCPUMs: []float64{0}, IdleBytes: gib}

// fixed is an arm whose starts take ms milliseconds and 10 ms of CPU.
func fixed(ms float64) *Arm {
	return &Arm{Name: "fixed", Platform: Local, StartMs: []float64{ms}, StartCPUMs: []float64{10}, IdleBytes: gib}
}

func mustPolicy(t *testing.T, spec string) Policy {
	t.Helper()
	p, err := ParsePolicy(spec)
	if err != nil {
		t.Fatalf("ParsePolicy(%q): %v", spec, err)
	}
	return p
}

func mustArrivals(t *testing.T, spec string, d float64, seed uint64) Traffic {
	t.Helper()
	tr, err := ParseArrivals(spec, d, seed)
	if err != nil {
		t.Fatalf("ParseArrivals(%q): %v", spec, err)
	}
	return tr
}

func simulate(t *testing.T, arrivals []float64, arm *Arm, spec string, o Options) Result {
	t.Helper()
	r, err := Simulate(arrivals, arm, mustPolicy(t, spec), o)
	if err != nil {
		t.Fatalf("Simulate(%s): %v", spec, err)
	}
	return r
}

// With Poisson arrivals at rate λ, instant starts and no service time, a
// keep-alive T makes a request cold exactly when the gap before it is
// longer than T: a fraction exp(−λT).
func TestKeepAlivePoisson(t *testing.T) {
	const d = 2000 * 3600.0
	tr := mustArrivals(t, "poisson:1/min", d, 7)
	for _, tt := range []struct {
		spec string
		lt   float64 // λT
	}{{"keepalive:1m", 1}, {"keepalive:2m", 2}, {"keepalive:30s", 0.5}} {
		r := simulate(t, tr.Apps[0], &instant, tt.spec, Options{Duration: d, Seed: 1})
		got := float64(r.Cold) / float64(r.Requests)
		if want := math.Exp(-tt.lt); math.Abs(got-want) > 0.01 {
			t.Errorf("%s on poisson:1/min: cold fraction %.4f over %d requests, want exp(-%g) = %.4f ± 0.01", tt.spec, got, r.Requests, tt.lt, want)
		}
	}
}

// One request an hour outlives a 10-minute keep-alive every time; a
// keep-alive longer than the gap keeps all but the first warm.
func TestKeepAliveHourly(t *testing.T) {
	const d = 48 * 3600.0
	tr := mustArrivals(t, "periodic:1h", d, 1)
	o := Options{Duration: d, ServiceSeconds: 0.01}
	r := simulate(t, tr.Apps[0], fixed(50), "keepalive:10m", o)
	if r.Requests != 47 || r.Cold != r.Requests {
		t.Errorf("keepalive:10m on periodic:1h: %d of %d cold, want all 47", r.Cold, r.Requests)
	}
	if got := r.AddedQuantile(0.5); math.Abs(got-50) > 1e-6 {
		t.Errorf("keepalive:10m: p50 added %v ms, want the 50 ms start", got)
	}
	// Each instance: 50 ms start + 10 ms request + 10 min kept.
	if want := 47 * (0.05 + 0.01 + 600); math.Abs(r.InstanceSeconds-want) > 1e-6 {
		t.Errorf("keepalive:10m: %v instance-seconds, want %v", r.InstanceSeconds, want)
	}
	r = simulate(t, tr.Apps[0], fixed(50), "keepalive:61m", o)
	if r.Cold != 1 {
		t.Errorf("keepalive:61m on periodic:1h: %d cold, want only the first", r.Cold)
	}
}

// min-scale 1 keeps one pod from time 0 to the end: nothing cold, and
// instance-hours equal the duration.
func TestKnativeMinScale(t *testing.T) {
	const d = 24 * 3600.0
	tr := mustArrivals(t, "periodic:1h", d, 1)
	r := simulate(t, tr.Apps[0], fixed(50), "knative:min=1", Options{Duration: d, ServiceSeconds: 0.01})
	if r.Cold != 0 || r.Starts != 1 {
		t.Errorf("knative:min=1: %d cold, %d starts, want 0 and 1", r.Cold, r.Starts)
	}
	if math.Abs(r.InstanceSeconds-d) > 1e-6 {
		t.Errorf("knative:min=1: %v instance-seconds, want the duration %v", r.InstanceSeconds, d)
	}
}

// Knative's timing on one request at 1000 s (100 ms of work) after an
// initial pod, for ticks at several phases: the autoscaler decides every
// 2 s; a pod goes inactive once the stable window's one-second buckets
// hold no request and it has been active that long, and is removed
// max(grace, retention) later; scale-down-delay holds the last wanted
// scale that long first.
func TestKnativeTiming(t *testing.T) {
	arrivals := []float64{1000}
	phases := map[bool]bool{}
	for seed := range uint64(8) {
		o := Options{Duration: 3600, ServiceSeconds: 0.1, Seed: seed}
		p := knTickPhase(seed)
		phases[p < knTick/2] = true
		atOrAfter := func(x float64) float64 { return p + knTick*math.Ceil((x-p)/knTick) }
		// The initial pod, ready at 0, is active for the window from 0:
		// inactive at the first tick at or after it. The request's pod
		// turns active at the first tick after 1000, and the window
		// holds the request (bucket 1000) until the 1060 tick: active
		// for the window decides.
		a1 := atOrAfter(1000 + 1e-9)
		last := atOrAfter(1060) - knTick // the last tick the window holds it
		for _, tt := range []struct {
			spec string
			want float64 // instance-seconds
		}{
			{"knative", atOrAfter(60) + 30 + (a1 + 60 + 30 - 1000)},
			{"knative:window=6s", atOrAfter(6) + 30 + (a1 + 6 + 30 - 1000)},
			{"knative:grace=2m", atOrAfter(60) + 120 + (a1 + 60 + 120 - 1000)},
			{"knative:retention=2m", atOrAfter(60) + 120 + (a1 + 60 + 120 - 1000)},
			{"knative:grace=10s,retention=1m", atOrAfter(60) + 60 + (a1 + 60 + 60 - 1000)},
			// Delay 5m: the last tick's scale 1 is held for 5 minutes.
			{"knative:delay=5m", atOrAfter(60) + 30 + (last + 300 + 30 - 1000)},
		} {
			r := simulate(t, arrivals, &instant, tt.spec, o)
			if math.Abs(r.InstanceSeconds-tt.want) > 1e-6 || r.Cold != 1 || r.Starts != 2 {
				t.Errorf("%s, ticks at phase %.3f s: %v instance-seconds, %d cold, %d starts; want %v, 1, 2", tt.spec, p, r.InstanceSeconds, r.Cold, r.Starts, tt.want)
			}
		}
	}
	if len(phases) != 2 {
		t.Errorf("8 seeds put the ticks in one half of their interval only: %v", phases)
	}
}

// A request within the window and grace of the last one finds the pod
// warm (through the activator when inactive); one after it, cold.
func TestKnativeWarmWithinGrace(t *testing.T) {
	o := Options{Duration: 3600, ServiceSeconds: 0.1}
	for _, tt := range []struct {
		second float64
		cold   int64
	}{{1050, 1}, {1080, 1}, {1091, 1}, {1093, 2}} {
		r := simulate(t, []float64{1000, tt.second}, &instant, "knative", o)
		if r.Cold != tt.cold {
			t.Errorf("knative, requests at 1000 and %v: %d cold, want %d", tt.second, r.Cold, tt.cold)
		}
	}
}

// Target concurrency: 20 requests in flight at a time on a target of 10
// at 100% want two pods.
func TestKnativeTarget(t *testing.T) {
	var arrivals []float64
	for i := range 20 * 600 {
		arrivals = append(arrivals, float64(i)/20)
	}
	r := simulate(t, arrivals, &instant, "knative:target=10,utilization=100", Options{Duration: 600, ServiceSeconds: 1})
	if got := r.InstanceSeconds / 600; got < 1.8 || got > 2.2 {
		t.Errorf("knative target 10, 20 in flight: %.2f pods on average, want about 2", got)
	}
}

// The hybrid policy learns a periodic app's idle time, unloads it and
// pre-warms before the next request: after the first request nothing is
// cold, and the idle time is about a tenth of what a keep-alive of the
// histogram's range keeps.
func TestHybridPeriodic(t *testing.T) {
	const d = 48 * 3600.0
	tr := mustArrivals(t, "periodic:10m", d, 1)
	o := Options{Duration: d, ServiceSeconds: 0.01}
	h := simulate(t, tr.Apps[0], fixed(50), "hybrid", o)
	if h.Cold != 1 {
		t.Errorf("hybrid on periodic:10m: %d of %d cold, want only the first", h.Cold, h.Requests)
	}
	ka := simulate(t, tr.Apps[0], fixed(50), "keepalive:4h", o)
	// Learned: pre-warm at 0.9 × 9 min, ready 50 ms later, idle until
	// the request at 10 min: 0.19 of each period.
	if frac := h.IdleSeconds / d; frac > 0.25 {
		t.Errorf("hybrid on periodic:10m: idle %.2f of the time, want below 0.25 (pre-warmed 1.9 min before each request)", frac)
	}
	if frac := ka.IdleSeconds / d; frac < 0.95 {
		t.Errorf("keepalive:4h on periodic:10m: idle %.2f of the time, want nearly all", frac)
	}
	if h.Starts < 250 {
		t.Errorf("hybrid on periodic:10m: %d starts, want one pre-warm per period after learning", h.Starts)
	}
	// A keep-alive shorter than the period: all cold.
	if r := simulate(t, tr.Apps[0], fixed(50), "keepalive:5m", o); r.Cold != r.Requests {
		t.Errorf("keepalive:5m on periodic:10m: %d of %d cold, want all", r.Cold, r.Requests)
	}
}

// Unrepresentative idle times (uniform over the range) get the fallback
// keep-alive: no pre-warm.
func TestHybridFallback(t *testing.T) {
	st := NewHybrid().new().(*hyState)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		st.bins[rng.IntN(len(st.bins))]++
		st.in++
	}
	if p, k, ok := st.windows(); ok || p != 0 || k != 4*3600 {
		t.Errorf("windows() on uniform idle times = %v, %v, %v; want 0, 4h, not representative", p, k, ok)
	}
	st = NewHybrid().new().(*hyState)
	st.bins[9] = 20
	st.in = 20
	p, k, ok := st.windows()
	if !ok || math.Abs(p-0.9*540) > 1e-9 || math.Abs(k-(1.1*600-0.9*540)) > 1e-9 {
		t.Errorf("windows() on 20 idle times in 9–10 min = %v, %v, %v; want 486, 174, representative", p, k, ok)
	}
}

// The population's apps match the Azure study's fractions: 45% invoked
// at most once an hour, 81% at most once a minute, 40% with an
// inter-arrival CV above 1.
func TestPopulationFractions(t *testing.T) {
	const d = 24 * 3600.0
	tr := mustArrivals(t, "population:2000", d, 42)
	var perHour, perMin, withCV, cvAbove1 int
	for _, a := range tr.Apps {
		if float64(len(a)) <= d/3600 {
			perHour++
		}
		if float64(len(a)) <= d/60 {
			perMin++
		}
		if len(a) < 21 {
			continue
		}
		var gaps []float64
		for i := 1; i < len(a); i++ {
			gaps = append(gaps, a[i]-a[i-1])
		}
		var mean, ss float64
		for _, g := range gaps {
			mean += g
		}
		mean /= float64(len(gaps))
		for _, g := range gaps {
			ss += (g - mean) * (g - mean)
		}
		withCV++
		if math.Sqrt(ss/float64(len(gaps)-1))/mean > 1 {
			cvAbove1++
		}
	}
	n := float64(len(tr.Apps))
	for _, tt := range []struct {
		what      string
		got, want float64
		tol       float64
	}{
		{"apps at most 1/h", float64(perHour) / n, 0.45, 0.04},
		{"apps at most 1/min", float64(perMin) / n, 0.81, 0.04},
		{"apps with CV > 1 (of those with 20+ gaps)", float64(cvAbove1) / float64(withCV), 0.40, 0.07},
	} {
		if math.Abs(tt.got-tt.want) > tt.tol {
			t.Errorf("population:2000: %s: %.3f, want %.2f ± %.2f", tt.what, tt.got, tt.want, tt.tol)
		}
	}
	if again := mustArrivals(t, "population:2000", d, 42); !slices.EqualFunc(again.Apps, tr.Apps, slices.Equal[[]float64]) {
		t.Error("population:2000 with the same seed drew other arrivals")
	}
	if other := mustArrivals(t, "population:2000", d, 43); slices.EqualFunc(other.Apps, tr.Apps, slices.Equal[[]float64]) {
		t.Error("population:2000 with another seed drew the same arrivals")
	}
}

func TestArrivalsRates(t *testing.T) {
	const d = 7 * 24 * 3600.0
	for _, tt := range []struct {
		spec string
		want float64 // requests
	}{
		{"poisson:1/s", d},
		{"gamma:1/h,cv=2", d / 3600},
		{"diurnal:10/min,trough=0", d / 60 * 10 / 2},
		{"onoff:10/s,on=1m,off=29m", d * 10 / 30},
	} {
		tr := mustArrivals(t, tt.spec, d, 3)
		got := float64(tr.Requests())
		// Within 5 standard deviations of a Poisson count, or 30% for
		// the bursty gamma (CV 2: variance 4× the mean).
		tol := 5 * math.Sqrt(tt.want)
		if strings.HasPrefix(tt.spec, "gamma") {
			tol = 0.3 * tt.want
		}
		if math.Abs(got-tt.want) > tol {
			t.Errorf("%s over 7 days: %v requests, want %v ± %.0f", tt.spec, got, tt.want, tol)
		}
	}
	for _, bad := range []string{"poisson", "poisson:-1/s", "poisson:1/week", "gamma:1/s", "onoff:1/s,on=1m", "population:0", "zipf:1", "poisson:1/s,cv=2"} {
		if _, err := ParseArrivals(bad, d, 1); err == nil {
			t.Errorf("ParseArrivals(%q) = nil error, want one", bad)
		}
	}
}

func TestParsePolicy(t *testing.T) {
	for _, spec := range []string{
		"knative", "knative:grace=1m,window=6s,retention=0,delay=5m,min=0,initial=1,target=100",
		"knative:initial=0,allowzero=true", "keepalive:10m", "hybrid", "hybrid:margin=0,fallback=10m",
	} {
		p := mustPolicy(t, spec)
		again := mustPolicy(t, p.String())
		if again.String() != p.String() {
			t.Errorf("ParsePolicy(%q).String() = %q reads back as %q", spec, p, again)
		}
	}
	for spec, want := range map[string]string{"knative": "knative", "knative:delay=5m,min=0": "knative:delay=5m", "hybrid:margin=0": "hybrid:margin=0", "keepalive:10m": "keepalive:10m"} {
		if got := mustPolicy(t, spec).Short(); got != want {
			t.Errorf("ParsePolicy(%q).Short() = %q, want %q", spec, got, want)
		}
	}
	// Knative's own limits, in its own words.
	for _, tt := range []struct{ spec, want string }{
		{"knative:window=1s", "stable-window = 1s, must be in [6s; 1h0m0s] range"},
		{"knative:window=2h", "stable-window = 2h0m0s, must be in [6s; 1h0m0s] range"},
		{"knative:window=6500ms", "stable-window = 6.5s, must be specified with at most second precision"},
		{"knative:grace=0", "scale-to-zero-grace-period must be positive, was: 0s"},
		{"knative:delay=-1s", "scale-down-delay cannot be negative, was: -1s"},
		{"knative:retention=-1s", "scale-to-zero-pod-retention-period cannot be negative"},
		{"knative:initial=0", "initial-scale = 0, must be at least 0 (or at least 1 when allow-zero-initial-scale is false)"},
		{"knative:min=-1", "min-scale = -1, must be at least 0"},
		{"knative:target=0.001,utilization=100", "can't be less than 0.01"},
		{"knative:utilization=101", "container-concurrency-target-percentage = 1.010000 is outside of valid range of (0, 100]"},
		{"knative:panic=1", `unknown key "panic"`},
		{"keepalive:0s", "want a positive duration"},
		{"hybrid:head=99,tail=5", "want head < tail"},
		{"lru", "want knative"},
	} {
		_, err := ParsePolicy(tt.spec)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParsePolicy(%q) = %v, want an error containing %q", tt.spec, err, tt.want)
		}
	}
}

func TestReadTrace(t *testing.T) {
	for _, tt := range []struct {
		name, in string
		o        TraceOptions
		want     []float64
		wantDur  float64
	}{
		{"plain.txt", "1\n2.5\n\n# a comment\n70\n", TraceOptions{}, []float64{1, 2.5, 70}, 120},
		{"rfc.txt", "2026-12-01T10:00:00Z\n2026-12-01T10:00:30.5Z\n", TraceOptions{}, []float64{0, 30.5}, 60},
		{"t.csv", "id,ts\na,1\nb,3\n", TraceOptions{}, []float64{1, 3}, 60},
		{"t.csv", "at\n5\n9\n", TraceOptions{Field: "at"}, []float64{5, 9}, 60},
		{"t.jsonl", `{"timestamp": 4}` + "\n" + `{"timestamp": "6"}` + "\n", TraceOptions{}, []float64{4, 6}, 60},
		{"t.jsonl", `{"when": "2026-12-01T00:00:00Z"}` + "\n" + `{"when": "2026-12-01T00:01:00Z"}` + "\n", TraceOptions{Field: "when"}, []float64{0, 60}, 120},
		{"given.txt", "1\n", TraceOptions{Duration: 10}, []float64{1}, 10},
	} {
		tr, err := ReadTrace(tt.name, strings.NewReader(tt.in), tt.o)
		if err != nil {
			t.Errorf("ReadTrace(%s %q): %v", tt.name, tt.in, err)
			continue
		}
		if diff := cmp.Diff(tt.want, tr.Apps[0]); diff != "" || tr.Duration != tt.wantDur {
			t.Errorf("ReadTrace(%s %q): duration %v (want %v), arrivals (-want +got):\n%s", tt.name, tt.in, tr.Duration, tt.wantDur, diff)
		}
	}
	for _, tt := range []struct{ name, in, want string }{
		{"u.txt", "1\n5\n3\n", "u.txt:3: timestamp 3 is before line 2's 5: the trace must be sorted"},
		{"n.txt", "1\n-2\n", "n.txt:2: timestamp -2 is negative"},
		{"b.txt", "1\nsoon\n", `b.txt:2: "soon" is neither seconds nor an RFC 3339 time`},
		{"c.csv", "id,ts\na,1\nb,0.5\n", "c.csv:3: timestamp 0.5 is before line 2's 1"},
		{"h.csv", "id,when\na,1\n", "h.csv:1: no timestamp column"},
		{"j.jsonl", `{"ts": 2}` + "\n" + `{"ts": 1}` + "\n", "j.jsonl:2: timestamp 1 is before line 1's 2"},
		{"k.jsonl", `{"at": 2}` + "\n", "k.jsonl:1: no timestamp or time or ts field"},
		{"e.txt", "\n", "e.txt: no requests in it"},
	} {
		_, err := ReadTrace(tt.name, strings.NewReader(tt.in), TraceOptions{})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ReadTrace(%s %q) = %v, want an error containing %q", tt.name, tt.in, err, tt.want)
		}
	}
}

// azureDay writes rows in the Azure Functions 2019 per-minute layout;
// each row is app, function and its count in minutes 1, 2 and 1440.
func azureDay(rows ...[5]string) string {
	var b strings.Builder
	b.WriteString("HashOwner,HashApp,HashFunction,Trigger")
	for m := 1; m <= 1440; m++ {
		b.WriteString("," + strconv.Itoa(m))
	}
	b.WriteString("\n")
	for _, r := range rows {
		b.WriteString("o," + r[0] + "," + r[1] + ",http")
		for m := 1; m <= 1440; m++ {
			c := "0"
			switch m {
			case 1:
				c = r[2]
			case 2:
				c = r[3]
			case 1440:
				c = r[4]
			}
			b.WriteString("," + c)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func TestReadAzure(t *testing.T) {
	day := azureDay([5]string{"app1", "f1", "2", "0", "1"}, [5]string{"app1", "f2", "1", "1", "0"}, [5]string{"app2", "f3", "5", "5", "5"})
	tr, err := ReadTrace("d01.csv", strings.NewReader(day), TraceOptions{Select: "app=app1", Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	a := tr.Apps[0]
	if len(a) != 5 || tr.Duration != 86400 {
		t.Fatalf("app1: %d requests over %v s, want 5 over 86400", len(a), tr.Duration)
	}
	// Minute 1: three; minute 2: one; minute 1440: one, each inside it.
	for i, lim := range [][2]float64{{0, 60}, {0, 60}, {0, 60}, {60, 120}, {86340, 86400}} {
		if a[i] < lim[0] || a[i] >= lim[1] {
			t.Errorf("app1 request %d at %v s, want within [%v, %v)", i, a[i], lim[0], lim[1])
		}
	}
	tr, err = ReadTrace("d01.csv", strings.NewReader(day), TraceOptions{Select: "function=f3"})
	if err != nil || len(tr.Apps[0]) != 15 {
		t.Errorf("function=f3: %v requests, %v; want 15", len(tr.Apps[0]), err)
	}
	for _, tt := range []struct {
		in   string
		o    TraceOptions
		want string
	}{
		{day, TraceOptions{}, "2 apps in it"},
		{day, TraceOptions{Select: "app=nope"}, "no row with app=nope"},
		{day, TraceOptions{Select: "owner=o"}, "want app=HASH or function=HASH"},
		{azureDay([5]string{"a", "f", "1", "-3", "0"}), TraceOptions{}, "d01.csv:2: minute 2: \"-3\" is not a count"},
		{"HashOwner,HashApp,HashFunction,Trigger,1,2\n", TraceOptions{}, "d01.csv:1: 6 columns"},
	} {
		_, err := ReadTrace("d01.csv", strings.NewReader(tt.in), tt.o)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ReadTrace(azure, %+v) = %v, want an error containing %q", tt.o, err, tt.want)
		}
	}
}

func TestFrontAndAnswer(t *testing.T) {
	rows := []record.CostRow{
		{Traffic: "x", Arm: "a", Policy: "p1", AddedP99Ms: 100, IdleGiBHoursPerDay: 1},
		{Traffic: "x", Arm: "b", Policy: "p1", AddedP99Ms: 50, IdleGiBHoursPerDay: 2},
		{Traffic: "x", Arm: "c", Policy: "p1", AddedP99Ms: 120, IdleGiBHoursPerDay: 1.5}, // dominated by a
		{Traffic: "x", Arm: "d", Policy: "p2", AddedP99Ms: 400, IdleGiBHoursPerDay: 0.1},
		{Traffic: "y", Arm: "c", Policy: "p1", AddedP99Ms: 120, IdleGiBHoursPerDay: 1.5},
	}
	MarkFront(rows)
	var front []string
	for _, r := range rows {
		if r.Front {
			front = append(front, r.Traffic+"/"+r.Arm)
		}
	}
	if diff := cmp.Diff([]string{"x/a", "x/b", "x/d", "y/c"}, front); diff != "" {
		t.Errorf("front (-want +got):\n%s", diff)
	}
	c, err := ParseConstraint("p99<=300ms")
	if err != nil {
		t.Fatal(err)
	}
	if a := Answer(rows, "x", c); !a.Found || a.Arm != "a" {
		t.Errorf("Answer(p99<=300ms) = %+v, want arm a (least idle memory under 300 ms)", a)
	}
	if a := Answer(rows, "x", Constraint{Metric: "p99", Max: 10, text: "p99<=10ms"}); a.Found || !strings.Contains(a.Text, "no arm and policy meets it") {
		t.Errorf("Answer(p99<=10ms) = %+v, want none", a)
	}
	for _, bad := range []string{"p99", "p98<=1s", "p99<=fast", "cold<=x%"} {
		if _, err := ParseConstraint(bad); err == nil {
			t.Errorf("ParseConstraint(%q) = nil error, want one", bad)
		}
	}
}

// The published sample: arms from its local and Knative files, and the
// arm measured only locally named when asked for on Knative.
func TestArmsFromPublished(t *testing.T) {
	r, err := report.Load("../results/20261201-112156_coldstart.jsonl", "../results/20261201-112312_density.jsonl", "../results/20261201-114904_coldstart-knative.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	arms, err := ArmsFrom(r, Local, "cpus=0-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, a := range arms {
		names = append(names, a.Name)
		if len(a.StartMs) != 20 || len(a.StartCPUMs) != 20 || a.IdleBytes < 1<<20 || !strings.Contains(a.IdleSource, "density") {
			t.Errorf("arm %s: %d starts, %d CPU, %d idle bytes from %q; want 20, 20, over 1 MiB from density", a.Name, len(a.StartMs), len(a.StartCPUMs), a.IdleBytes, a.IdleSource)
		}
	}
	if diff := cmp.Diff([]string{"default", "static", "upx", "pgo", "image"}, names); diff != "" {
		t.Errorf("local arms (-want +got):\n%s", diff)
	}
	kn, err := ArmsFrom(r, KnativeP, "cpus=0-1", []string{"static"})
	if err != nil {
		t.Fatal(err)
	}
	if len(kn[0].StartMs) != 10 || kn[0].StartMs[0] < 300 || kn[0].StartCPUMs[0] <= 0 {
		t.Errorf("knative static: %d starts from %v ms with %v ms CPU; want 10 scale-from-zero starts with local CPU", len(kn[0].StartMs), kn[0].StartMs[0], kn[0].StartCPUMs[0])
	}
	_, err = ArmsFrom(r, KnativeP, "", []string{"static", "pgo"})
	if err == nil || !strings.Contains(err.Error(), "arm pgo: no cold-start rows on Knative") {
		t.Errorf("ArmsFrom(knative, pgo) = %v, want an error naming pgo", err)
	}
	if _, err := ArmsFrom(r, Local, "cpus=7", nil); err == nil || !strings.Contains(err.Error(), "measured: cpus=0, cpus=0-1, cores=0.5") {
		t.Errorf("ArmsFrom(budget cpus=7) = %v, want the budgets measured", err)
	}
}

// Rows is deterministic given the seed.
func TestRowsDeterministic(t *testing.T) {
	arm := Arm{Name: "x", Platform: Local, Budget: "b", StartMs: []float64{40, 60, 900}, StartCPUMs: []float64{5, 6, 7}, IdleBytes: 8 << 20}
	tr := mustArrivals(t, "gamma:1/min,cv=2", 24*3600, 9)
	pols := []Policy{mustPolicy(t, "knative"), mustPolicy(t, "keepalive:10m"), mustPolicy(t, "hybrid")}
	a, err := Rows(tr, []Arm{arm}, pols, Options{Seed: 5, ServiceSeconds: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Rows(tr, []Arm{arm}, pols, Options{Seed: 5, ServiceSeconds: 0.01})
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("Rows twice with seed 5 differ:\n%s", diff)
	}
	for _, r := range a {
		if r.Requests == 0 || r.Cold == 0 || r.AddedP999Ms < 40 || r.StartCPUSecondsPerDay <= 0 || r.IdleGiBHoursPerDay <= 0 {
			t.Errorf("%s: %+v, want requests, cold ones, a p99.9 of a start, start CPU and idle memory", r.Policy, r)
		}
	}
}

// On Knative an idle instance is the pod: with a run --on knative file
// that read its pods' memory, a Knative arm's idle bytes are its pod's
// working set from that file, not the local PSS; locally they stay the
// density file's PSS.
func TestArmsFromPodMemory(t *testing.T) {
	r, err := report.Load("../results/20261201-112156_coldstart.jsonl", "../results/20261201-112312_density.jsonl", "../results/20261202-101723_coldstart-knative.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	pod := map[string]int64{}
	for _, c := range r.Campaigns {
		for _, pm := range c.PodMemory {
			pod[pm.Arm] = int64(*pm.PodWorkingSetBytes)
		}
	}
	kn, err := ArmsFrom(r, KnativeP, "cpus=0-1", []string{"default", "static", "upx"})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range kn {
		if a.IdleBytes != pod[a.Name] || pod[a.Name] == 0 || !strings.Contains(a.IdleSource, "pod's working set") {
			t.Errorf("knative %s: idle %d bytes from %q, want the pod's %d", a.Name, a.IdleBytes, a.IdleSource, pod[a.Name])
		}
	}
	local, err := ArmsFrom(r, Local, "cpus=0-1", []string{"static"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(local[0].IdleSource, "density") {
		t.Errorf("local static: idle from %q, want the density file's PSS", local[0].IdleSource)
	}
}
