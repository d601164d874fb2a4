package campaign

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/coldstart-go/coldstart/record"
)

// PollInterval is a platform's readiness-poll period.
type PollInterval struct {
	// Name is the preset's name, or the interval as given ("25ms").
	Name     string
	Interval time.Duration
}

// PollPreset is a named platform poll interval and where the figure comes from.
type PollPreset struct {
	PollInterval
	Source string
}

// PollPresets are the common platforms' readiness-poll intervals, each with
// its source.
var PollPresets = []PollPreset{
	{PollInterval{"knative-queue-proxy", 50 * time.Millisecond},
		"knative.dev/serving v0.42.2 pkg/queue/readiness/probe.go: retryInterval, the queue-proxy's aggressive readiness probe when periodSeconds is 0 (Knative's default)"},
	{PollInterval{"knative-queue-proxy-legacy", 25 * time.Millisecond},
		"earlier knative.dev/serving cmd/queue/main.go: aggressivePollInterval"},
	{PollInterval{"knative-activator", 200 * time.Millisecond},
		"knative.dev/serving v0.42.2 pkg/activator/net/revision_backends.go: defaultProbeFrequency, the activator probing pod IPs"},
	{PollInterval{"kubelet", 10 * time.Second},
		"k8s.io/api v0.29.2 core/v1 Probe.PeriodSeconds: \"Default to 10 seconds\""},
	{PollInterval{"kubelet-min", time.Second},
		"k8s.io/api v0.29.2 core/v1 Probe.PeriodSeconds: \"Minimum value is 1\""},
}

// ParsePollIntervals parses a comma-separated list of durations ("25ms")
// and preset names ("knative-activator").
func ParsePollIntervals(s string) ([]PollInterval, error) {
	var out []PollInterval
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if p, ok := pollPreset(f); ok {
			out = append(out, p.PollInterval)
			continue
		}
		d, err := time.ParseDuration(f)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("unknown poll interval %q (a positive duration such as 25ms, or a preset: %s)", f, presetNames())
		}
		out = append(out, PollInterval{Name: f, Interval: d})
	}
	return out, nil
}

func pollPreset(name string) (PollPreset, bool) {
	for _, p := range PollPresets {
		if p.Name == name {
			return p, true
		}
	}
	return PollPreset{}, false
}

func presetNames() string {
	n := make([]string, len(PollPresets))
	for i, p := range PollPresets {
		n[i] = p.Name
	}
	return strings.Join(n, ", ")
}

// Poll is what a polling platform would have seen (record.Poll).
type Poll = record.Poll

// PollSeen applies a platform's rule to one cold start: polls start at
// k·interval from spawn (k = 0, 1, ...); a poll succeeds if it starts once
// the server is ready, and is seen when it ends, pollMs later. readyMs is
// when the prober's successful RPC started (the server was ready by then;
// at most one attempt and its 200 µs gap earlier).
func PollSeen(readyMs, pollMs float64, interval time.Duration) float64 {
	iv := float64(interval) / float64(time.Millisecond)
	k := math.Ceil(readyMs / iv)
	return k*iv + pollMs
}

// Polled summarizes the samples for each interval (nil when there are none).
func Polled(ss []record.Sample, ivs []PollInterval) []Poll {
	var out []Poll
	for _, iv := range ivs {
		var poll, trueMs, seen, delay, share []float64
		for _, s := range ss {
			if s.Error != "" || s.Warmup || s.ReadyAttemptMs <= 0 {
				continue
			}
			d := s.FirstRPCMs - s.ReadyAttemptMs
			sn := PollSeen(s.ReadyAttemptMs, d, iv.Interval)
			poll = append(poll, d)
			trueMs = append(trueMs, s.FirstRPCMs)
			seen = append(seen, sn)
			delay = append(delay, sn-s.FirstRPCMs)
			share = append(share, 100*(sn-s.FirstRPCMs)/sn)
		}
		p := Poll{Name: iv.Name, IntervalMs: float64(iv.Interval) / float64(time.Millisecond)}
		if len(seen) > 0 {
			p.PollMs = record.Quantiles(poll, 0.5)[0]
			p.TrueMs = record.Quantiles(trueMs, 0.5)[0]
			p.SeenMs = record.Quantiles(seen, 0.5)[0]
			p.DelayMs = record.Quantiles(delay, 0.5)[0]
			p.SharePct = record.Quantiles(share, 0.5)[0]
		}
		out = append(out, p)
	}
	return out
}

// PollRow is one arm, budget and platform interval (record.PollRow).
type PollRow = record.PollRow

// PollRows flattens the summaries' polls into rows (record.PollRows).
func PollRows(sums []Summary) []PollRow { return record.PollRows(sums) }
