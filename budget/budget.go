// Package budget runs a process inside a container-shaped CPU and memory
// budget: a CPU set (like taskset), a cgroup CPU quota and a cgroup memory
// limit, on cgroup v1 or v2 through containerd/cgroups/v3.
//
// A budget list, as the --budget flag takes it, is items separated by ';':
//
//	cpus=0;cpus=0-1;cores=0.5;cores=1,mem=512Mi;max
//
// Each item is "max" (no limit) or comma-separated keys:
//
//	cpus=LIST  CPU set in the kernel's list format, as taskset -c takes it:
//	           0, 0-1, 0,2 or 0-3,6 (numbers and ranges; a bare number
//	           after a comma continues the CPU list)
//	cores=N    cgroup CPU quota in cores: 0.5, 1, 1.5, or Kubernetes
//	           millicores 500m (at least 0.01: the kernel's 1 ms minimum
//	           per 100 ms period)
//	mem=SIZE   cgroup memory limit (and the same memory+swap limit, so it
//	           cannot swap): bytes, or a number with a unit in the one
//	           size grammar (internal/size): Ki/KiB, Mi/MiB, Gi/GiB, Ti/TiB
//	           (powers of 1024) or kB, MB, GB (powers of 1000), e.g.
//	           256Mi or 1.5Gi
//
// A CPU set alone needs no cgroup: the server's CPU affinity is set from its
// first instruction. cores= and mem= need a writable cgroup hierarchy: root,
// or on cgroup v2 a subtree delegated to this user, found by itself under
// systemd user delegation or named with UseParent (see delegatedParent).
package budget

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/coldstart-go/coldstart/internal/cpulist"
	"github.com/coldstart-go/coldstart/internal/size"
)

// Budget is one CPU and memory budget. The zero value is "max": no limit.
type Budget struct {
	// CPUs is the CPU set the process may run on (nil = any).
	CPUs []int `json:"cpus,omitempty"`
	// Cores is a cgroup CPU quota in cores, e.g. 0.5 (0 = no quota).
	Cores float64 `json:"cores,omitempty"`
	// MemBytes is a cgroup memory limit in bytes (0 = no limit).
	MemBytes int64 `json:"mem_bytes,omitempty"`
}

// Max is the budget with no limit.
var Max = Budget{}

// IsMax reports whether b sets no limit at all.
func (b Budget) IsMax() bool {
	return len(b.CPUs) == 0 && b.Cores == 0 && b.MemBytes == 0
}

// cfsPeriod is the CFS period a quota is expressed in: 100 ms in µs, the
// kernel's default (and Kubernetes').
const cfsPeriod = 100000

// CFSQuota is b's CPU quota as the kernel takes it: quota µs of CPU time
// per period µs (0 quota = none). Every cgroup coldstart writes, its own or
// runc's, gets it from here.
func (b Budget) CFSQuota() (quotaUS int64, periodUS uint64) {
	if b.Cores <= 0 {
		return 0, cfsPeriod
	}
	return int64(b.Cores*cfsPeriod + 0.5), cfsPeriod
}

// Complement is the CPUs of all that are not in taken, or all when that
// leaves none: where a prober or load generator runs beside a server
// pinned to taken.
func Complement(all, taken []int) []int {
	if len(taken) == 0 {
		return all
	}
	in := map[int]bool{}
	for _, c := range taken {
		in[c] = true
	}
	var out []int
	for _, c := range all {
		if !in[c] {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return all
	}
	return out
}

// NeedsCgroup reports whether b sets a CPU quota or a memory limit, which
// only a cgroup can enforce. A CPU set alone does not need one.
func (b Budget) NeedsCgroup() bool { return b.Cores != 0 || b.MemBytes != 0 }

// String renders the budget in the syntax Parse reads ("max" when empty),
// keys in the order cpus, cores, mem: "cpus=0-1,cores=0.5,mem=256Mi".
func (b Budget) String() string {
	if b.IsMax() {
		return "max"
	}
	var parts []string
	if len(b.CPUs) > 0 {
		parts = append(parts, "cpus="+FormatCPUList(b.CPUs))
	}
	if b.Cores != 0 {
		parts = append(parts, "cores="+strconv.FormatFloat(b.Cores, 'f', -1, 64))
	}
	if b.MemBytes != 0 {
		parts = append(parts, "mem="+FormatSize(b.MemBytes))
	}
	return strings.Join(parts, ",")
}

// GOMAXPROCS predicts the GOMAXPROCS a Go ≥1.25 server picks by itself
// inside b: the number of CPUs it may run on (b.CPUs, or this process's
// affinity when b sets none), lowered to max(2, ceil(cores)) by a CPU quota.
// It does not know about a GOMAXPROCS or GODEBUG=containermaxprocs=0 in the
// server's environment, a go.mod at go ≤1.24, or quotas on the cgroups
// above the budget's own; read the server's real value where it matters.
func (b Budget) GOMAXPROCS() int {
	n := len(b.CPUs)
	if n == 0 {
		if allowed, err := AllowedCPUs(); err == nil {
			n = len(allowed)
		}
	}
	if b.Cores > 0 {
		n = min(n, max(2, int(math.Ceil(b.Cores))))
	}
	return n
}

// CPULimit is how many CPUs' worth of time a process inside b can use at
// most: the CPUs it may run on (b.CPUs, or this process's affinity when b
// sets none), lowered to b.Cores by a CPU quota. A server's CPU use set
// against it says whether a load saturated the server (see
// record.SteadyRow.ServerCPUShare). 0 when neither is known.
func (b Budget) CPULimit() float64 {
	n := float64(len(b.CPUs))
	if n == 0 {
		if allowed, err := AllowedCPUs(); err == nil {
			n = float64(len(allowed))
		}
	}
	if b.Cores > 0 && (n == 0 || b.Cores < n) {
		n = b.Cores
	}
	return n
}

// Flag is the flag name that usage errors from Parse name.
const Flag = "--budget"

// ErrUsage marks a budget the user wrote wrong or the machine cannot honour
// (unknown key, malformed size, CPUs it does not have, quota ≤ 0).
var ErrUsage = errors.New("invalid budget")

type usageError struct {
	msg    string
	noFlag bool // pflag already says which flag: `invalid argument "x" for "--budget" flag: ...`
}

func (e *usageError) Error() string {
	if e.noFlag {
		return e.msg
	}
	return Flag + ": " + e.msg
}

func (e *usageError) Is(target error) bool { return target == ErrUsage }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// minCores is the smallest quota the kernel accepts: 1 ms per 100 ms period.
const minCores = 0.01

// Parse reads a budget list: items separated by ';', as the package comment
// describes. Empty items (a trailing ';') are skipped; an empty list is an
// error. Each budget is checked against this machine: a CPU set must lie
// inside the CPUs this process may use (sched_getaffinity), and a quota may
// not exceed them. Errors name the --budget flag and what it takes.
func Parse(list string) ([]Budget, error) {
	var out []Budget
	for item := range strings.SplitSeq(list, ";") {
		if strings.TrimSpace(item) == "" {
			continue
		}
		b, err := ParseOne(item)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	if len(out) == 0 {
		return nil, usagef("empty budget list %q (want items separated by ';', e.g. 'cpus=0;cores=0.5,mem=256Mi;max')", list)
	}
	return out, nil
}

// ParseOne reads one budget item ("cpus=0-1,mem=256Mi", "max") and checks
// it against this machine like Parse.
func ParseOne(item string) (Budget, error) {
	b, err := parseItem(item)
	if err != nil {
		return Budget{}, err
	}
	if err := b.Validate(); err != nil {
		return Budget{}, err
	}
	return b, nil
}

const keysHelp = "cpus=LIST, cores=N, mem=SIZE, or max"

func parseItem(item string) (Budget, error) {
	item = strings.TrimSpace(item)
	if item == "max" {
		return Budget{}, nil
	}
	var (
		b    Budget
		seen = map[string]bool{}
		key  string
	)
	for tok := range strings.SplitSeq(item, ",") {
		tok = strings.TrimSpace(tok)
		k, v, ok := strings.Cut(tok, "=")
		if !ok {
			// A bare CPU number or range continues a cpus= list: "cpus=0,2".
			if key == "cpus" && tok != "" {
				cpus, err := cpulist.Parse(tok)
				if err != nil {
					return Budget{}, usagef("%v in %q", err, item)
				}
				b.CPUs = append(b.CPUs, cpus...)
				continue
			}
			if tok == "max" {
				return Budget{}, usagef("max in %q: max stands alone (it means no limit)", item)
			}
			return Budget{}, usagef("malformed item %q: want %s, e.g. cores=1,mem=512Mi", item, keysHelp)
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if seen[k] {
			return Budget{}, usagef("%s given twice in %q", k, item)
		}
		seen[k] = true
		key = k
		switch k {
		case "cpus":
			cpus, err := cpulist.Parse(v)
			if err != nil {
				return Budget{}, usagef("%v in %q", err, item)
			}
			b.CPUs = cpus
		case "cores":
			c, err := parseCores(v)
			if err != nil {
				return Budget{}, usagef("%v in %q", err, item)
			}
			b.Cores = c
		case "mem":
			n, err := ParseSize(v)
			if err != nil {
				return Budget{}, usagef("%v in %q", err, item)
			}
			if n <= 0 {
				return Budget{}, usagef("memory limit %q in %q must be > 0", v, item)
			}
			b.MemBytes = n
		default:
			return Budget{}, usagef("unknown key %q in %q (known: %s)", k, item, keysHelp)
		}
	}
	if len(b.CPUs) > 0 {
		slices.Sort(b.CPUs)
		if i := firstDup(b.CPUs); i >= 0 {
			return Budget{}, usagef("CPU %d listed twice in %q", b.CPUs[i], item)
		}
	}
	return b, nil
}

func firstDup(sorted []int) int {
	for i := 1; i < len(sorted); i++ {
		if sorted[i] == sorted[i-1] {
			return i
		}
	}
	return -1
}

// Validate checks b against this machine: its CPU set lies inside the CPUs
// this process may use, its quota is at least 0.01 cores and no more than
// the CPUs it may run on, and its memory limit is positive.
func (b Budget) Validate() error {
	if b.Cores < 0 || (b.Cores > 0 && b.Cores < minCores) || math.IsNaN(b.Cores) || math.IsInf(b.Cores, 0) {
		return usagef("CPU quota cores=%s in %q must be at least %g (the kernel's 1 ms per 100 ms period)",
			strconv.FormatFloat(b.Cores, 'f', -1, 64), b.String(), minCores)
	}
	if b.MemBytes < 0 {
		return usagef("memory limit in %q must be > 0", b.String())
	}
	allowed, err := AllowedCPUs()
	if err != nil {
		return err
	}
	for _, c := range b.CPUs {
		if c < 0 || !slices.Contains(allowed, c) {
			return usagef("CPU %d in %q is not one this machine lets us use (allowed: %s)", c, b.String(), FormatCPUList(allowed))
		}
	}
	avail := len(allowed)
	where := "CPUs this process may use (" + FormatCPUList(allowed) + ")"
	if len(b.CPUs) > 0 {
		avail = len(b.CPUs)
		where = "CPUs in its CPU set"
	}
	if b.Cores > float64(avail) {
		return usagef("CPU quota cores=%s in %q exceeds the %d %s: it would limit nothing",
			strconv.FormatFloat(b.Cores, 'f', -1, 64), b.String(), avail, where)
	}
	return nil
}

// AllowedCPUs returns the CPUs this process was allowed to run on when it
// started (sched_getaffinity, read once at package init), so a prober that
// later pins itself away from the server's CPUs can still place servers on
// them.
func AllowedCPUs() ([]int, error) {
	if startAffinityErr != nil {
		return nil, startAffinityErr
	}
	return append([]int(nil), startAffinity...), nil
}

var startAffinity, startAffinityErr = readAffinity()

func readAffinity() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("read CPU affinity: %w", err)
	}
	return cpuSetList(&set), nil
}

func cpuSetList(set *unix.CPUSet) []int {
	var out []int
	for c := 0; c < len(set)*64; c++ {
		if set.IsSet(c) {
			out = append(out, c)
		}
	}
	return out
}

// FormatCPUList renders CPUs in the kernel's list format ("0-2,5"), the
// form taskset -c, cpuset.cpus and Cpus_allowed_list use.
func FormatCPUList(cpus []int) string {
	s := slices.Clone(cpus)
	slices.Sort(s)
	s = slices.Compact(s)
	var parts []string
	for i := 0; i < len(s); {
		j := i
		for j+1 < len(s) && s[j+1] == s[j]+1 {
			j++
		}
		switch {
		case j == i:
			parts = append(parts, strconv.Itoa(s[i]))
		default:
			parts = append(parts, fmt.Sprintf("%d-%d", s[i], s[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

func parseCores(s string) (float64, error) {
	var (
		c   float64
		err error
	)
	if m, ok := strings.CutSuffix(s, "m"); ok {
		var n int64
		n, err = strconv.ParseInt(m, 10, 64)
		c = float64(n) / 1000
	} else {
		c, err = strconv.ParseFloat(s, 64)
	}
	if err != nil || math.IsNaN(c) || math.IsInf(c, 0) {
		return 0, fmt.Errorf("malformed CPU quota cores=%q (want cores, e.g. 0.5 or 2, or millicores, e.g. 500m)", s)
	}
	if c < minCores {
		return 0, fmt.Errorf("CPU quota cores=%s must be at least %g (the kernel's 1 ms per 100 ms period)", s, minCores)
	}
	return c, nil
}

// ParseSize reads a size in bytes in the one size grammar (see
// internal/size): 256Mi, 1.5Gi, 64KiB, 3MB, or plain bytes.
func ParseSize(s string) (int64, error) { return size.Parse(s) }

// FormatSize renders n bytes as 256Mi where a binary unit divides it (see
// internal/size); ParseSize reads it back.
func FormatSize(n int64) string { return size.Format(n) }

// List is a budget list as a pflag.Value for --budget: each use of the
// flag adds its items ("--budget 'cpus=0;max' --budget cores=0.5"); the
// first use replaces the default.
type List struct {
	Budgets []Budget
	set     bool
}

// String renders the list as Parse reads it, items joined by ';'.
func (l *List) String() string {
	if l == nil {
		return ""
	}
	s := make([]string, len(l.Budgets))
	for i, b := range l.Budgets {
		s[i] = b.String()
	}
	return strings.Join(s, ";")
}

// Set parses v and adds its budgets (replacing the default on first use).
// Its errors leave the flag's name to pflag, which prefixes it.
func (l *List) Set(v string) error {
	bs, err := Parse(v)
	if ue := (*usageError)(nil); errors.As(err, &ue) {
		return &usageError{msg: ue.msg, noFlag: true}
	}
	if err != nil {
		return err
	}
	if !l.set {
		l.Budgets, l.set = nil, true
	}
	l.Budgets = append(l.Budgets, bs...)
	return nil
}

// Type names the flag's value in help text.
func (l *List) Type() string { return "budgets" }
