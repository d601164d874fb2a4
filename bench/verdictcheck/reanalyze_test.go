package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/coldstart-go/coldstart/record"
)

// TestReanalyze: a file of two small campaigns, each opening with its
// warm-up round, where every round is scaled by its own factor shared by
// both arms and "slow" is 5% slower in every round: the campaigns are
// told apart, Mann–Whitney misses the 5% in both, the paired test finds
// it in both.
func TestReanalyze(t *testing.T) {
	factors := []float64{1, 1.6, 0.7, 1.3, 0.8, 1.5, 0.6, 1.2, 0.9, 1.4, 1.1}
	path := filepath.Join(t.TempDir(), "x_verdict-test.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	enc := json.NewEncoder(f)
	for range 2 {
		for run, k := range factors {
			for _, s := range []record.Sample{
				{Arm: "default", Budget: "max", Run: run, Warmup: run == 0, FirstRPCMs: 10 * k * (1 + 0.001*float64(run))},
				{Arm: "slow", Budget: "max", Run: run, Warmup: run == 0, FirstRPCMs: 10.5 * k},
			} {
				row := struct {
					Kind string `json:"kind"`
					record.Sample
				}{"sample", s}
				if err := enc.Encode(row); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	f.Close()
	rs, err := reanalyze(path, 0.95, 20)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 {
		t.Fatalf("reanalyze = %+v, want one comparison (slow against default)", rs)
	}
	r := rs[0]
	if r.A != "slow" || r.B != "default" || r.Campaigns != 2 || r.Unpaired != 0 || r.Paired != 2 || r.PairedSlower != 2 {
		t.Errorf("reanalyze = %+v, want slow against default over 2 campaigns: unpaired 0, paired 2 slower", r)
	}
	if !(r.DetectablePaired < 0.01) || !(r.DetectableUnpaired > 0.2) {
		t.Errorf("detectable at 20 runs: unpaired %v, paired %v; want above 20%% and below 1%%", r.DetectableUnpaired, r.DetectablePaired)
	}

	// At each campaign's own runs (10 counted rounds here, as --runs auto
	// leaves them): the same as asking for 10, and more than at 20.
	own, err := reanalyze(path, 0.95, 0)
	if err != nil {
		t.Fatal(err)
	}
	ten, err := reanalyze(path, 0.95, 10)
	if err != nil {
		t.Fatal(err)
	}
	if o, x := own[0], ten[0]; o.At != 0 || o.DetectableUnpaired != x.DetectableUnpaired || o.DetectablePaired != x.DetectablePaired {
		t.Errorf("detectable at each campaign's own runs: %+v, want at 0 and the figures at 10 runs: %+v", o, x)
	}
	if !(own[0].DetectableUnpaired > r.DetectableUnpaired) {
		t.Errorf("detectable unpaired at 10 runs %v, at 20 %v: want more at 10", own[0].DetectableUnpaired, r.DetectableUnpaired)
	}
}
