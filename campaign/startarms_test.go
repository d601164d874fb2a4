package campaign

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/coldstart-go/coldstart/internal/require"
	"github.com/coldstart-go/coldstart/launch"
	"github.com/coldstart-go/coldstart/prober"
)

func TestSplitStartArms(t *testing.T) {
	for _, tt := range []struct {
		name  string
		arms  []string
		build []string
		start []string
		hide  bool
		base  string
	}{
		{"none", []string{"default", "upx"}, []string{"default", "upx"}, nil, false, "default"},
		{"base listed", []string{"default", "snapshot"}, []string{"default"}, []string{"snapshot"}, false, "default"},
		{"base added", []string{"static", "prebound", "snapshot"}, []string{"static", "default"}, []string{"prebound", "snapshot"}, true, "default"},
		{"other base", []string{"prebound"}, []string{"static"}, []string{"prebound"}, true, "static"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b, s, h := SplitStartArms(tt.arms, tt.base)
			if diff := cmp.Diff([]any{tt.build, tt.start, tt.hide}, []any{b, s, h}); diff != "" {
				t.Errorf("SplitStartArms(%q, %q) (-want +got):\n%s", tt.arms, tt.base, diff)
			}
		})
	}
}

// snapshotTestConfig skips when the snapshot arm cannot run here.
func snapshotTestConfig(t *testing.T) *launch.Snapshot {
	t.Helper()
	if os.Geteuid() != 0 {
		require.Skipf(t, require.Root, "the snapshot arm needs root")
	}
	sn := &launch.Snapshot{WorkDir: t.TempDir(), Warmup: 3}
	if err := sn.Check(context.Background()); err != nil {
		require.Skipf(t, require.CRIU, "criu: %v", err)
	}
	return sn
}

func tmpfsMounts(t *testing.T, under string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), " "+under+"/")
}

func processesOf(bin string) int {
	ents, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range ents {
		if exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err == nil && exe == bin {
			n++
		}
	}
	return n
}

// The start arms run in a real campaign beside the arm they start, with
// their own phases and figures, and leave nothing behind: not after a full
// campaign, not after one cancelled in the middle (Ctrl-C).
func TestStartArmsCampaign(t *testing.T) {
	sn := snapshotTestConfig(t)
	base := echoArm(t)
	// A 50 ms start keeps prebound's first connection queued long enough
	// for its watcher to see it on a loaded machine (the phase is absent,
	// not guessed, when the watcher misses it).
	args := base.Args
	base.Args = func(tg prober.Target) ([]string, error) {
		a, err := args(tg)
		return append(a, "--start-delay", "50ms"), err
	}
	for _, cancelAfter := range []int{0, 3} {
		name := "complete"
		if cancelAfter > 0 {
			name = "interrupted"
		}
		t.Run(name, func(t *testing.T) {
			before := processesOf(base.Path)
			b := Built{Arms: []Arm{base}}
			var recs []string
			err := AddStartArms(context.Background(), &b, []string{PreboundArm, SnapshotArm}, StartConfig{
				Snapshot: sn, Transport: TCP, Checker: prober.Health{},
				Record: func(kind string, v any) error { recs = append(recs, kind); return nil },
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(b.Failed) > 0 {
				t.Fatalf("start arms failed: %v", b.Err())
			}
			if diff := cmp.Diff([]string{"default", "prebound", "snapshot"}, armNames(b.Arms)); diff != "" {
				t.Fatalf("arms (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"checkpoint"}, recs); diff != "" {
				t.Errorf("records (-want +got):\n%s", diff)
			}
			if got := tmpfsMounts(t, sn.WorkDir); got != 1 {
				t.Errorf("checkpoint mounts = %d, want 1", got)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var samples []prober.Sample
			c := ColdStart{Arms: b.Arms, Runs: 2, Transport: TCP, Wait: prober.WaitOptions{Timeout: 20 * time.Second}}
			sums, err := c.Run(ctx, func(s prober.Sample) error {
				samples = append(samples, s)
				if cancelAfter > 0 && len(samples) == cancelAfter {
					cancel()
				}
				return nil
			})
			if cancelAfter > 0 {
				if !errors.Is(err, context.Canceled) {
					t.Errorf("cancelled campaign: %v, want context.Canceled", err)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				byArm := map[string]Summary{}
				for _, s := range sums {
					byArm[s.Arm] = s
				}
				if s := byArm["prebound"]; s.Runs != 2 || s.PhasesMs[launch.PhaseServerAccepted] <= 0 {
					t.Errorf("prebound summary = %+v, want 2 runs and a server_accepted phase", s)
				}
				if s := byArm["snapshot"]; s.Runs != 2 || s.PhasesMs[launch.PhaseProcessRestored] <= 0 || s.LauncherCPUMs <= 0 {
					t.Errorf("snapshot summary = %+v, want 2 runs, a process_restored phase and criu's CPU", s)
				}
			}
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			if got := processesOf(base.Path) - before; got != 0 {
				t.Errorf("servers left running = %d, want 0", got)
			}
			if got := tmpfsMounts(t, sn.WorkDir); got != 0 {
				t.Errorf("checkpoint mounts left = %d, want 0", got)
			}
			if ents, _ := os.ReadDir(sn.WorkDir); len(ents) != 0 {
				t.Errorf("left in the work dir: %v", ents)
			}
		})
	}
}

func armNames(as []Arm) []string {
	var n []string
	for _, a := range as {
		n = append(n, a.Name)
	}
	return n
}

// Without criu the snapshot arm is reported as not measured, with why, and
// the other start arm is still made.
func TestStartArmsWithoutCRIU(t *testing.T) {
	b := Built{Arms: []Arm{echoArm(t)}}
	err := AddStartArms(context.Background(), &b, []string{SnapshotArm, PreboundArm}, StartConfig{
		Snapshot: &launch.Snapshot{CRIU: filepath.Join(t.TempDir(), "no-criu")}, Transport: TCP, Checker: prober.Health{},
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"default", "prebound"}, armNames(b.Arms)); diff != "" {
		t.Errorf("arms (-want +got):\n%s", diff)
	}
	if err := b.Err(); !errors.Is(err, launch.ErrNoCRIU) || !strings.Contains(err.Error(), "snapshot arm") {
		t.Errorf("Err() = %v, want the snapshot arm's ErrNoCRIU", err)
	}
}
