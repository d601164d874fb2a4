package gate

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/coldstart-go/coldstart/internal/stats"
	"github.com/coldstart-go/coldstart/record"
	"github.com/coldstart-go/coldstart/report"
)

// check refuses options no comparison can use.
func (o Options) check() error {
	if !(o.MaxRegression >= 0) || math.IsInf(o.MaxRegression, 0) {
		return fmt.Errorf("max regression: %v, want a fraction of 0 or more (0.05 = 5%%)", o.MaxRegression)
	}
	if o.Confidence != 0 {
		return stats.CheckConfidence(o.Confidence)
	}
	return nil
}

// schemaDiffs names the files of each side that were skipped for another
// schema than this coldstart reads.
func schemaDiffs(sides ...struct {
	name string
	in   *Input
}) []string {
	var diffs []string
	for _, s := range sides {
		for _, w := range s.in.Warnings {
			if w.Schema != "" {
				diffs = append(diffs, fmt.Sprintf("schema: %s %s is %q, want %q", s.name, w.File, w.Schema, report.Schema))
			}
		}
	}
	return diffs
}

// Compare sets new against base, unpaired: the two sides were measured
// apart (two campaigns, maybe on two days), so each figure is compared
// by Mann–Whitney with the Hodges–Lehmann ratio and its interval (the p90
// by bootstrap), the samples of a side's files pooled. The sides must be
// comparable (see the package comment), else the error is an
// *IncomparableError.
func Compare(base, new *Input, o Options) (*Result, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	b, n := newSide(Base, base.Paths), newSide(New, new.Paths)
	for _, c := range base.Campaigns {
		if watched(c) {
			b.add(c, everyArm)
		}
	}
	for _, c := range new.Campaigns {
		if watched(c) {
			n.add(c, everyArm)
		}
	}
	diffs := schemaDiffs(struct {
		name string
		in   *Input
	}{Base, base}, struct {
		name string
		in   *Input
	}{New, new})
	diffs = append(diffs, keyDiffs(b, n)...)
	diffs = append(diffs, provenanceDiffs(b, n)...)
	diffs = append(diffs, condDiffs(b, n)...)
	if len(diffs) == 0 {
		diffs = tooFew(b, n, false, o.confidence())
	}
	if len(diffs) > 0 {
		return nil, &IncomparableError{Diffs: diffs}
	}
	r, err := compareSides(b, n, false, o)
	if err != nil {
		return nil, err
	}
	r.Busy = busyFiles(append(slices.Clip(b.campaigns), n.campaigns...))
	return r, nil
}

// ErrNotPaired is returned by ComparePaired for input that holds no
// campaign with base and new arms.
var ErrNotPaired = errors.New("no campaign with arms base[.ARM] and new[.ARM]")

// ComparePaired sets the new arms of one campaign against its base arms,
// paired by round: arm "base" or "base.ARM" against "new" or "new.ARM"
// (ARM, or default), which ran interleaved, one start each per round, so
// noise that hit a round cancels in its ratio (stats.CompareRounds:
// Wilcoxon signed-rank on the per-round ratios, with the Hodges–Lehmann
// interval; the p90 by bootstrap over whole rounds). coldstart gate
// --base REV writes such a campaign; coldstart run --bin base=OLD --bin
// new=NEW makes one of two binaries. Other arms are left out.
func ComparePaired(in *Input, o Options) (*Result, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	if diffs := schemaDiffs(struct {
		name string
		in   *Input
	}{"input", in}); len(diffs) > 0 {
		return nil, &IncomparableError{Diffs: diffs}
	}
	var found []*report.Campaign
	for _, c := range in.Campaigns {
		if hasSides(c) {
			found = append(found, c)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("%s: %w (coldstart gate --base REV measures one; coldstart run --bin base=OLD --bin new=NEW another; two campaigns measured apart are compared as coldstart gate BASE NEW)", strings.Join(in.Paths, ", "), ErrNotPaired)
	case 1:
	default:
		var files []string
		for _, c := range found {
			files = append(files, c.File)
		}
		return nil, fmt.Errorf("%s: each holds base and new arms; a paired gate compares one campaign", strings.Join(files, ", "))
	}
	c := found[0]
	// add checks PIDs over the whole file, both sides' arms: a process
	// handed to a base and a new start is refused on both.
	b, n := newSide(Base, in.Paths), newSide(New, in.Paths)
	b.add(c, sideArm(Base))
	n.add(c, sideArm(New))
	diffs := keyDiffs(b, n)
	if len(diffs) == 0 {
		diffs = tooFew(b, n, true, o.confidence())
	}
	if len(diffs) > 0 {
		return nil, &IncomparableError{Diffs: diffs}
	}
	r, err := compareSides(b, n, true, o)
	if err != nil {
		return nil, err
	}
	r.Busy = busyFiles([]*report.Campaign{c})
	r.FirstEveryRound = firstEveryRound(c)
	return r, nil
}

// firstEveryRound is the side whose start came first, in the file's
// order, in every counted round and budget of c ("" when the sides took
// turns, or there was one round).
func firstEveryRound(c *report.Campaign) string {
	type round struct {
		run    int
		budget string
	}
	first := map[round]string{}
	for _, s := range c.Samples {
		if s.Warmup {
			continue
		}
		k := round{s.Run, s.Budget}
		if _, ok := first[k]; ok {
			continue
		}
		for _, side := range []string{Base, New} {
			if _, ok := sideArm(side)(s.Arm); ok {
				first[k] = side
			}
		}
	}
	seen := map[string]bool{}
	for _, side := range first {
		seen[side] = true
	}
	if len(first) < 2 || len(seen) != 1 {
		return ""
	}
	for side := range seen {
		return side
	}
	return ""
}

// hasSides reports whether c measured both a base and a new arm.
func hasSides(c *report.Campaign) bool {
	var b, n bool
	for _, s := range c.Samples {
		_, ib := sideArm(Base)(s.Arm)
		_, in := sideArm(New)(s.Arm)
		b, n = b || ib, n || in
	}
	return b && n
}

// figure is one watched figure of the starts: name, unit, how it is
// compared, and what it reads from a start (false: not read).
type figure struct {
	name, unit string
	p90        bool
	value      func(start) (float64, bool)
}

func positive(v float64) (float64, bool) { return v, v > 0 }

var startFigures = []figure{
	{name: "first RPC median", unit: "ms", value: func(s start) (float64, bool) { return positive(s.firstRPC) }},
	{name: "first RPC p90", unit: "ms", p90: true, value: func(s start) (float64, bool) { return positive(s.firstRPC) }},
	{name: "startup CPU", unit: "ms", value: func(s start) (float64, bool) { return positive(s.cpu) }},
	{name: "PSS at first RPC", unit: "B", value: func(s start) (float64, bool) { return positive(s.pss) }},
}

func phaseFigure(prefix, name string) figure {
	return figure{name: prefix + name, unit: "ms", value: func(s start) (float64, bool) {
		v, ok := s.phase(name)
		return v, ok && v > 0
	}}
}

// compareSides makes and judges every row. It fails with an
// *IncomparableError when a first-RPC median could not be found worse
// however far apart the sides were: too few starts for the test, once
// adjusted for every figure tested, to reach the level.
func compareSides(b, n *sideData, paired bool, o Options) (*Result, error) {
	conf := o.confidence()
	r := &Result{Options: o, Paired: paired, Base: b.Side, New: n.Side, b: b, n: n}
	var rows []Row
	carried := map[string]bool{}
	onlyOne := map[string]string{}
	for _, k := range b.startKeys.keys {
		figs := slices.Clone(startFigures)
		for _, name := range phaseNames(b.starts[k], n.starts[k], onlyOne) {
			figs = append(figs, phaseFigure("phase ", name))
		}
		for _, f := range figs {
			if row, ok := compareStarts(k, f, b.starts[k], n.starts[k], paired, conf); ok {
				rows = append(rows, row)
				carried[f.name] = true
			}
		}
	}
	for _, arm := range armsOf(b.startKeys.keys) {
		bs, ns := b.sizes[arm], n.sizes[arm]
		if len(bs) == 0 || len(ns) == 0 {
			continue
		}
		bv, nv := medianSize(bs), medianSize(ns)
		rows = append(rows, Row{Arm: arm, Budget: "–", Figure: "binary size", Unit: "B", Base: bv, New: nv,
			NBase: len(bs), NNew: len(ns), Ratio: ratio(nv, bv), Low: math.NaN(), High: math.NaN(),
			P: math.NaN(), RawP: math.NaN(), Test: TestExact})
		carried["binary size"] = true
	}
	for _, k := range b.idleKeys.keys {
		rows = append(rows, compareValues(k, "idle PSS", "B", b.idle[k], n.idle[k], conf))
		carried["idle PSS"] = true
	}
	for _, k := range b.traceKeys.keys {
		for _, name := range []string{record.PhaseRuntimeReady, record.PhaseInitsDone} {
			if row, ok := compareStarts(k, phaseFigure("explain ", name), b.traces[k], n.traces[k], paired, conf); ok {
				rows = append(rows, row)
				carried["explain"] = true
			}
		}
	}
	r.Tested = judge(rows, o)
	r.Rows = rows
	r.Skipped = skipped(b, carried, onlyOne)
	if diffs := powerless(rows, r.Tested, 1-conf); len(diffs) > 0 {
		return nil, &IncomparableError{Diffs: diffs}
	}
	return r, nil
}

// powerless names the first-RPC median rows whose test could not reach
// level alpha/tested, Holm's first step, even with the sides fully apart:
// a gate on them would pass whatever changed.
func powerless(rows []Row, tested int, alpha float64) []string {
	var diffs []string
	for _, row := range rows {
		if row.Figure != startFigures[0].name || row.Verdict == TooFew {
			continue
		}
		var least float64
		var need int
		var have string
		switch row.Test {
		case stats.PairedWilcoxon:
			least = smallestPaired(row.NBase)
			need = minPairedRounds(tested, alpha)
			have = fmt.Sprintf("%d rounds with both sides", row.NBase)
		case stats.MannWhitney:
			least = smallestUnpaired(row.NBase, row.NNew)
			for need = min(row.NBase, row.NNew); smallestUnpaired(need, need)*float64(tested) >= alpha; need++ {
			}
			have = fmt.Sprintf("%d and %d cold starts", row.NBase, row.NNew)
		default:
			continue
		}
		if least*float64(tested) >= alpha {
			diffs = append(diffs, fmt.Sprintf("too few cold starts: %s under %s has %s, and with %d figures tested together (Holm) even fully separated sides would not be significant: want at least %d", row.Arm, row.Budget, have, tested, need))
		}
	}
	return diffs
}

// smallestPaired is the smallest two-sided p-value of the signed-rank
// test on n pairs: all of one sign, 2/2^n.
func smallestPaired(n int) float64 { return 2 / math.Ldexp(1, n) }

// MinPairedRounds is the fewest rounds with both sides at which a paired
// gate testing tested figures together (Holm) can find anything at
// confidence: below it even fully separated sides are not significant,
// and Compare refuses the campaign (exit 2). coldstart gate --base --runs
// auto runs at least this many.
func MinPairedRounds(tested int, confidence float64) int {
	return minPairedRounds(tested, 1-confidence)
}

// BaseFigures is the most figures a campaign of base and new processes
// (coldstart gate --base) has the gate test together: first RPC median
// and p90, startup CPU, PSS at first RPC, and up to four phases (a
// process's are process_started, accepting, first_answer).
const BaseFigures = 8

// MinAutoRounds is the fewest rounds a --runs auto campaign for the gate
// counts before it may stop on precision: MinPairedRounds over
// BaseFigures (9 at 95%), never fewer than a median's interval needs.
func MinAutoRounds(confidence float64) int {
	return max(MinPairedRounds(BaseFigures, confidence), stats.MinAutoRounds)
}

// minPairedRounds is MinPairedRounds at level alpha: Holm's first step
// tests at alpha/tested.
func minPairedRounds(tested int, alpha float64) int {
	return stats.MinPairs(alpha / float64(max(tested, 1)))
}

// smallestUnpaired is the smallest two-sided p-value of the Mann–Whitney
// test of samples of sizes a and b: fully separated, 2/C(a+b, a).
func smallestUnpaired(a, b int) float64 {
	lc, _ := math.Lgamma(float64(a + b + 1))
	la, _ := math.Lgamma(float64(a + 1))
	lb, _ := math.Lgamma(float64(b + 1))
	return 2 / math.Exp(lc-la-lb)
}

// skipped says which watched figures the inputs do not carry.
func skipped(b *sideData, carried map[string]bool, onlyOne map[string]string) []string {
	var out []string
	if len(b.startKeys.keys) == 0 {
		out = append(out, "first RPC, startup CPU, PSS at first RPC, binary size and phases (no cold starts: coldstart run)")
	} else {
		for _, f := range []string{"startup CPU", "PSS at first RPC", "binary size"} {
			if !carried[f] {
				out = append(out, f+" (not recorded)")
			}
		}
	}
	if !carried["idle PSS"] {
		out = append(out, "idle PSS (no idle instances: coldstart density)")
	}
	if !carried["explain"] {
		out = append(out, "explain's phases runtime_ready, inits_done (no traced starts: coldstart explain)")
	}
	names := make([]string, 0, len(onlyOne))
	for name := range onlyOne {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		out = append(out, fmt.Sprintf("phase %s (only %s recorded it)", name, onlyOne[name]))
	}
	return out
}

func medianSize(xs []int64) float64 {
	f := make([]float64, len(xs))
	for i, x := range xs {
		f[i] = float64(x)
	}
	return stats.MedianCI(f, stats.DefaultConfidence).Value
}

// phaseNames are the phases both sides recorded, in the order of base's
// medians, less first_rpc (the first-RPC rows are it) and a first_answer
// that was first_rpc in every start (the server was ready at its first
// answer). A phase one side lacks is noted in onlyOne.
func phaseNames(b, n []start, onlyOne map[string]string) []string {
	seen := func(ss []start) map[string][]float64 {
		m := map[string][]float64{}
		for _, s := range ss {
			for _, p := range s.phases {
				m[p.Name] = append(m[p.Name], p.Ms)
			}
		}
		return m
	}
	bp, np := seen(b), seen(n)
	var names []string
	for name := range bp {
		if _, ok := np[name]; !ok {
			onlyOne[name] = Base
			continue
		}
		if name == record.PhaseFirstRPC || name == record.PhaseFirstReply && sameAsFirstRPC(b) && sameAsFirstRPC(n) {
			continue
		}
		names = append(names, name)
	}
	for name := range np {
		if _, ok := bp[name]; !ok {
			onlyOne[name] = New
		}
	}
	med := func(name string) float64 { return stats.MedianCI(bp[name], stats.DefaultConfidence).Value }
	sort.Slice(names, func(i, j int) bool {
		mi, mj := med(names[i]), med(names[j])
		return mi < mj || mi == mj && names[i] < names[j]
	})
	return names
}

func sameAsFirstRPC(ss []start) bool {
	for _, s := range ss {
		if v, ok := s.phase(record.PhaseFirstReply); ok && v != s.firstRPC {
			return false
		}
	}
	return true
}

// compareStarts compares figure f over two sides' starts, paired by run
// when paired; false when neither side has a value of it.
func compareStarts(k key, f figure, b, n []start, paired bool, conf float64) (Row, bool) {
	br, nr := stats.Rounds{}, stats.Rounds{}
	var bx, nx []float64
	for _, s := range b {
		if v, ok := f.value(s); ok {
			bx, br[s.run] = append(bx, v), v
		}
	}
	for _, s := range n {
		if v, ok := f.value(s); ok {
			nx, nr[s.run] = append(nx, v), v
		}
	}
	if len(bx) == 0 && len(nx) == 0 {
		return Row{}, false
	}
	row := newRow(k, f.name, f.unit)
	row.NBase, row.NNew = len(bx), len(nx)
	if f.p90 {
		row.Base, row.New = stats.Quantile(bx, 0.9), stats.Quantile(nx, 0.9)
	} else {
		row.Base, row.New = median(bx), median(nx)
	}
	need := stats.MinRunsForInterval(conf)
	if f.p90 {
		need = max(need, stats.MinQuantileSize(0.9))
	}
	row.Need = need
	var c stats.Comparison
	switch {
	case paired:
		xn, _, _ := stats.Pair(nr, br)
		if len(xn) < need {
			row.NBase, row.NNew = len(xn), len(xn)
			row.Verdict = TooFew
			return row, true
		}
		if f.p90 {
			c = stats.CompareQuantileRounds(nr, br, 0.9, conf)
		} else {
			c = stats.CompareRounds(nr, br, conf)
		}
	case len(bx) < need || len(nx) < need:
		row.Verdict = TooFew
		return row, true
	case f.p90:
		c = stats.CompareQuantile(nx, bx, 0.9, conf)
	default:
		c = stats.Compare(nx, bx, conf)
	}
	fill(&row, c)
	if c.Test == stats.PairedWilcoxon {
		row.NBase, row.NNew = c.NA, c.NB
	}
	return row, true
}

// compareValues compares two unpaired samples (idle instances).
func compareValues(k key, name, unit string, b, n []float64, conf float64) Row {
	row := newRow(k, name, unit)
	row.Base, row.New, row.NBase, row.NNew = median(b), median(n), len(b), len(n)
	need := stats.MinRunsForInterval(conf)
	row.Need = need
	if len(b) < need || len(n) < need {
		row.Verdict = TooFew
		return row
	}
	fill(&row, stats.Compare(n, b, conf))
	return row
}

func newRow(k key, name, unit string) Row {
	return Row{Arm: k.arm, Budget: k.budget, Figure: name, Unit: unit,
		Ratio: math.NaN(), Low: math.NaN(), High: math.NaN(), P: math.NaN(), RawP: math.NaN()}
}

func fill(row *Row, c stats.Comparison) {
	row.Ratio, row.Low, row.High = c.Ratio, finite(c.RatioLow), finite(c.RatioHigh)
	if !(row.Low > 0) {
		row.Low, row.High = math.NaN(), math.NaN()
	}
	row.RawP, row.Test = c.P, c.Test
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	return stats.MedianCI(xs, stats.DefaultConfidence).Value
}
