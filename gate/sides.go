package gate

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/coldstart-go/coldstart/internal/stats"
	"github.com/coldstart-go/coldstart/record"
	"github.com/coldstart-go/coldstart/report"
)

// Why a counted start is refused: it is not shown to be a real cold start.
const (
	// RefusedNoTime: no positive spawn → first-RPC time.
	RefusedNoTime = "no first-RPC time"
	// RefusedBeforeT0: a phase is dated before t0, the instant before the
	// server was started.
	RefusedBeforeT0 = "a phase before t0"
	// RefusedBeforeStart: the prober connected or was answered before
	// the server's process had started (the probing only begins after),
	// so something else answered.
	RefusedBeforeStart = "answered before its process started"
	// RefusedPIDReused: another start of the same file had its PID, so
	// neither is known to be a process of its own.
	RefusedPIDReused = "a PID another start had too"
)

// proberPhases are the phases the prober dates, all after the process
// started.
var proberPhases = []string{record.PhaseAccepting, record.PhaseFirstReply, record.PhaseFirstRPC}

// refusal says why s is not a real cold start ("" = it is one). pidReused
// says another start of its file had its PID.
func refusal(s record.Sample, pidReused bool) string {
	if !(s.FirstRPCMs > 0) || math.IsInf(s.FirstRPCMs, 0) {
		return RefusedNoTime
	}
	for _, p := range s.Phases {
		if p.Ms < 0 || math.IsNaN(p.Ms) {
			return RefusedBeforeT0
		}
	}
	if started, ok := s.Phase(record.PhaseStarted); ok {
		if s.ReadyAttemptMs != 0 && s.ReadyAttemptMs < started {
			return RefusedBeforeStart
		}
		for _, name := range proberPhases {
			if at, ok := s.Phase(name); ok && at < started {
				return RefusedBeforeStart
			}
		}
	}
	if pidReused {
		return RefusedPIDReused
	}
	return ""
}

// start is one counted, accepted start: the values the figures read.
type start struct {
	run      int
	firstRPC float64
	cpu, pss float64 // 0 = not read
	phases   []record.Phase
}

func (s start) phase(name string) (float64, bool) {
	for _, p := range s.phases {
		if p.Name == name {
			return p.Ms, true
		}
	}
	return 0, false
}

// sideData is one side's watched values, by arm and budget.
type sideData struct {
	Side
	campaigns []*report.Campaign
	starts    map[key][]start
	startKeys ordered
	idle      map[key][]float64
	idleKeys  ordered
	traces    map[key][]start
	traceKeys ordered
	// sizes are each arm's binary sizes (one per file that built it).
	sizes map[string][]int64
	// conds are the conditions measured under, name → values seen.
	conds map[string][]string
}

func newSide(name string, paths []string) *sideData {
	return &sideData{
		Side:   Side{Name: name, Paths: paths, Refused: map[string]int{}},
		starts: map[key][]start{}, idle: map[key][]float64{}, traces: map[key][]start{},
		sizes: map[string][]int64{}, conds: map[string][]string{},
	}
}

func (d *sideData) cond(name, value string) {
	if !slices.Contains(d.conds[name], value) {
		d.conds[name] = append(d.conds[name], value)
	}
}

// armFunc maps a campaign's arm name to the arm compared, and whether it
// belongs to this side.
type armFunc func(name string) (string, bool)

func everyArm(name string) (string, bool) { return name, true }

// sideArm is the arm mapping of one side of a paired campaign: arms
// "base" and "base.ARM" (ARM; "base" alone is the default arm), "new" and
// "new.ARM".
func sideArm(side string) armFunc {
	return func(name string) (string, bool) {
		if name == side {
			return "default", true
		}
		if arm, ok := strings.CutPrefix(name, side+"."); ok && arm != "" {
			return arm, true
		}
		return "", false
	}
}

// watched reports whether c holds anything the gate compares.
func watched(c *report.Campaign) bool {
	return len(c.Samples) > 0 || len(c.DensitySamples) > 0 || len(c.Traces) > 0
}

// add takes c's watched values for the arms armOf keeps, refusing the
// starts that are not real cold starts.
func (d *sideData) add(c *report.Campaign, armOf armFunc) {
	took := false
	pids := map[int]int{}
	for _, s := range c.Samples {
		if s.PID > 0 {
			pids[s.PID]++
		}
	}
	for _, s := range c.Samples {
		arm, ok := armOf(s.Arm)
		if !ok || s.Warmup || s.Error != "" {
			continue
		}
		took = true
		if why := refusal(s, s.PID > 0 && pids[s.PID] > 1); why != "" {
			d.Refused[why]++
			continue
		}
		d.Counted++
		k := key{arm, s.Budget}
		d.startKeys.add(k)
		st := start{run: s.Run, firstRPC: s.FirstRPCMs, phases: s.Phases}
		if s.StartupCPUMs != nil {
			st.cpu = *s.StartupCPUMs
		}
		if s.PSSBytes != nil {
			st.pss = float64(*s.PSSBytes)
		}
		d.starts[k] = append(d.starts[k], st)
	}
	for _, t := range c.Traces {
		arm, ok := armOf(t.Arm)
		if !ok || t.Warmup || t.Error != "" {
			continue
		}
		took = true
		s := record.Sample{FirstRPCMs: t.FirstRPCMs, ReadyAttemptMs: t.ReadyAttemptMs, Phases: t.Phases}
		if why := refusal(s, false); why != "" {
			d.Refused[why]++
			continue
		}
		d.Counted++
		k := key{arm, t.Budget}
		d.traceKeys.add(k)
		d.traces[k] = append(d.traces[k], start{run: t.Run, firstRPC: t.FirstRPCMs, phases: t.Phases})
	}
	for _, s := range c.DensitySamples {
		arm, ok := armOf(s.Arm)
		if !ok || s.PSSBytes <= 0 {
			continue
		}
		took = true
		k := key{arm, s.Budget}
		d.idleKeys.add(k)
		d.idle[k] = append(d.idle[k], float64(s.PSSBytes))
	}
	if !took {
		return
	}
	d.Files = append(d.Files, c.File)
	d.campaigns = append(d.campaigns, c)
	// Size: the artifacts built for the run, else the summaries' record.
	sized := map[string]bool{}
	for _, a := range c.Artifacts {
		if arm, ok := armOf(a.Arm); ok && a.SizeBytes > 0 && !sized[arm] {
			sized[arm] = true
			d.sizes[arm] = append(d.sizes[arm], a.SizeBytes)
		}
	}
	for _, s := range c.Summaries {
		if arm, ok := armOf(s.Arm); ok && s.SizeBytes > 0 && !sized[arm] {
			sized[arm] = true
			d.sizes[arm] = append(d.sizes[arm], s.SizeBytes)
		}
	}
	d.addConditions(c, armOf)
}

// addConditions records what c was measured under that must match across
// the sides: where, and the probe, transport, page cache and prober CPUs.
func (d *sideData) addConditions(c *report.Campaign, armOf armFunc) {
	where := "local"
	if c.Knative() {
		where = "knative"
	}
	d.cond("where", where)
	for _, s := range c.Summaries {
		if _, ok := armOf(s.Arm); !ok {
			continue
		}
		if s.Probe != "" {
			d.cond("probe", s.Probe)
		}
		pc := s.PageCache
		if pc == "" {
			pc = "warm"
		}
		d.cond("page cache", pc)
		if s.ProberCPUs != "" {
			d.cond("prober CPUs under "+s.Budget, s.ProberCPUs)
		}
	}
	if c.Provenance.Tool == "coldstart" && !c.Knative() {
		t := flagValue(c.Provenance.Args, "--transport")
		if t == "" {
			t = "tcp"
		}
		d.cond("transport", t)
	}
}

// flagValue is the value of flag name on a command line (--name V or
// --name=V, the last one given; "" when absent), up to "--", after which
// the server's own arguments start.
func flagValue(args []string, name string) string {
	v := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if a == name && i+1 < len(args) {
			v = args[i+1]
			i++
		} else if after, ok := strings.CutPrefix(a, name+"="); ok {
			v = after
		}
	}
	return v
}

// busyFiles are the campaigns whose noise records say most of their rounds
// ran on a busy host: more than half, as the report doubts a steady row.
// Fewer than that leave the medians to the quiet rounds.
func busyFiles(cs []*report.Campaign) []BusyFile {
	var out []BusyFile
	for _, c := range cs {
		busy := 0
		for _, n := range c.Noise {
			if n.Busy {
				busy++
			}
		}
		if 2*busy > len(c.Noise) {
			out = append(out, BusyFile{File: c.File, Busy: busy, Windows: len(c.Noise)})
		}
	}
	return out
}

// machine is what makes two hosts one machine class, and the tool that
// measured on them, as a results file's provenance names them.
var machine = []struct {
	name string
	of   func(p report.Provenance) string
}{
	{"CPU model", func(p report.Provenance) string { return p.CPUModel }},
	{"cores", func(p report.Provenance) string { return fmt.Sprint(p.Cores) }},
	{"kernel", func(p report.Provenance) string { return p.Kernel }},
	{"cgroup mode", func(p report.Provenance) string { return p.CgroupMode }},
	{"coldstart version", func(p report.Provenance) string { return p.ToolVersion }},
}

// memTolerance: memory sizes within 5% of each other are one class (two
// VMs of one type differ by what their firmware reserves).
const memTolerance = 1.05

// provenanceDiffs names what differs between the sides' hosts.
func provenanceDiffs(b, n *sideData) []string {
	var diffs []string
	for _, d := range []*sideData{b, n} {
		for _, c := range d.campaigns {
			if c.Provenance.Schema == "" {
				diffs = append(diffs, fmt.Sprintf("provenance: %s %s has none, so where it was measured is unknown", d.Name, c.File))
			}
		}
	}
	if len(diffs) > 0 {
		return diffs
	}
	for _, m := range machine {
		bv, nv := values(b, m.of), values(n, m.of)
		if !slices.Equal(bv, nv) || len(bv) > 1 {
			diffs = append(diffs, fmt.Sprintf("%s: base %s, new %s", m.name, quoteAll(bv), quoteAll(nv)))
		}
	}
	lo, hi := math.Inf(1), 0.0
	for _, d := range []*sideData{b, n} {
		for _, c := range d.campaigns {
			m := float64(c.Provenance.MemBytes)
			lo, hi = min(lo, m), max(hi, m)
		}
	}
	if hi > lo*memTolerance {
		gib := func(d *sideData) string {
			var s []string
			for _, c := range d.campaigns {
				v := fmt.Sprintf("%.1f GiB", float64(c.Provenance.MemBytes)/(1<<30))
				if !slices.Contains(s, v) {
					s = append(s, v)
				}
			}
			return strings.Join(s, " and ")
		}
		diffs = append(diffs, fmt.Sprintf("memory: base %s, new %s (more than %.0f%% apart)", gib(b), gib(n), 100*(memTolerance-1)))
	}
	return diffs
}

func values(d *sideData, of func(report.Provenance) string) []string {
	var out []string
	for _, c := range d.campaigns {
		if v := of(c.Provenance); !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}

func quoteAll(vs []string) string {
	q := make([]string, len(vs))
	for i, v := range vs {
		q[i] = fmt.Sprintf("%q", v)
	}
	if len(q) == 0 {
		return "none"
	}
	return strings.Join(q, " and ")
}

// condDiffs names the conditions measured under that differ; a condition
// one side does not record is not compared.
func condDiffs(b, n *sideData) []string {
	var names []string
	for name := range b.conds {
		if _, ok := n.conds[name]; ok {
			names = append(names, name)
		}
	}
	slices.SortFunc(names, func(x, y string) int {
		return cmp.Compare(condOrder(x), condOrder(y))*2 + cmp.Compare(x, y)
	})
	var diffs []string
	for _, name := range names {
		bv, nv := slices.Sorted(slices.Values(b.conds[name])), slices.Sorted(slices.Values(n.conds[name]))
		if !slices.Equal(bv, nv) || len(bv) > 1 {
			diffs = append(diffs, fmt.Sprintf("%s: base %s, new %s", name, quoteAll(bv), quoteAll(nv)))
		}
	}
	return diffs
}

func condOrder(name string) int {
	for i, p := range []string{"where", "probe", "transport", "page cache", "prober CPUs"} {
		if strings.HasPrefix(name, p) {
			return i
		}
	}
	return 99
}

// keyDiffs names the record kinds, arms, budgets and arm × budget pairs
// one side measured and the other did not.
func keyDiffs(b, n *sideData) []string {
	var diffs []string
	for _, k := range []struct {
		what   string
		bk, nk *ordered
	}{
		{"cold starts (coldstart run)", &b.startKeys, &n.startKeys},
		{"idle instances (coldstart density)", &b.idleKeys, &n.idleKeys},
		{"traced starts (coldstart explain)", &b.traceKeys, &n.traceKeys},
	} {
		switch {
		case len(k.bk.keys) == 0 && len(k.nk.keys) == 0:
			continue
		case len(k.nk.keys) == 0:
			diffs = append(diffs, k.what+": only base has them")
			continue
		case len(k.bk.keys) == 0:
			diffs = append(diffs, k.what+": only new has them")
			continue
		}
		arms := setDiff("arms", armsOf(k.bk.keys), armsOf(k.nk.keys))
		budgets := setDiff("budgets", budgetsOf(k.bk.keys), budgetsOf(k.nk.keys))
		if d := append(arms, budgets...); len(d) > 0 {
			diffs = append(diffs, k.what+": "+strings.Join(d, "; "))
			continue
		}
		var onlyB, onlyN []string
		for _, x := range k.bk.keys {
			if !k.nk.has(x) {
				onlyB = append(onlyB, x.String())
			}
		}
		for _, x := range k.nk.keys {
			if !k.bk.has(x) {
				onlyN = append(onlyN, x.String())
			}
		}
		if len(onlyB)+len(onlyN) > 0 {
			diffs = append(diffs, k.what+": "+strings.Join(onlyIn("arm × budget", onlyB, onlyN), "; "))
		}
	}
	if len(diffs) == 0 && len(b.startKeys.keys)+len(b.idleKeys.keys)+len(b.traceKeys.keys) == 0 {
		diffs = append(diffs, "nothing to compare: no cold starts (coldstart run), idle instances (coldstart density) or traced starts (coldstart explain) in either side")
	}
	return diffs
}

func setDiff(what string, b, n []string) []string {
	return onlyIn(what, minus(b, n), minus(n, b))
}

func onlyIn(what string, b, n []string) []string {
	var out []string
	if len(b) > 0 {
		out = append(out, fmt.Sprintf("%s only in base: %s", what, strings.Join(b, ", ")))
	}
	if len(n) > 0 {
		out = append(out, fmt.Sprintf("%s only in new: %s", what, strings.Join(n, ", ")))
	}
	return out
}

// tooFew names each arm and budget with fewer counted starts than a
// comparison can judge by (pairs, paired): below it no test reaches the
// level, and the gate would pass whatever changed.
func tooFew(b, n *sideData, paired bool, confidence float64) []string {
	need := stats.MinRunsForInterval(confidence)
	var diffs []string
	for _, k := range b.startKeys.keys {
		bs, ns := b.starts[k], n.starts[k]
		if paired {
			if got := len(pairs(bs, ns)); got < need {
				diffs = append(diffs, fmt.Sprintf("too few cold starts: %s has %d rounds with both base and new counted, want at least %d", k, got, need))
			}
			continue
		}
		for _, s := range []struct {
			name string
			n    int
		}{{Base, len(bs)}, {New, len(ns)}} {
			if s.n < need {
				diffs = append(diffs, fmt.Sprintf("too few cold starts: %s %s has %d counted, want at least %d", s.name, k, s.n, need))
			}
		}
	}
	return diffs
}

// pairs are the runs both sides have.
func pairs(b, n []start) []int {
	have := map[int]bool{}
	for _, s := range b {
		have[s.run] = true
	}
	var out []int
	for _, s := range n {
		if have[s.run] {
			out = append(out, s.run)
			have[s.run] = false
		}
	}
	return out
}
