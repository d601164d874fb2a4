package cost

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/gonum/stat/distuv"
)

// Traffic is a traffic model: each app's request arrivals, seconds from
// 0, ascending, below Duration. Every app but a population's is one.
type Traffic struct {
	// Name is the --arrivals spec or the trace file's name.
	Name     string
	Apps     [][]float64
	Duration float64
}

// Requests is how many requests arrive over all apps.
func (t Traffic) Requests() int {
	n := 0
	for _, a := range t.Apps {
		n += len(a)
	}
	return n
}

// ParseRate reads a rate: "1/s", "0.5/min", "2/h", "3/d", or a plain
// number of requests per second. It returns requests per second.
func ParseRate(s string) (float64, error) {
	num, unit, hasUnit := strings.Cut(s, "/")
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v <= 0 || math.IsInf(v, 0) {
		return 0, fmt.Errorf("rate %q: want a positive number of requests per s, min, h or d, such as 1/s or 2/h", s)
	}
	if !hasUnit {
		return v, nil
	}
	per := map[string]float64{"s": 1, "min": 60, "m": 60, "h": 3600, "d": 86400}[unit]
	if per == 0 {
		return 0, fmt.Errorf("rate %q: unit %q, want s, min, h or d", s, unit)
	}
	return v / per, nil
}

// The population mode's app mix, fitted to "Serverless in the Wild"
// (Azure Functions, July 2019): each app's mean rate is log-normal in
// requests per hour with P(rate ≤ 1/h) = 0.45 and P(rate ≤ 1/min) = 0.81
// (ln-space μ and σ solve Φ(−μ/σ) = 0.45 and Φ((ln 60 − μ)/σ) = 0.81);
// 40% of apps have inter-arrival times with a coefficient of variation
// above 1 (drawn from [1.5, 3]), the others below (from [0.1, 0.8]), as
// gamma renewal processes. Rates are capped at PopulationCap: past it
// every policy keeps instances warm, and simulating each request of the
// busiest apps would cost more than it tells.
const (
	popMu    = 0.5128
	popSigma = 4.0795
	popBurst = 0.40
)

// PopulationCap is the population mode's highest app rate, requests per
// second.
const PopulationCap = 1.0

// App is one app of a population: its mean rate (requests per second)
// and the coefficient of variation of its inter-arrival times.
type App struct {
	Rate, CV float64
}

// Population draws n apps' rates and CVs (see the constants above).
func Population(n int, rng *rand.Rand) []App {
	ln := distuv.LogNormal{Mu: popMu, Sigma: popSigma, Src: rng}
	apps := make([]App, n)
	for i := range apps {
		r := math.Min(ln.Rand()/3600, PopulationCap)
		cv := 0.1 + 0.7*rng.Float64()
		if rng.Float64() < popBurst {
			cv = 1.5 + 1.5*rng.Float64()
		}
		apps[i] = App{Rate: r, CV: cv}
	}
	return apps
}

// ParseArrivals makes synthetic traffic from spec over duration seconds,
// drawn with a PCG seeded by seed:
//
//	poisson:RATE                      exponential inter-arrival times
//	gamma:RATE,cv=X                   gamma inter-arrivals with that CV (>1: bursty)
//	periodic:EVERY                    one request every EVERY (a duration), from EVERY
//	diurnal:PEAK[,trough=RATE][,period=DUR]
//	                                  Poisson at a rate rising from trough (PEAK/10)
//	                                  at 0 to PEAK at half the period (24h) and back
//	onoff:RATE,on=DUR,off=DUR         Poisson at RATE for on, nothing for off, repeated
//	population:N                      N apps fitted to the Azure study's mix
func ParseArrivals(spec string, duration float64, seed uint64) (Traffic, error) {
	rng := rand.New(rand.NewPCG(seed, 0x617272))
	kind, args, _ := strings.Cut(spec, ":")
	parts := strings.Split(args, ",")
	opts := map[string]string{}
	for _, p := range parts[1:] {
		k, v, ok := strings.Cut(p, "=")
		if !ok {
			return Traffic{}, fmt.Errorf("%s: %q: want key=value", spec, p)
		}
		opts[k] = v
	}
	only := func(keys ...string) error {
		for k := range opts {
			found := false
			for _, w := range keys {
				found = found || k == w
			}
			if !found {
				return fmt.Errorf("%s: unknown key %q for %s", spec, k, kind)
			}
		}
		return nil
	}
	dur := func(key string, def time.Duration) (float64, error) {
		v, ok := opts[key]
		if !ok {
			if def == 0 {
				return 0, fmt.Errorf("%s: %s= missing", spec, key)
			}
			return def.Seconds(), nil
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return 0, fmt.Errorf("%s: %s=%s: want a positive duration", spec, key, v)
		}
		return d.Seconds(), nil
	}
	tr := Traffic{Name: spec, Duration: duration}
	one := func(a []float64) (Traffic, error) {
		tr.Apps = [][]float64{a}
		return tr, nil
	}
	wrap := func(err error) error { return fmt.Errorf("%s: %w", spec, err) }
	switch kind {
	case "poisson":
		rate, err := ParseRate(parts[0])
		if err != nil {
			return tr, wrap(err)
		}
		if err := only(); err != nil {
			return tr, err
		}
		return one(renewal(rate, 1, duration, rng))
	case "gamma":
		rate, err := ParseRate(parts[0])
		if err != nil {
			return tr, wrap(err)
		}
		if err := only("cv"); err != nil {
			return tr, err
		}
		cv, err := strconv.ParseFloat(opts["cv"], 64)
		if err != nil || cv <= 0 {
			return tr, fmt.Errorf("%s: cv=%s: want a positive coefficient of variation", spec, opts["cv"])
		}
		return one(renewal(rate, cv, duration, rng))
	case "periodic":
		d, err := time.ParseDuration(args)
		if err != nil || d <= 0 {
			return tr, fmt.Errorf("%s: want periodic:DURATION such as periodic:10m", spec)
		}
		var a []float64
		for t := d.Seconds(); t < duration; t += d.Seconds() {
			a = append(a, t)
		}
		return one(a)
	case "diurnal":
		peak, err := ParseRate(parts[0])
		if err != nil {
			return tr, wrap(err)
		}
		if err := only("trough", "period"); err != nil {
			return tr, err
		}
		trough := peak / 10
		if v, ok := opts["trough"]; ok && v == "0" {
			trough = 0
		} else if ok {
			if trough, err = ParseRate(v); err != nil || trough > peak {
				return tr, fmt.Errorf("%s: trough=%s: want a rate at most the peak", spec, v)
			}
		}
		period, err := dur("period", 24*time.Hour)
		if err != nil {
			return tr, err
		}
		// Thinning: a Poisson stream at the peak, each arrival kept with
		// probability rate(t)/peak.
		var a []float64
		for _, t := range renewal(peak, 1, duration, rng) {
			r := trough + (peak-trough)*(1-math.Cos(2*math.Pi*t/period))/2
			if rng.Float64()*peak < r {
				a = append(a, t)
			}
		}
		return one(a)
	case "onoff":
		rate, err := ParseRate(parts[0])
		if err != nil {
			return tr, wrap(err)
		}
		if err := only("on", "off"); err != nil {
			return tr, err
		}
		on, err := dur("on", 0)
		if err != nil {
			return tr, err
		}
		off, err := dur("off", 0)
		if err != nil {
			return tr, err
		}
		var a []float64
		for _, t := range renewal(rate, 1, duration, rng) {
			if math.Mod(t, on+off) < on {
				a = append(a, t)
			}
		}
		return one(a)
	case "population":
		n, err := strconv.Atoi(parts[0])
		if err != nil || n < 1 {
			return tr, fmt.Errorf("%s: want population:N with N at least 1 app", spec)
		}
		if err := only(); err != nil {
			return tr, err
		}
		for _, app := range Population(n, rng) {
			tr.Apps = append(tr.Apps, renewal(app.Rate, app.CV, duration, rng))
		}
		return tr, nil
	}
	return tr, fmt.Errorf("arrivals %q: want poisson:RATE, gamma:RATE,cv=X, periodic:DUR, diurnal:PEAK, onoff:RATE,on=DUR,off=DUR or population:N", spec)
}

// renewal draws a renewal process's arrivals over [0, duration): gamma
// inter-arrival times of mean 1/rate and coefficient of variation cv (1 =
// Poisson). The first comes after a uniform fraction of a gap, so that
// time 0 is not an arrival.
func renewal(rate, cv, duration float64, rng *rand.Rand) []float64 {
	k := 1 / (cv * cv)
	g := distuv.Gamma{Alpha: k, Beta: k * rate, Src: rng}
	var a []float64
	t := g.Rand() * rng.Float64()
	for t < duration {
		a = append(a, t)
		t += g.Rand()
	}
	return a
}
