package inittrace_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coldstart-go/coldstart/campaign"
	"github.com/coldstart-go/coldstart/explain"
	"github.com/coldstart-go/coldstart/explain/inittrace"
	"github.com/coldstart-go/coldstart/internal/testservers"
	"github.com/coldstart-go/coldstart/launch"
	"github.com/coldstart-go/coldstart/prober"
	"github.com/coldstart-go/coldstart/record"
)

func TestMain(m *testing.M) { os.Exit(testservers.Run(m)) }

const slowInit = "internal/testservers/slowinit"

var heavyPkg = testservers.Module + "/" + slowInit + "/heavy"

// run traces arms n times each and analyzes them with each arm's build info.
func run(t *testing.T, n int, arms ...campaign.Arm) ([]record.Trace, explain.Report, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := campaign.ColdStart{Arms: arms, Runs: n, Wait: prober.WaitOptions{Timeout: 20 * time.Second}}
	traces, _, err := inittrace.Campaign(ctx, c, func(record.Trace) error { return nil })
	mods := map[string]record.Modules{}
	var names []string
	for _, a := range arms {
		m, _ := explain.ReadModules(ctx, a.Path)
		mods[a.Name] = m
		names = append(names, a.Name)
	}
	return traces, explain.Analyze(traces, explain.Options{Top: 10, Arms: names, Modules: mods}), err
}

var selfTimed = regexp.MustCompile(`heavy: init took ([0-9.]+) ms`)

// The slow package's init must rank first, with the time it measured
// itself inside the interval explain states (widened by the runtime's
// print resolution), and its one 4 MiB buffer in its bytes.
func TestRanksSlowInitFirst(t *testing.T) {
	bin := testservers.BuildPackage(t, slowInit)
	traces, r, err := run(t, 8, campaign.Arm{Name: "slowinit", Path: bin})
	if err != nil {
		t.Fatal(err)
	}
	var self []float64
	for _, tr := range traces {
		if tr.Warmup {
			continue
		}
		m := selfTimed.FindStringSubmatch(tr.FirstOtherLine)
		if m == nil {
			t.Fatalf("run %d: first stderr line %q, want the heavy package's own timing", tr.Run, tr.FirstOtherLine)
		}
		v, _ := strconv.ParseFloat(m[1], 64)
		self = append(self, v)
	}
	sort.Float64s(self)
	selfMedian := (self[len(self)/2-1] + self[len(self)/2]) / 2

	if len(r.Packages) == 0 {
		t.Fatalf("no packages ranked; notes: %q", r.Notes)
	}
	top := r.Packages[0]
	if top.Package != heavyPkg {
		t.Fatalf("first package %s (%.2f ms), want %s", top.Package, top.MedianMs, heavyPkg)
	}
	if top.Module != testservers.Module {
		t.Errorf("heavy's module = %q, want %q", top.Module, testservers.Module)
	}
	if top.CILoMs == nil || top.CIHiMs == nil {
		t.Fatalf("heavy init: no confidence interval from 8 runs: %+v", top)
	}
	// The init times itself from its first statement to just before its
	// print to stderr; the runtime's clock also holds that print and the
	// return, which a busy machine can stretch by a millisecond or more.
	// So explain's interval may begin up to 10% above the self-timed
	// median, and must not end below it.
	lo, hi := *top.CILoMs-0.1*selfMedian, *top.CIHiMs+top.ResolutionMs
	if selfMedian < lo || selfMedian > hi {
		t.Errorf("heavy init: explain says median %.3f ms, 95%% CI [%.3f, %.3f] + resolution %.3f; the init timed itself at median %.3f ms (runs %v)",
			top.MedianMs, *top.CILoMs, *top.CIHiMs, top.ResolutionMs, selfMedian, self)
	}
	if top.Bytes < 4<<20 || top.Bytes > 4<<20+64<<10 {
		t.Errorf("heavy init allocated %d bytes, want its 4 MiB buffer (4194304) and little else", top.Bytes)
	}
	for _, p := range r.Packages {
		if strings.HasPrefix(p.Package, "google.golang.org/grpc") && p.Module != "google.golang.org/grpc" {
			t.Errorf("%s attributed to %q, want google.golang.org/grpc", p.Package, p.Module)
		}
	}
	if len(r.Phases) != 1 {
		t.Fatalf("phases: %+v, want one row", r.Phases)
	}
	ph := r.Phases[0]
	if ph.TracedRuns != 8 || ph.ExecToRuntimeMs == nil || ph.InitsMs == nil || ph.MainUntilListenMs == nil {
		t.Fatalf("phase row %+v: want 8 traced runs and every slice", ph)
	}
	// The inits phase holds the slow init; each run's phases come in order.
	if *ph.InitsMs < top.MedianMs {
		t.Errorf("inits phase %.2f ms is shorter than its slowest package's init (%.2f ms)", *ph.InitsMs, top.MedianMs)
	}
	for _, tr := range traces {
		r, _ := tr.Phase(record.PhaseRuntimeReady)
		d, _ := tr.Phase(record.PhaseInitsDone)
		a, _ := tr.Phase(record.PhaseAccepting)
		if !(0 < r && r < d && d <= a && a <= tr.FirstRPCMs) {
			t.Errorf("run %d: runtime ready %.3f, inits done %.3f, accepting %.3f, first RPC %.3f ms: want them in that order", tr.Run, r, d, a, tr.FirstRPCMs)
		}
	}
	if *ph.ExecToRuntimeMs <= 0 || *ph.ExecToRuntimeMs > ph.AcceptingMs {
		t.Errorf("exec → runtime %.3f ms, want within (0, accepting %.3f]", *ph.ExecToRuntimeMs, ph.AcceptingMs)
	}
	for _, n := range r.Notes {
		t.Logf("note: %s", n)
	}
}

// The same binary under two names: no difference may be reported for its
// slow package (the paired test at 5%, 8 runs per arm). One A/A campaign
// reports a difference in about 5% of tries by design (more when the
// host's noise comes in bursts), so a difference fails the test only
// when a second campaign reports one too: a bias between the names, such
// as an order effect, repeats; a false positive does so in about 0.25%.
func TestSameBinaryTwoNamesNoDifference(t *testing.T) {
	if testing.Short() {
		t.Skip("16 cold starts, 32 when the first campaign reports a difference")
	}
	bin := testservers.BuildPackage(t, slowInit)
	var found []string
	for try := 1; try <= 2; try++ {
		_, r, err := run(t, 8, campaign.Arm{Name: "a", Path: bin, Env: []string{"SLOWINIT_MS=30"}}, campaign.Arm{Name: "b", Path: bin, Env: []string{"SLOWINIT_MS=30"}})
		if err != nil {
			t.Fatal(err)
		}
		var c *explain.CompareRow
		for i := range r.Compare {
			if r.Compare[i].What == "init "+heavyPkg {
				c = &r.Compare[i]
			}
		}
		if c == nil {
			t.Fatalf("no comparison of the heavy package: %+v", r.Compare)
		}
		if strings.HasPrefix(c.Verdict, "no difference") {
			return
		}
		found = append(found, fmt.Sprintf("campaign %d: %q (p=%.3f, %.2f vs %.2f ms)", try, c.Verdict, c.P, c.BaseMs, c.ArmMs))
		t.Logf("same binary, same init: %s", found[len(found)-1])
	}
	t.Errorf("same binary, same init: a difference in both campaigns:\n%s", strings.Join(found, "\n"))
}

// A slower init in one arm is told apart, with its direction.
func TestComparesArms(t *testing.T) {
	if testing.Short() {
		t.Skip("16 cold starts")
	}
	bin := testservers.BuildPackage(t, slowInit)
	_, r, err := run(t, 8, campaign.Arm{Name: "fast", Path: bin, Env: []string{"SLOWINIT_MS=5"}}, campaign.Arm{Name: "slow", Path: bin, Env: []string{"SLOWINIT_MS=40"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range r.Compare {
		if c.What == "inits" || c.What == "init "+heavyPkg {
			if c.Verdict != "slow slower" || c.P > explain.Alpha {
				t.Errorf("%s: fast %.2f vs slow %.2f ms: verdict %q p=%.4f, want slow slower", c.What, c.BaseMs, c.ArmMs, c.Verdict, c.P)
			}
		}
	}
}

// writeScript writes an executable shell script.
func writeScript(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "server.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func notes(r explain.Report) string { return strings.Join(r.Notes, "\n") }

// Bad input: each case says what it cannot do and why, and keeps the rest.
func TestBadInput(t *testing.T) {
	slow := testservers.BuildPackage(t, slowInit)
	ts := testservers.Build(t)

	t.Run("no build info", func(t *testing.T) {
		// An entrypoint script: the trace comes through, the modules do not.
		_, r, err := run(t, 2, campaign.Arm{Name: "script", Path: writeScript(t, "exec "+slow+` "$@"`)})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(notes(r), "has no Go build info") {
			t.Errorf("notes %q, want one saying the script has no Go build info", r.Notes)
		}
		if len(r.Packages) == 0 || r.Packages[0].Package != heavyPkg || r.Packages[0].Module != explain.UnattributedModule {
			t.Errorf("packages %+v, want heavy first, module %q", r.Packages[:min(1, len(r.Packages))], explain.UnattributedModule)
		}
		if r.Phases[0].InitsMs == nil {
			t.Errorf("phases %+v, want the init phase still split", r.Phases[0])
		}
	})
	t.Run("GODEBUG overridden", func(t *testing.T) {
		_, r, err := run(t, 2, campaign.Arm{Name: "wrapped", Path: writeScript(t, "GODEBUG=madvdontneed=1 exec "+slow+` "$@"`)})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(notes(r), "no init trace lines on stderr in 2 of 2 runs") || !strings.Contains(notes(r), "replaced GODEBUG") {
			t.Errorf("notes %q, want one saying no init trace came because GODEBUG was replaced", r.Notes)
		}
		ph := r.Phases[0]
		if ph.Runs != 2 || ph.FirstRPCMs <= 0 || ph.AcceptingMs <= 0 || ph.InitsMs != nil {
			t.Errorf("phase row %+v, want first RPC and accepting measured, no init split", ph)
		}
	})
	t.Run("server exits", func(t *testing.T) {
		_, r, err := run(t, 2,
			campaign.Arm{Name: "good", Path: slow},
			campaign.Arm{Name: "exits", Path: ts, Args: func(prober.Target) ([]string, error) {
				return []string{"-mode", "exit", "-message", "testserver: cannot start: configuration missing"}, nil
			}})
		if !errors.Is(err, launch.ErrExited) {
			t.Fatalf("err = %v, want server exited", err)
		}
		if strings.Contains(err.Error(), " ms clock") || !strings.Contains(err.Error(), "configuration missing") {
			t.Errorf("error %q: want the server's own message, without the init trace", err)
		}
		if !strings.Contains(notes(r), "exits arm (max): run 0 failed") {
			t.Errorf("notes %q, want the failed run named", r.Notes)
		}
		var good, exits bool
		for _, p := range r.Packages {
			good = good || p.Arm == "good"
			exits = exits || p.Arm == "exits"
		}
		if !good || !exits {
			t.Errorf("packages of good=%v exits=%v, want both: the good arm measured, the exiting one's inits shown", good, exits)
		}
	})
	t.Run("image arm refused", func(t *testing.T) {
		_, _, err := inittrace.Campaign(context.Background(), campaign.ColdStart{Runs: 1, Arms: []campaign.Arm{{Name: "image", Launcher: &launch.Runc{}}}}, nil)
		if err == nil || !strings.Contains(err.Error(), "explain the static arm") {
			t.Errorf("err = %v, want the image arm refused with what to do instead", err)
		}
	})
}

func TestGODEBUG(t *testing.T) {
	t.Setenv("GODEBUG", "")
	tests := []struct {
		env  []string
		want string
	}{
		{nil, "GODEBUG=inittrace=1"},
		{[]string{"A=1"}, "GODEBUG=inittrace=1"},
		{[]string{"GODEBUG=madvdontneed=1"}, "GODEBUG=madvdontneed=1,inittrace=1"},
		{[]string{"GODEBUG=a=1", "GODEBUG=b=2"}, "GODEBUG=b=2,inittrace=1"},
	}
	for _, tt := range tests {
		if got := inittrace.GODEBUG(tt.env); got != tt.want {
			t.Errorf("inittrace.GODEBUG(%q) = %q, want %q", tt.env, got, tt.want)
		}
	}
	t.Setenv("GODEBUG", "gctrace=1")
	if got, want := inittrace.GODEBUG(nil), "GODEBUG=gctrace=1,inittrace=1"; got != want {
		t.Errorf("inittrace.GODEBUG(nil) with ours set = %q, want %q", got, want)
	}
}
