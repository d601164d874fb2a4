package explain

import (
	"testing"

	"github.com/coldstart-go/coldstart/internal/stats"
	"github.com/coldstart-go/coldstart/record"
)

// explainTraces are n counted traced starts of arm, the first RPC at ms
// plus a little spread (no ties), with one init each.
func explainTraces(arm string, n int, ms float64) []record.Trace {
	var ts []record.Trace
	for i := 0; i < n; i++ {
		ts = append(ts, record.Trace{Arm: arm, Budget: "max", Run: i + 1, FirstRPCMs: ms + float64(i)/10,
			Phases: []record.Phase{{Name: record.PhaseAccepting, Ms: ms/2 + float64(i)/10}},
			Inits:  []record.PackageInit{{Package: "example.com/a", ClockMs: 1 + float64(i)/100}}})
	}
	return append(ts, record.Trace{Arm: arm, Budget: "max", Warmup: true, FirstRPCMs: 1000 * ms})
}

// TestAnalyzeVsBaseline: each phase row's first RPC against the
// baseline arm's. Ten times slower over eight runs each is slower beyond
// doubt; the same runs are no different; the baseline is default when
// traced (not the first arm), and the arms-against section uses it too.
func TestAnalyzeVsBaseline(t *testing.T) {
	var ts []record.Trace
	ts = append(ts, explainTraces("static", 8, 10)...)
	ts = append(ts, explainTraces("default", 8, 10)...)
	ts = append(ts, explainTraces("upx", 8, 100)...)
	r := Analyze(ts, Options{Arms: []string{"static", "default", "upx"}})
	got := map[string]record.VsBaseline{}
	for _, p := range r.Phases {
		got[p.Arm] = p.VsBaseline
	}
	if v := got["default"]; v.Verdict != record.VerdictBaseline {
		t.Errorf("default's own row: %+v, want verdict baseline", v)
	}
	upx := got["upx"]
	if upx.Verdict != string(stats.Slower) || upx.Baseline != "default" || upx.Ratio == nil || *upx.Ratio < 9 || *upx.Ratio > 11 {
		t.Errorf("upx (10× the first RPC): %+v, want slower than default, ratio near 10", upx)
	}
	if upx.P == nil || *upx.P > 2.0/256+1e-9 || upx.Test != stats.PairedWilcoxon {
		t.Errorf("upx: p = %v by %s, want 2/2^8 by %s (8 rounds, each slower)", upx.P, upx.Test, stats.PairedWilcoxon)
	}
	if upx.CILow == nil || upx.CIHigh == nil {
		t.Errorf("upx: no interval with 8 runs each: %+v", upx)
	}
	if v := got["static"]; v.Verdict != string(stats.NoDifference) || v.Ratio == nil || *v.Ratio != 1 {
		t.Errorf("static (the same runs as default): %+v, want no difference detected, ratio 1", v)
	}
	for _, c := range r.Compare {
		if c.Base != "default" || c.Arm == "default" {
			t.Errorf("compare row %s %s against %s, want every other arm against default", c.What, c.Arm, c.Base)
		}
	}
	if len(r.Compare) == 0 {
		t.Error("no arms-against rows")
	}

	// --baseline upx: default is now the faster one.
	r = Analyze(ts, Options{Arms: []string{"static", "default", "upx"}, Baseline: "upx"})
	for _, p := range r.Phases {
		if p.Arm == "default" && (p.Verdict != string(stats.Faster) || p.Baseline != "upx") {
			t.Errorf("default against upx: %+v, want faster", p.VsBaseline)
		}
	}
}

func TestModuleOf(t *testing.T) {
	m := record.Modules{Main: "example.com/app", Deps: map[string]string{
		"google.golang.org/grpc": "v1.85.0", "google.golang.org/grpc/security/advancedtls": "v1.0.0",
		"golang.org/x/net": "v0.40.0",
	}}
	tests := map[string]string{
		"example.com/app":                               "example.com/app",
		"example.com/app/internal/x":                    "example.com/app",
		"example.com/application":                       UnattributedModule,
		"google.golang.org/grpc/health":                 "google.golang.org/grpc",
		"google.golang.org/grpc/security/advancedtls/x": "google.golang.org/grpc/security/advancedtls",
		"golang.org/x/net/http2":                        "golang.org/x/net",
		"net/http":                                      record.StdModule,
		"vendor/golang.org/x/net/http2/hpack":           record.StdModule,
		"main":                                          UnattributedModule,
	}
	for pkg, want := range tests {
		if got := moduleOf(m, pkg); got != want {
			t.Errorf("moduleOf(%q) = %q, want %q", pkg, got, want)
		}
	}
	if got := moduleOf(record.Modules{}, "net/http"); got != record.StdModule {
		t.Errorf("without build info, moduleOf(net/http) = %q, want %q", got, record.StdModule)
	}
	if got := moduleOf(record.Modules{}, "github.com/x/y"); got != UnattributedModule {
		t.Errorf("without build info, moduleOf(github.com/x/y) = %q, want %q", got, UnattributedModule)
	}
}

// TestAnalyzePairsByRound: runs that share a round share its noise (here
// each round's start is slower by a factor that differs round to round,
// 1× to 2.6×); the upx arm is 3% slower than default in every round. By
// the rounds, that is found; unpaired, the rounds' spread would hide it.
// Both the phase row and the arms-against rows say which test they used.
func TestAnalyzePairsByRound(t *testing.T) {
	var ts []record.Trace
	for i := 0; i < 12; i++ {
		noise := 1 + 0.15*float64(i)
		for _, a := range []struct {
			arm    string
			factor float64
		}{{"default", 1}, {"upx", 1.03}} {
			ms := 10 * noise * a.factor
			ts = append(ts, record.Trace{Arm: a.arm, Budget: "max", Run: i + 1, FirstRPCMs: ms,
				Phases: []record.Phase{{Name: record.PhaseAccepting, Ms: ms / 2}},
				Inits:  []record.PackageInit{{Package: "example.com/a", ClockMs: ms / 10}}})
		}
	}
	r := Analyze(ts, Options{Arms: []string{"default", "upx"}})
	for _, p := range r.Phases {
		if p.Arm != "upx" {
			continue
		}
		if p.Verdict != string(stats.Slower) || p.Test != stats.PairedWilcoxon {
			t.Errorf("upx's phase row: %+v, want slower by the paired test", p.VsBaseline)
		}
	}
	if len(r.Compare) == 0 {
		t.Fatal("no arms-against rows")
	}
	for _, c := range r.Compare {
		if c.Test != stats.PairedWilcoxon || c.Verdict != "upx "+string(stats.Slower) {
			t.Errorf("compare %s: test %s, verdict %q: want upx slower by %s", c.What, c.Test, c.Verdict, stats.PairedWilcoxon)
		}
	}

	// Rounds that do not pair (upx's runs numbered apart from default's)
	// are compared unpaired, and said so.
	for i := range ts {
		if ts[i].Arm == "upx" {
			ts[i].Run += 100
		}
	}
	for _, c := range Analyze(ts, Options{Arms: []string{"default", "upx"}}).Compare {
		if c.Test != stats.MannWhitney {
			t.Errorf("compare %s unpaired: test %s, want %s", c.What, c.Test, stats.MannWhitney)
		}
	}
}
