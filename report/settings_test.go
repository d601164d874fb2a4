package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/coldstart-go/coldstart/record"
)

// settingsOf renders the Settings worth setting section alone.
func settingsOf(t *testing.T, r *Report) string {
	t.Helper()
	var b bytes.Buffer
	m := &mdw{w: &b}
	r.settingsSection(m)
	if m.err != nil {
		t.Fatal(m.err)
	}
	return b.String()
}

// Recorded files (a cold-start sweep of GOGC on the slowinit test server,
// a density and a steady run of GOMEMLIMIT under mem=32Mi on the sample)
// give the section: GOGC=200 and GOGC=off lower slowinit's startup CPU
// (significant, more than 5%) and are worth setting, with their cold
// start beside it; GOGC=50 and GOMEMLIMIT get one "no effect detected"
// line each, naming the figures looked at and their files.
func TestSettingsSection(t *testing.T) {
	r := load(t, "testdata/settings")
	if len(r.Warnings) != 0 {
		t.Errorf("warnings: %v", r.Warnings)
	}
	got := settingsOf(t, r)
	for _, want := range []string{
		"**Worth setting**: `GOGC=200` on slowinit at max (startup CPU lower, 0.807×",
		"| `GOGC=off` on slowinit | max | startup CPU | 11.9 ms | 10.2 ms | 0.850× [0.767, 0.918] | <0.001 | **lower** |",
		"| `GOGC=off` on slowinit | max | cold start (first RPC) |",
		"- `GOGC=50` on slowinit at max: no effect detected on cold start (first RPC), startup CPU (`20261202-041808_coldstart`).",
		"- `GOMEMLIMIT=26MiB` on default at mem=32Mi: no effect detected on idle PSS, calls/s, p50, p99, CPU per call, PSS under load (grpc throughput 8B c32; `20261202-041746_density`, `20261202-041748_steady`).",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("section lacks %q", want)
		}
	}
	if strings.Contains(got, "- `GOGC=200` on slowinit") || strings.Contains(got, "- `GOGC=off` on slowinit") {
		t.Errorf("a lever worth setting also listed as without effect:\n%s", got)
	}
	golden(t, []byte(got))

	var md, html bytes.Buffer
	if err := r.Markdown(&md, MarkdownOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "## Settings worth setting\n\n**Worth setting**") {
		t.Error("the Markdown report lacks the section")
	}
	if err := r.HTML(&html, HTMLOptions{NoPlots: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(html.String(), "Settings worth setting</h2>") || !strings.Contains(html.String(), "<strong>Worth setting</strong>") {
		t.Error("the HTML report lacks the section")
	}
}

// Files without variants get no section.
func TestSettingsAbsent(t *testing.T) {
	if got := settingsOf(t, load(t, "testdata")); got != "" {
		t.Errorf("section without variants:\n%s", got)
	}
}

// settingsCampaign is a synthetic campaign of the sample's default arm and
// four variants, cold start under two budgets and steady rounds under one:
// fast is 20% faster to start at cores=1 and as fast at max; same is the
// arm; slow is 20% slower to start everywhere; small is 2% faster, every
// round (significant, under 5%); pool serves 30% more calls/s at 8
// connections, at 20% more CPU per call, and as many at 1.
func settingsCampaign() *Campaign {
	base := []float64{10.2, 9.8, 10.5, 10.1, 9.9, 10.7, 10.3, 10.0, 9.7, 10.4, 10.6, 9.6}
	jitter := []float64{1.01, 0.99, 1.02, 0.98, 1.0, 1.01, 0.99, 1.02, 0.98, 1.0, 1.01, 0.99}
	c := &Campaign{Label: "synthetic"}
	vars := map[string]record.Variant{
		"default.fast":  {Of: "default", Env: []string{"GOGC=200"}},
		"default.same":  {Of: "default", Env: []string{"GOGC=100"}},
		"default.slow":  {Of: "default", Env: []string{"GOGC=off"}},
		"default.small": {Of: "default", Env: []string{"GOMAXPROCS=1"}},
		"default.pool":  {Of: "default", Args: []string{"--num-stream-workers=2"}},
	}
	c.Artifacts = []Artifact{{Arm: "default"}}
	for _, a := range []string{"default.fast", "default.same", "default.slow", "default.small", "default.pool"} {
		c.Artifacts = append(c.Artifacts, Artifact{Arm: a, Variant: vars[a]})
	}
	factor := map[[2]string]float64{
		{"default.fast", "cores=1"}: 0.8, {"default.fast", "max"}: 1,
		{"default.same", "cores=1"}: 1, {"default.same", "max"}: 1,
		{"default.slow", "cores=1"}: 1.2, {"default.slow", "max"}: 1.2,
		{"default.small", "cores=1"}: 0.98, {"default.small", "max"}: 0.98,
	}
	for _, b := range []string{"cores=1", "max"} {
		for i, x := range base {
			c.Samples = append(c.Samples, Sample{Arm: "default", Budget: b, Run: i + 1, FirstRPCMs: x})
			for _, a := range []string{"default.fast", "default.same", "default.slow", "default.small"} {
				j := jitter[(i+len(a))%len(jitter)]
				if a == "default.small" {
					j = 1 // every round, exactly 2%
				}
				c.Samples = append(c.Samples, Sample{Arm: a, Budget: b, Run: i + 1, FirstRPCMs: x * factor[[2]string{a, b}] * j})
			}
		}
	}
	c.fillSummaries()
	for _, conns := range []int{1, 8} {
		for i, x := range base {
			row := func(arm string, calls float64) SteadyRound {
				return SteadyRound{Round: i + 1, SteadyRow: SteadyRow{Arm: arm, Budget: "cores=1", Protocol: "grpc", Scenario: "throughput",
					PayloadBytes: 8, Concurrency: 32, Conns: conns, Depth: 32 / conns, CallsPerS: calls, P50Us: 1e6 / calls, P99Us: 4e6 / calls,
					ServerCPUUsPerCall: ptrF(40), Round: i + 1, Variant: vars[arm]}}
			}
			gain := 1.0
			if conns == 8 {
				gain = 1.3
			}
			pool := row("default.pool", 1000*x*gain*jitter[i])
			if conns == 8 {
				pool.ServerCPUUsPerCall = ptrF(40 * 1.2 * jitter[(i+3)%len(jitter)]) // the pool's cost
			}
			c.SteadyRounds = append(c.SteadyRounds, row("default", 1000*x), pool)
		}
	}
	return c
}

// The split: a lever is worth setting under a budget only where an
// improvement is significant and at least --min-effect; a worsening as
// large is a cost, not an absence of effect; the rest, a significant 2%
// included, are one "no effect detected" line per lever naming its
// budgets and the figures looked at.
func TestSettingsSplit(t *testing.T) {
	r := &Report{Campaigns: []*Campaign{settingsCampaign()}}
	got := settingsOf(t, r)
	for _, want := range []string{
		"**Worth setting**: `GOGC=200` on default at cores=1 (cold start (first RPC) faster, 0.8",
		"`--num-stream-workers=2` on default at cores=1 (calls/s (grpc throughput 8B c32 conns8) faster, 1.300× [1.287, 1.313]; 2 more in the table; at a cost: CPU per call higher)",
		"| `--num-stream-workers=2` on default | cores=1 | p99 (grpc throughput 8B c32 conns8) |",
		"| `--num-stream-workers=2` on default | cores=1 | calls/s (grpc throughput 8B c32) |",
		"- `GOGC=off` on default at cores=1: cold start (first RPC) slower, 1.2",
		"- `GOGC=off` on default at max: cold start (first RPC) slower, 1.2",
		"- `GOGC=200` on default at max: no effect detected on cold start (first RPC) (`synthetic`).",
		"- `GOGC=100` on default at cores=1, max: no effect detected on cold start (first RPC) (`synthetic`).",
		"- `GOMAXPROCS=1` on default at cores=1, max: no effect detected on cold start (first RPC) (`synthetic`); significant but under 5%: cold start (first RPC) at cores=1 0.980×",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("section lacks %q", want)
		}
	}
	for _, bad := range []string{"- `GOGC=200` on default at cores=1", "- `GOGC=off` on default at cores=1, max: no effect", "| `GOGC=off`", "| `GOMAXPROCS=1`"} {
		if strings.Contains(got, bad) {
			t.Errorf("section holds %q:\n%s", bad, got)
		}
	}
	if t.Failed() {
		t.Logf("section:\n%s", got)
	}

	// At 90% confidence, the 16 comparisons would hold about 2 significant
	// by chance: the section says so.
	r = &Report{Campaigns: []*Campaign{settingsCampaign()}, Confidence: 0.9}
	if got := settingsOf(t, r); !strings.Contains(got, "These are 16 comparisons: at p < 0.10 about 2 of them would come out significant by chance alone") {
		t.Errorf("at 90%%, no word of chance:\n%s", got)
	}

	// A minimum effect of 40% leaves nothing worth setting, and no cost.
	r = &Report{Campaigns: []*Campaign{settingsCampaign()}, MinEffect: 0.4}
	got = settingsOf(t, r)
	for _, want := range []string{
		"**None of the 5 lever(s) measured is worth setting** under any budget: no improvement was both significant and at least 40% in size.",
		"- `GOGC=200` on default at cores=1, max: no effect detected",
		"- `--num-stream-workers=2` on default at cores=1: no effect detected on calls/s, p50, p99, CPU per call (grpc throughput 8B c32; grpc throughput 8B c32 conns8; `synthetic`); significant but under 40%",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("at --min-effect 0.4, section lacks %q\n%s", want, got)
		}
	}
	if strings.Contains(got, "|") {
		t.Errorf("at --min-effect 0.4, a table:\n%s", got)
	}
}

func ptrF(v float64) *float64 { return &v }

// controlCampaign is settingsCampaign with default.same marked a control
// (--variant NAME:control); with drift, the control starts 20% faster
// than its arm at cores=1, as the same start under another name does when
// the host's noise is not the arms' alike.
func controlCampaign(drift bool) *Campaign {
	c := settingsCampaign()
	for i := range c.Artifacts {
		if c.Artifacts[i].Arm == "default.same" {
			c.Artifacts[i].Variant.Control = true
		}
	}
	if drift {
		for i := range c.Samples {
			if s := &c.Samples[i]; s.Arm == "default.same" && s.Budget == "cores=1" {
				s.FirstRPCMs *= 0.8
			}
		}
	}
	c.Summaries = nil
	c.fillSummaries()
	return c
}

// A control is no lever: it is said to have come out as its arm, or, where
// it did not, it is said so, and the levers on the same arm under the same
// budget in the same file are marked †, the others not.
func TestSettingsControls(t *testing.T) {
	got := settingsOf(t, &Report{Campaigns: []*Campaign{controlCampaign(false)}})
	for _, want := range []string{
		"**Controls**",
		"- `default.same` against default: no difference detected on any of its 2 figure(s), as it must (`synthetic`).",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("section lacks %q:\n%s", want, got)
		}
	}
	for _, bad := range []string{"`GOGC=100` on default", "†"} {
		if strings.Contains(got, bad) {
			t.Errorf("section holds %q:\n%s", bad, got)
		}
	}

	got = settingsOf(t, &Report{Campaigns: []*Campaign{controlCampaign(true)}})
	for _, want := range []string{
		"- **`default.same` differed from default**, the same start under another name, on 1 of its 2 figure(s): cold start (first RPC) at cores=1 faster, 0.8",
		"(first RPC) faster, 0.8", // GOGC=200 at cores=1, worth setting, marked:
		") †; `--num-stream-workers=2` on default at cores=1",
		"| `GOGC=200` on default | cores=1 | cold start (first RPC) |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("with a drifting control, section lacks %q:\n%s", want, got)
		}
	}
	for _, line := range strings.Split(got, "\n") {
		marked := strings.HasSuffix(strings.TrimSpace(strings.SplitN(line, "| 12+12 |", 2)[0]), "†")
		if strings.HasPrefix(line, "| `GOGC=200` on default | cores=1 | cold start") && !marked {
			t.Errorf("a lever's row in the control's budget is not marked: %s", line)
		}
		if strings.HasPrefix(line, "| `--num-stream-workers=2`") && marked {
			t.Errorf("a lever's row the control did not measure is marked: %s", line)
		}
	}
}
