// Package report turns coldstart's results files (JSON Lines written by
// `coldstart run`, `coldstart density` and `steady run`, local or on
// Knative) into a dated Markdown report with tables, plots and
// recommendations derived from the figures, and into the benchstat text
// format so two campaigns can be compared with `benchstat old.txt new.txt`.
package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/coldstart-go/coldstart/internal/provenance"
	"github.com/coldstart-go/coldstart/internal/stats"
	"github.com/coldstart-go/coldstart/record"
)

// Schema is the results-file schema this package reads; files naming
// another one are skipped with a warning.
const Schema = "coldstart/v1"

// Provenance is a results file's first line: where, when and how the
// campaign was measured, and the schema of the records after it.
type Provenance struct {
	Schema string `json:"schema"`
	provenance.Provenance
}

// Artifact is one built arm, as builds writes it.
type Artifact = record.Artifact

// Phase is a named time from spawn, in milliseconds.
type Phase = record.Phase

// Sample is one cold start, as prober records it.
type Sample = record.Sample

// Summary is one arm under one budget in a cold-start campaign, as
// campaign summarizes it. Times are milliseconds from spawn.
type Summary struct {
	record.Summary
	// FromSamples: the file held no summary for this arm and budget (an
	// interrupted campaign); the report computed it from the samples.
	FromSamples bool `json:"-"`
}

// DensitySample is one idle instance's memory, as campaign records it.
type DensitySample = record.DensitySample

// DensityRow is one arm's memory per idle instance (medians over the
// instances running side by side), as campaign records it.
type DensityRow = record.DensityRow

// SteadyRow is one measured steady-state step, as steady records it.
type SteadyRow = record.SteadyRow

// Interval is a median's confidence interval; a nil bound is unknown.
type Interval = record.Interval

// SteadyKinds are the record kinds read as steady-state rows: `steady run`
// writes each record.SteadyRow as "step".
var SteadyKinds = []string{"step"}

// Campaign is one results file.
type Campaign struct {
	// File is the path read; Label its base name without .jsonl.
	File, Label string
	// Provenance is the zero value when the file had none.
	Provenance     Provenance
	Artifacts      []Artifact
	Samples        []Sample
	Summaries      []Summary
	DensitySamples []DensitySample
	Density        []DensityRow
	Steady         []SteadyRow
	// SteadyRounds are the per-round windows behind Steady's rows
	// (`steady run --rounds`); empty for a campaign without rounds.
	SteadyRounds []SteadyRound
	// Noise is what else the machine did, per window or sample batch.
	Noise []NoiseRecord
	// VerdictSummaries are bench/verdictcheck's experiments.
	VerdictSummaries []VerdictSummary
	// BuildErrors are the arms that did not build, and why.
	BuildErrors []BuildError
	// Crosscheck compares coldstart's prober with an independent one
	// (bench/crosscheck).
	Crosscheck []CrosscheckRow
	// Pull are image pulls (`coldstart pull`, report/pull.go).
	Pull []PullRow
	// Checkpoints are the snapshot arm's checkpoints; Kdat and
	// KdatRestores are bench/criukdat's summaries and rows.
	Checkpoints  []Checkpoint
	Kdat         []record.KdatSummary
	KdatRestores []record.KdatRestore
	// Soak are soak intervals and SoakSummaries their trends (`steady run
	// --soak`, report/soak.go).
	Soak          []SoakRow
	SoakSummaries []SoakSummary
	// Traces and ExplainModules are `coldstart explain`'s traced starts
	// and each arm's build info (report/explain.go).
	Traces         []record.Trace
	ExplainModules []ExplainModules
	// PodMemory is what each arm's idle pod held on Knative, per
	// container (`run --on knative`, report/knative.go).
	PodMemory []record.PodMemory
	// Cost and CostAnswers are `coldstart cost`'s rows and constrained
	// answers (report/cost.go).
	Cost        []CostRow
	CostAnswers []CostAnswer
	// Bursts and BurstSummaries are `coldstart run --burst`'s bursts and
	// their summaries (report/burst.go).
	Bursts         []Burst
	BurstSummaries []BurstSummary
	// BurstInstances are the bursts' instances, each with its phases.
	BurstInstances []record.BurstInstance
	// TLS is how the probes spoke TLS (none: plaintext).
	TLS []record.TLSClient
	// Replays are `coldstart replay`'s policies, real beside simulated,
	// with the requests and pods they count (report/replay.go).
	Replays        []record.Replay
	ReplayRequests []record.ReplayRequest
	ReplayPods     []record.ReplayPod
}

// BuildError is an arm that was not measured because it did not build.
type BuildError struct {
	Error string `json:"error"`
}

// CrosscheckRow is one arm of bench/crosscheck: coldstart's median beside
// an independent fresh-channel prober's, on the same binary, interleaved.
type CrosscheckRow struct {
	Arm             string  `json:"arm"`
	Runs            int     `json:"runs"`
	ColdstartMedian float64 `json:"coldstart_median_ms"`
	PlainMedian     float64 `json:"plain_median_ms"`
	DiffPct         float64 `json:"diff_pct"`
	MaxMs           float64 `json:"max_ms"`
	Agree           bool    `json:"agree"`
}

// Knative reports whether the campaign ran on a cluster: its provenance
// notes name one, or its command line says --on knative.
func (c *Campaign) Knative() bool {
	for k := range c.Provenance.Notes {
		if strings.Contains(strings.ToLower(k), "cluster") || strings.Contains(strings.ToLower(k), "knative") {
			return true
		}
	}
	args := c.Provenance.Args
	for i, a := range args {
		if a == "--on=knative" || (a == "--on" && i+1 < len(args) && args[i+1] == "knative") {
			return true
		}
	}
	return false
}

// Warning is a line of input the report could not use.
type Warning struct {
	File string
	Line int // 0: the whole file
	Msg  string
	// Schema is set when the file was skipped for naming another schema
	// than this package reads: the schema it names.
	Schema string
}

func (w Warning) String() string {
	if w.Line == 0 {
		return w.File + ": " + w.Msg
	}
	return fmt.Sprintf("%s:%d: %s", w.File, w.Line, w.Msg)
}

// Report is every campaign read, and what could not be read.
type Report struct {
	Campaigns []*Campaign
	Warnings  []Warning
	// Confidence is the level of every interval and 1 − the level of
	// every test (0 = stats.DefaultConfidence, 95%).
	Confidence float64
	// MinEffect is the smallest relative difference a recommendation acts
	// on (0 = stats.DefaultMinEffect, 5%).
	MinEffect float64
	// Baseline is the arm every other arm is compared against ("" =
	// default where it was measured, else each campaign's first arm).
	Baseline string
}

// Load reads results files. A directory stands for the *.jsonl files in
// it, in name order. A file that cannot be opened is an error; a line
// that cannot be used (truncated, hand-edited, an unknown kind, another
// schema) is a Warning, and reading goes on.
func Load(paths ...string) (*Report, error) {
	var files []string
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("read results: %w", err)
		}
		if !fi.IsDir() {
			files = append(files, p)
			continue
		}
		m, err := filepath.Glob(filepath.Join(p, "*.jsonl"))
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", p, err)
		}
		sort.Strings(m)
		files = append(files, m...)
	}
	r := &Report{}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return nil, fmt.Errorf("read results: %w", err)
		}
		c, ws, err := Read(f, fh)
		fh.Close()
		if err != nil {
			return nil, err
		}
		r.Warnings = append(r.Warnings, ws...)
		if c != nil {
			r.Campaigns = append(r.Campaigns, c)
		}
	}
	return r, nil
}

// Read reads one results file from rd; name labels it in warnings. It
// returns a nil Campaign (and a warning) for a file of another schema or
// with nothing in it to report; the error is for rd failing.
func Read(name string, rd io.Reader) (*Campaign, []Warning, error) {
	c := &Campaign{File: name, Label: strings.TrimSuffix(filepath.Base(name), ".jsonl")}
	var ws []Warning
	warn := func(line int, format string, args ...any) {
		ws = append(ws, Warning{File: name, Line: line, Msg: fmt.Sprintf(format, args...)})
	}
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	n, records := 0, 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var head struct {
			Kind   *string `json:"kind"`
			Schema string  `json:"schema"`
		}
		if err := json.Unmarshal(line, &head); err != nil {
			warn(n, "skipped: %v", jsonErr(err))
			continue
		}
		if head.Kind == nil {
			warn(n, `skipped: no "kind"`)
			continue
		}
		kind := *head.Kind
		var err error
		switch {
		case kind == "provenance":
			if head.Schema != Schema {
				warn(n, "schema %q, want %q: file skipped", head.Schema, Schema)
				ws[len(ws)-1].Schema = head.Schema
				return nil, ws, nil
			}
			if n != 1 && records > 0 {
				warn(n, "provenance after records: using it for the whole file")
			}
			err = json.Unmarshal(line, &c.Provenance)
		case kind == "artifact":
			err = add(line, &c.Artifacts)
		case kind == "sample":
			err = add(line, &c.Samples)
		case kind == "summary":
			err = add(line, &c.Summaries)
		case kind == "density_sample":
			err = add(line, &c.DensitySamples)
		case kind == "density":
			err = add(line, &c.Density)
		case contains(SteadyKinds, kind):
			err = add(line, &c.Steady)
		case kind == "step_round":
			err = add(line, &c.SteadyRounds)
		case kind == "noise":
			err = add(line, &c.Noise)
		case kind == "verdict_summary":
			err = add(line, &c.VerdictSummaries)
		case kind == "verdict_check":
			// One small campaign's verdict: the summary carries what the
			// report shows.
		case kind == "stop":
			// Why a --runs auto campaign stopped (campaign.Stop): said
			// on stderr when it ran; its samples carry the figures.
		case kind == "hook":
			// A --setup, --prepare or --cleanup run (internal/hooks):
			// what a campaign did beside measuring, nothing to report.
		case kind == "build_error":
			err = add(line, &c.BuildErrors)
		case kind == "crosscheck":
			err = add(line, &c.Crosscheck)
		case kind == PullKind:
			err = add(line, &c.Pull)
		case kind == "checkpoint":
			err = add(line, &c.Checkpoints)
		case kind == "kdat_summary":
			err = add(line, &c.Kdat)
		case kind == "kdat_restore":
			err = add(line, &c.KdatRestores)
		case kind == SoakKind:
			err = add(line, &c.Soak)
		case kind == SoakSummaryKind:
			err = add(line, &c.SoakSummaries)
		case kind == TraceKind:
			err = add(line, &c.Traces)
		case kind == ExplainModulesKind:
			err = add(line, &c.ExplainModules)
		case kind == record.CostKind:
			err = add(line, &c.Cost)
		case kind == record.CostAnswerKind:
			err = add(line, &c.CostAnswers)
		case kind == record.BurstKind:
			err = add(line, &c.Bursts)
		case kind == record.BurstSummaryKind:
			err = add(line, &c.BurstSummaries)
		case kind == record.TLSClientKind:
			err = add(line, &c.TLS)
		case kind == record.PodMemoryKind:
			err = add(line, &c.PodMemory)
		case kind == record.BurstInstanceKind:
			err = add(line, &c.BurstInstances)
		case kind == record.ReplayKind:
			err = add(line, &c.Replays)
		case kind == record.ReplayRequestKind:
			err = add(line, &c.ReplayRequests)
		case kind == record.ReplayPodKind:
			err = add(line, &c.ReplayPods)
		default:
			warn(n, "skipped: unknown kind %q", kind)
			continue
		}
		if err != nil {
			warn(n, "skipped %s record: %v", kind, jsonErr(err))
			continue
		}
		if kind != "provenance" {
			records++
		}
	}
	if err := sc.Err(); err != nil {
		return nil, ws, fmt.Errorf("read %s: %w", name, err)
	}
	if c.Provenance.Schema == "" {
		warn(0, "no provenance line: where and when it was measured is unknown")
	}
	if records == 0 {
		warn(0, "no records to report")
		return nil, ws, nil
	}
	if len(c.VerdictSummaries) > 0 {
		// A verdict check's samples are many small campaigns of arms
		// named for the experiment (a, b, sleep2ms): its summary rows say
		// what they show; pooled into cold-start tables and
		// recommendations they would read as one campaign of real arms.
		c.Samples, c.Summaries = nil, nil
	}
	c.fillSummaries()
	c.fillServerCPUShares()
	return c, ws, nil
}

// fillServerCPUShares gives the steady rows of a file written before
// steady recorded record.SteadyRow.ServerCPUShare one where the file
// allows: a server under a budget without a CPU quota, which reported its
// GOMAXPROCS (Go sets it to the CPUs the server may use), used calls/s
// times server CPU per call of that many CPUs. A row of medians gets the
// median of its rounds' shares, as steady computes it, or without rounds
// its own. Under a quota GOMAXPROCS says nothing of the limit (Go rounds
// it up to at least 2), and such rows, like those of servers that report
// no GOMAXPROCS, get none.
func (c *Campaign) fillServerCPUShares() {
	fill := func(r *SteadyRow) bool {
		if r.ServerCPUShare != nil || r.ServerCPUUsPerCall == nil || r.CallsPerS <= 0 || r.GoMaxProcs <= 0 || strings.Contains(r.Budget, "cores=") {
			return false
		}
		lim := float64(r.GoMaxProcs)
		share := r.ServerCPUs() / lim
		r.ServerCPULimit, r.ServerCPUShare = lim, &share
		return true
	}
	type key struct {
		arm, budget string
		proto       record.Protocol
		sh          shape
	}
	shares := map[key][]float64{}
	for i := range c.SteadyRounds {
		if r := &c.SteadyRounds[i].SteadyRow; fill(r) {
			k := key{r.Arm, r.Budget, r.Protocol, shapeOf(*r)}
			shares[k] = append(shares[k], *r.ServerCPUShare)
		}
	}
	for i := range c.Steady {
		r := &c.Steady[i]
		if !fill(r) {
			continue
		}
		if xs := shares[key{r.Arm, r.Budget, r.Protocol, shapeOf(*r)}]; len(xs) > 0 {
			m := stats.MedianCI(xs, stats.DefaultConfidence).Value
			r.ServerCPUShare = &m
		}
	}
}

func add[T any](line []byte, to *[]T) error {
	var v T
	if err := json.Unmarshal(line, &v); err != nil {
		return err
	}
	*to = append(*to, v)
	return nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// jsonErr shortens json's errors, which name Go types, to what a reader
// of the file can act on.
func jsonErr(err error) string {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case asErr(err, &te):
		// The path starts with the Go name of an embedded producer type
		// (Summary., Provenance.) that the record itself does not have:
		// name the key as it stands in the file.
		field := strings.TrimPrefix(strings.TrimPrefix(te.Field, "Summary."), "Provenance.")
		return fmt.Sprintf("field %q holds a JSON %s", field, te.Value)
	case asErr(err, &se):
		return "not valid JSON (truncated or hand-edited?): " + se.Error()
	case err == io.ErrUnexpectedEOF || strings.Contains(err.Error(), "unexpected end of JSON input"):
		return "not valid JSON (truncated?)"
	}
	return err.Error()
}

// fillSummaries computes the summary of every arm and budget that has
// counted samples but no summary record: the campaign was interrupted
// before it wrote them.
func (c *Campaign) fillSummaries() {
	have := map[[2]string]bool{}
	for _, s := range c.Summaries {
		have[[2]string{s.Arm, s.Budget}] = true
	}
	groups := map[[2]string][]Sample{}
	var order [][2]string
	for _, s := range c.Samples {
		k := [2]string{s.Arm, s.Budget}
		if have[k] {
			continue
		}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], s)
	}
	size := map[string]int64{}
	for _, a := range c.Artifacts {
		size[a.Arm] = a.SizeBytes
	}
	for _, k := range order {
		// Summarized exactly as a finished campaign's are.
		s := Summary{Summary: record.Summarize(groups[k]), FromSamples: true}
		if s.Runs == 0 {
			continue
		}
		s.Arm, s.Budget, s.SizeBytes = k[0], k[1], size[k[0]]
		c.Summaries = append(c.Summaries, s)
	}
}
