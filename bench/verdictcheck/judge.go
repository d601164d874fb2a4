package main

import (
	"math"
	"slices"

	"github.com/coldstart-go/coldstart/internal/stats"
	"github.com/coldstart-go/coldstart/record"
)

// judge is one campaign's check of arm a against arm b from their counted
// first-RPC times keyed by round: unpaired, as the check's own fields
// (stats.Compare, Mann–Whitney), and paired by round as coldstart run
// judges its arms (stats.CompareRounds, which record.CompareToBaseline
// uses: the signed-rank test where the rounds pair, else Mann–Whitney).
// Noise, Runs and Stop are the caller's.
func judge(exp string, k int, a, b string, ra, rb stats.Rounds, conf float64) Check {
	xa, xb := ra.Values(), rb.Values()
	u := stats.Compare(xa, xb, conf)
	ch := Check{Experiment: exp, Campaign: k, Metric: "first_rpc_ms", A: a, B: b,
		MedianA: stats.MedianCI(xa, conf).Value, MedianB: stats.MedianCI(xb, conf).Value,
		Ratio: fp(u.Ratio), RatioLow: fp(u.RatioLow), RatioHigh: fp(u.RatioHigh),
		DiffMs: fp(u.Diff), DiffLowMs: fp(u.DiffLow), DiffHighMs: fp(u.DiffHigh),
		PValue: u.P, Verdict: string(u.Verdict(stats.LessIsFaster)), NA: u.NA, NB: u.NB, Test: u.Test}
	p := stats.CompareRounds(ra, rb, conf)
	pa, _, _ := stats.Pair(ra, rb)
	ch.Paired = &record.PairedCheck{Test: p.Test,
		Ratio: fp(p.Ratio), RatioLow: fp(p.RatioLow), RatioHigh: fp(p.RatioHigh),
		DiffMs: fp(p.Diff), DiffLowMs: fp(p.DiffLow), DiffHighMs: fp(p.DiffHigh),
		PValue: p.P, Verdict: string(p.Verdict(stats.LessIsFaster)), Pairs: len(pa)}
	return ch
}

// detected reports whether a verdict found a difference.
func detected(verdict string) bool { return verdict != string(stats.NoDifference) }

// covers reports whether [lo, hi] holds v (false for a missing bound).
func covers(lo, hi *float64, v float64) bool { return lo != nil && hi != nil && *lo <= v && v <= *hi }

// tally counts checks into sum: detections by each test, how many
// intervals of each covered the truth (when known), the runs the campaigns
// took, the load and the busy windows.
func tally(sum *Summary, checks []Check, truthDiff, truthRatio *float64) {
	sum.TruthDiffMs, sum.TruthRatio = truthDiff, truthRatio
	pd, pdc, prc := 0, 0, 0
	var runs []float64
	sum.Load1Min, sum.Load1Max = math.Inf(1), 0
	for _, ch := range checks {
		if detected(ch.Verdict) {
			sum.Detected++
		}
		p := ch.Paired
		if p != nil && detected(p.Verdict) {
			pd++
		}
		if truthDiff != nil {
			if covers(ch.DiffLowMs, ch.DiffHighMs, *truthDiff) {
				sum.DiffCovered++
			}
			if p != nil && covers(p.DiffLowMs, p.DiffHighMs, *truthDiff) {
				pdc++
			}
		}
		if truthRatio != nil {
			if covers(ch.RatioLow, ch.RatioHigh, *truthRatio) {
				sum.RatioCovered++
			}
			if p != nil && covers(p.RatioLow, p.RatioHigh, *truthRatio) {
				prc++
			}
		}
		runs = append(runs, float64(ch.Runs))
		sum.RunsTotal += ch.Runs
		sum.Load1Min, sum.Load1Max = math.Min(sum.Load1Min, ch.Noise.Load1), math.Max(sum.Load1Max, ch.Noise.Load1)
		if ch.Noise.Busy {
			sum.BusyWindows++
		}
	}
	if len(checks) == 0 {
		sum.Load1Min = 0
		return
	}
	n := float64(len(checks))
	sum.DetectedRate = float64(sum.Detected) / n
	sum.PairedDetected, sum.PairedDetectedRate = ip(pd), fp(float64(pd)/n)
	if truthDiff != nil || truthRatio != nil {
		sum.PairedDiffCovered, sum.PairedRatioCovered = ip(pdc), ip(prc)
	}
	sum.RunsMin, sum.RunsMax = int(slices.Min(runs)), int(slices.Max(runs))
	sum.RunsMedian = fp(median(runs))
}
