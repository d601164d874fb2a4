package main

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestReplayFlags: replay's flags fill its options with the defaults
// where none is given, and bad input names the flag and what to do.
func TestReplayFlags(t *testing.T) {
	parse := func(args ...string) *replayOptions { return parseFlags(t, "replay", newReplayCmd, args, "") }
	o := parse("--arms", "static", "--arrivals", "gamma:4/min,cv=2")
	if diff := cmp.Diff(defaultReplayPolicies, o.Policies); diff != "" {
		t.Errorf("default policies (-want +got):\n%s", diff)
	}
	if o.Duration != 30*time.Minute || o.Seed != 1 || o.Via != "ingress" || o.NamePrefix != "coldstart-" || o.RequestTimeout != 2*time.Minute || o.ResultsDir != "results" {
		t.Errorf("defaults: %+v", o)
	}
	o = parse("--arms", "upx", "--trace", "t.txt", "--via", "activator", "--target", "10.0.0.1:81", "--policy", "knative:window=20s",
		"--namespace", "bench", "--name-prefix", "x-", "--keep")
	if o.Arm != "upx" || o.Via != "activator" || o.Target != "10.0.0.1:81" || !cmp.Equal(o.Policies, []string{"knative:window=20s"}) ||
		o.Namespace != "bench" || o.NamePrefix != "x-" || !o.Keep {
		t.Errorf("options %+v", o)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--arms", "static"}, "no traffic"},
		{[]string{"--arrivals", "poisson:1/s"}, "--arms: name the arm"},
		{[]string{"--arms", "static,upx", "--arrivals", "poisson:1/s"}, "--arms static,upx: a replay copies one arm's Service"},
		{[]string{"--arms", "static", "--arrivals", "poisson:1/s", "--arrivals", "poisson:2/s"}, "a replay sends one traffic model"},
		{[]string{"--arms", "static", "--arrivals", "poisson:1/s", "--policy", "keepalive:10m"}, "--policy: policy keepalive:10m: a real Knative autoscaler runs knative policies only"},
		{[]string{"--arms", "static", "--arrivals", "poisson:1/s", "--policy", "knative:min=2"}, "min=2 never reaches zero"},
		{[]string{"--arms", "static", "--arrivals", "poisson:1/s", "--policy", "knative:window=2s"}, "stable-window = 2s, must be in [6s; 1h0m0s] range"},
		{[]string{"--arms", "static", "--arrivals", "poisson:1/s", "--via", "activator"}, "--via activator: give the activator's address as --target"},
		{[]string{"--arms", "static", "--arrivals", "poisson:1/s", "--results-dir", ""}, "--results-dir: a replay takes as long as its trace"},
		{[]string{"--arms", "Static", "--arrivals", "poisson:1/s"}, "--arms Static"},
		{[]string{"--arms", "static", "--arrivals", "poisson:1/s", "--request-timeout", "0s"}, "--request-timeout: 0s"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) { parseFlags(t, "replay", newReplayCmd, tt.args, tt.want) })
	}
}
