package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"text/tabwriter"

	"github.com/coldstart-go/coldstart/internal/stats"
	"github.com/coldstart-go/coldstart/record"
)

// campaignSamples are one campaign's counted first-RPC times by arm and
// budget, keyed by run.
type campaignSamples map[[2]string]stats.Rounds

// readCampaigns reads a results file's samples and splits them into
// campaigns: a verdict file holds many small campaigns one after the
// other, each opening with its warm-up round (run 0); a coldstart file
// holds one. It returns the campaigns and the arms and budgets in the
// order first seen.
func readCampaigns(r io.Reader) (cs []campaignSamples, arms, budgets []string, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	prevRun := -1
	for sc.Scan() {
		var head struct {
			Kind string `json:"kind"`
		}
		if json.Unmarshal(sc.Bytes(), &head) != nil || head.Kind != "sample" {
			continue
		}
		var s record.Sample
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			return nil, nil, nil, err
		}
		if s.Run == 0 && prevRun != 0 {
			cs = append(cs, campaignSamples{})
		}
		prevRun = s.Run
		if !slices.Contains(arms, s.Arm) {
			arms = append(arms, s.Arm)
		}
		if !slices.Contains(budgets, s.Budget) {
			budgets = append(budgets, s.Budget)
		}
		if s.Warmup || s.Error != "" || s.FirstRPCMs <= 0 || len(cs) == 0 {
			continue
		}
		c := cs[len(cs)-1]
		k := [2]string{s.Arm, s.Budget}
		if c[k] == nil {
			c[k] = stats.Rounds{}
		}
		c[k][s.Run] = s.FirstRPCMs
	}
	return cs, arms, budgets, sc.Err()
}

// reanalysis is one arm against another under one budget, over every
// campaign of a file: how often each test found a difference, and the
// smallest effect At runs per arm would detect at the spread seen.
type reanalysis struct {
	File, Budget, A, B string
	Campaigns          int
	// Unpaired and Paired count the campaigns whose test was
	// significant; Slower those of them that found a slower, the Paired
	// count by CompareRounds (paired where the rounds pair).
	Unpaired, Paired             int
	UnpairedSlower, PairedSlower int
	// At is the runs per arm the detectable effects are for; 0 means
	// each campaign's own (its counted pairs), as --runs auto left them.
	At int
	// DetectableUnpaired and DetectablePaired are the smallest relative
	// effects At runs per arm detect (80% power) at the spread within a
	// campaign (its values; its per-round ratios), the median over the
	// campaigns: pooling campaigns would count the spread between them,
	// which neither test sees.
	DetectableUnpaired, DetectablePaired float64
}

// reanalyze sets every arm against the first (or default) under each
// budget, unpaired and paired, on the same samples; the detectable effects
// are for at runs per arm (0: each campaign's own).
func reanalyze(file string, conf float64, at int) ([]reanalysis, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cs, arms, budgets, err := readCampaigns(f)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", file, err)
	}
	base := record.ChooseBaseline(arms, "")
	var out []reanalysis
	for _, b := range budgets {
		for _, a := range arms {
			if a == base {
				continue
			}
			r := compareCampaigns(cs, a, base, b, conf, at)
			if r.Campaigns == 0 {
				continue
			}
			r.File = file
			out = append(out, r)
		}
	}
	return out, nil
}

// compareCampaigns sets arm a against arm base under budget in every
// campaign of cs that measured both, unpaired and paired.
func compareCampaigns(cs []campaignSamples, a, base, budget string, conf float64, at int) reanalysis {
	r := reanalysis{Budget: budget, A: a, B: base, At: at}
	var du, dp []float64
	for _, c := range cs {
		xa, xb := c[[2]string{a, budget}], c[[2]string{base, budget}]
		if len(xa) == 0 || len(xb) == 0 {
			continue
		}
		r.Campaigns++
		u := stats.Compare(xa.Values(), xb.Values(), conf)
		p := stats.CompareRounds(xa, xb, conf)
		if u.Significant() {
			r.Unpaired++
			if u.Verdict(stats.LessIsFaster) == stats.Slower {
				r.UnpairedSlower++
			}
		}
		if p.Significant() {
			r.Paired++
			if p.Verdict(stats.LessIsFaster) == stats.Slower {
				r.PairedSlower++
			}
		}
		pa, pb, _ := stats.Pair(xa, xb)
		n := at
		if n == 0 {
			n = len(pa)
		}
		du = append(du, stats.DetectableEffect(xa.Values(), xb.Values(), n, conf, 0.8))
		dp = append(dp, stats.DetectableEffectPaired(pa, pb, n, conf, 0.8))
	}
	r.DetectableUnpaired, r.DetectablePaired = median(du), median(dp)
	return r
}

// writeReanalysis prints one row per comparison.
func writeReanalysis(w io.Writer, rs []reanalysis) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "file\tbudget\ta\tb\tcampaigns\tunpaired_significant\tpaired_significant\tdetectable_at\tdetectable_unpaired\tdetectable_paired")
	for _, r := range rs {
		at := "own runs"
		if r.At > 0 {
			at = fmt.Sprintf("%d runs", r.At)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d (%d slower)\t%d (%d slower)\t%s\t%s\t%s\n", r.File, r.Budget, r.A, r.B, r.Campaigns,
			r.Unpaired, r.UnpairedSlower, r.Paired, r.PairedSlower, at, pct(r.DetectableUnpaired), pct(r.DetectablePaired))
	}
	return tw.Flush()
}

// median is the median of xs, NaN values left out (NaN for none).
func median(xs []float64) float64 {
	var ok []float64
	for _, x := range xs {
		if !math.IsNaN(x) {
			ok = append(ok, x)
		}
	}
	if len(ok) == 0 {
		return math.NaN()
	}
	return stats.MedianCI(ok, stats.DefaultConfidence).Value
}

func pct(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return fmt.Sprintf("%.1f%%", 100*v)
}
