package cost

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// Hybrid is the hybrid histogram policy of "Serverless in the Wild"
// (Shahrad et al., USENIX ATC 2020), as this package reads the paper:
//
//   - per app, a histogram of idle times (from the end of the app's last
//     request to the next arrival) in Bin-wide bins over Range (1-minute
//     bins over 4 h);
//   - when the app goes idle, the pre-warm window is the Head percentile's
//     bin's lower edge and the keep-alive window reaches to the Tail
//     percentile's bin's upper edge, the first shortened and the second
//     lengthened by Margin (5th and 99th percentiles, 10%);
//   - with a pre-warm window, the instances are removed as the app goes
//     idle, one is started when the window ends and kept for the
//     keep-alive window; without one, the instances are kept for the
//     keep-alive window;
//   - the histogram is representative when it holds at least MinSamples
//     idle times, no more of them beyond Range than the Tail percentile
//     leaves out, and its bin counts have a coefficient of variation of at
//     least CV (2); until then, and whenever it is not, the policy falls
//     back to a fixed keep-alive of Fallback (the range, 4 h).
//
// Not modelled: the paper's ARIMA forecast for apps whose idle times
// mostly lie beyond the range (they get the fallback here).
type Hybrid struct {
	Range, Bin time.Duration
	Head, Tail float64 // percentiles, 0..100
	Margin     float64 // fraction, 0.1 = 10%
	MinSamples int
	CV         float64
	Fallback   time.Duration
}

// NewHybrid is the paper's settings as read above.
func NewHybrid() Hybrid {
	return Hybrid{Range: 4 * time.Hour, Bin: time.Minute, Head: 5, Tail: 99, Margin: 0.1, MinSamples: 10, CV: 2, Fallback: 4 * time.Hour}
}

var hybridKeys = []string{"range", "bin", "head", "tail", "margin", "min", "cv", "fallback"}

func parseHybrid(args string) (Policy, error) {
	kvs, err := keyValues("hybrid", args, hybridKeys)
	if err != nil {
		return nil, err
	}
	h := NewHybrid()
	fallbackSet := false
	for _, kv := range kvs {
		key, v := kv[0], kv[1]
		switch key {
		case "range", "bin", "fallback":
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return nil, fmt.Errorf("hybrid: %s=%s: want a positive duration", key, v)
			}
			*map[string]*time.Duration{"range": &h.Range, "bin": &h.Bin, "fallback": &h.Fallback}[key] = d
			fallbackSet = fallbackSet || key == "fallback"
		case "min":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("hybrid: min=%s: want at least 1 idle time", v)
			}
			h.MinSamples = n
		default:
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f < 0 {
				return nil, fmt.Errorf("hybrid: %s=%s: want a number, at least 0", key, v)
			}
			*map[string]*float64{"head": &h.Head, "tail": &h.Tail, "margin": &h.Margin, "cv": &h.CV}[key] = f
		}
	}
	if !fallbackSet {
		h.Fallback = h.Range
	}
	switch {
	case h.Bin > h.Range:
		return nil, fmt.Errorf("hybrid: bin=%s is wider than range=%s", durText(h.Bin), durText(h.Range))
	case !(h.Head < h.Tail && h.Tail <= 100):
		return nil, fmt.Errorf("hybrid: head=%g, tail=%g: want head < tail <= 100", h.Head, h.Tail)
	case h.Margin >= 1:
		return nil, fmt.Errorf("hybrid: margin=%g: want a fraction below 1", h.Margin)
	}
	return h, nil
}

func (h Hybrid) String() string {
	return fmt.Sprintf("hybrid:range=%s,bin=%s,head=%g,tail=%g,margin=%g,min=%d,cv=%g,fallback=%s",
		durText(h.Range), durText(h.Bin), h.Head, h.Tail, h.Margin, h.MinSamples, h.CV, durText(h.Fallback))
}

func (h Hybrid) Short() string { return short(h.String(), NewHybrid().String()) }

func (h Hybrid) new() policy {
	return &hyState{h: h, bins: make([]int, int(math.Ceil(h.Range.Seconds()/h.Bin.Seconds())))}
}

type hyState struct {
	h    Hybrid
	bins []int
	in   int // idle times in the bins
	oob  int // idle times beyond the range
	// any: a request was served; lastEnd: when the app's last request ends.
	any     bool
	lastEnd float64
	// The plan for the idle period that began at lastEnd.
	planned       bool
	prewarm, keep float64
	phase         int // 0 planned, 1 unloaded, 2 pre-warmed, 3 done
}

func (st *hyState) begin(*sim) {}

// Windows returns the pre-warm and keep-alive windows, seconds, the
// histogram gives now, and whether it was representative.
func (st *hyState) windows() (prewarm, keep float64, ok bool) {
	h := st.h
	n := st.in + st.oob
	if st.in < h.MinSamples || float64(st.oob) > float64(n)*(100-h.Tail)/100 {
		return 0, h.Fallback.Seconds(), false
	}
	mean := float64(st.in) / float64(len(st.bins))
	var ss float64
	for _, c := range st.bins {
		ss += (float64(c) - mean) * (float64(c) - mean)
	}
	if math.Sqrt(ss/float64(len(st.bins)))/mean < h.CV {
		return 0, h.Fallback.Seconds(), false
	}
	bin := h.Bin.Seconds()
	head := st.binAt(h.Head, n) * bin
	tail := (st.binAt(h.Tail, n) + 1) * bin
	prewarm = head * (1 - h.Margin)
	keep = tail*(1+h.Margin) - prewarm
	return prewarm, keep, true
}

// binAt is the index of the bin holding the p-th percentile (nearest
// rank) of the n idle times, those beyond the range ranked last.
func (st *hyState) binAt(p float64, n int) float64 {
	rank := max(1, int(math.Ceil(p/100*float64(n))))
	c := 0
	for i, k := range st.bins {
		c += k
		if c >= rank {
			return float64(i)
		}
	}
	return float64(len(st.bins) - 1)
}

func (st *hyState) advance(s *sim, t float64) {
	if !st.any || t < st.lastEnd {
		return
	}
	if !st.planned {
		st.prewarm, st.keep, _ = st.windows()
		st.planned, st.phase = true, 0
	}
	idle := st.lastEnd
	removeAll := func(at float64) {
		for len(s.insts) > 0 {
			s.remove(s.insts[0], at)
		}
	}
	if st.prewarm == 0 {
		if st.phase == 0 && idle+st.keep <= t {
			removeAll(idle + st.keep)
			st.phase = 3
		}
		return
	}
	if st.phase == 0 {
		removeAll(idle)
		st.phase = 1
	}
	if st.phase == 1 && idle+st.prewarm <= t {
		s.startInstance(idle + st.prewarm)
		st.phase = 2
	}
	if st.phase == 2 && idle+st.prewarm+st.keep <= t {
		removeAll(idle + st.prewarm + st.keep)
		st.phase = 3
	}
}

func (st *hyState) served(s *sim, t float64, in *instance, wait, start, end float64) {
	if st.any && t >= st.lastEnd {
		if it := t - st.lastEnd; it < st.h.Range.Seconds() {
			st.bins[int(it/st.h.Bin.Seconds())]++
			st.in++
		} else {
			st.oob++
		}
	}
	st.any = true
	st.lastEnd = math.Max(st.lastEnd, end)
	st.planned = false
}
