package main

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestCostFlags: cost's flags fill its options, with the defaults where
// none is given, and usage errors name the flag.
func TestCostFlags(t *testing.T) {
	parse := func(args ...string) *costOptions { return parseFlags(t, "cost", newCostCmd, args, "") }
	o := parse("--arrivals", "poisson:1/s", "r.jsonl")
	var specs []string
	for _, p := range o.policies {
		specs = append(specs, p.Short())
	}
	if diff := cmp.Diff(defaultPolicies, specs); diff != "" {
		t.Errorf("default policies (-want +got):\n%s", diff)
	}
	if o.Seed != 1 || o.Duration != 24*time.Hour || o.Platform != "local" || o.Service != 10*time.Millisecond || o.ResultsDir != "results" || o.constraint != nil {
		t.Errorf("defaults: %+v", o)
	}
	o = parse("--trace", "a.csv", "--arrivals", "onoff:1/s,on=1m,off=1m", "--arrivals", "population:10", "--policy", "keepalive:20m",
		"--policy", "knative:delay=5m", "--seed", "9", "--platform", "knative", "--arms", "static,upx", "--constraint", "p99<=300ms", "-o", "json", "x", "y")
	if diff := cmp.Diff([]string{"x", "y"}, o.Results); diff != "" || len(o.policies) != 2 || o.Seed != 9 || o.constraint.Max != 300 ||
		!cmp.Equal(o.Arms, []string{"static", "upx"}) || len(o.Arrivals) != 2 || o.Output != "json" {
		t.Errorf("options %+v", o)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"r"}, "no traffic"},
		{[]string{"--arrivals", "poisson:fast", "r"}, "--arrivals: poisson:fast: rate \"fast\""},
		{[]string{"--arrivals", "poisson:1/s", "--policy", "knative:window=1s", "r"}, "--policy: knative: Knative rejects it: stable-window = 1s, must be in [6s; 1h0m0s] range"},
		{[]string{"--arrivals", "poisson:1/s", "--policy", "knative:delay=1500ms", "r"}, "scale-down-delay = 1.5s, must be specified with at most second precision"},
		{[]string{"--arrivals", "poisson:1/s", "--constraint", "p99<300ms", "r"}, "--constraint: constraint \"p99<300ms\""},
		{[]string{"--arrivals", "poisson:1/s", "--platform", "lambda", "r"}, "--platform: \"lambda\", want local or knative"},
		{[]string{"--arrivals", "poisson:1/s", "--duration", "0s", "r"}, "--duration: 0s"},
		{[]string{"--arrivals", "poisson:1/s", "--concurrency", "-1", "r"}, "--concurrency: -1"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) { parseFlags(t, "cost", newCostCmd, tt.args, tt.want) })
	}
}
