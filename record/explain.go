package record

import "strings"

// The rows of `coldstart explain` (kinds "trace" and "explain_modules"),
// written by package explain and read here and by package report.

// PackageInit is one package's init, as the Go runtime traces it:
//
//	init PKG @T ms, D ms clock, B bytes, N allocs
//
// Times are milliseconds; the runtime truncates them (whole ms from 10 ms
// up, two significant digits below), so each carries its resolution.
type PackageInit struct {
	Package string  `json:"package"`
	AtMs    float64 `json:"at_ms"`    // start, from the runtime's start (runtime.main)
	ClockMs float64 `json:"clock_ms"` // wall time of the package's init functions
	Bytes   int64   `json:"bytes"`    // heap bytes allocated by them
	Allocs  int64   `json:"allocs"`   // heap allocations made by them
	// AtResMs and ClockResMs are the printed values' resolution: the true
	// value lies in [printed, printed+resolution).
	AtResMs    float64 `json:"at_res_ms"`
	ClockResMs float64 `json:"clock_res_ms"`
	// ArrivedMs is when coldstart read the line from the server's stderr,
	// in milliseconds from the launch's t0 (0 when not known).
	ArrivedMs float64 `json:"arrived_ms,omitempty"`
}

// EndMs is when the init ended, from the runtime's start (lower bound).
func (i PackageInit) EndMs() float64 { return i.AtMs + i.ClockMs }

// Trace is one traced cold start: the raw row of an explain campaign.
type Trace struct {
	Arm    string `json:"arm"`
	Budget string `json:"budget"`
	Run    int    `json:"run"`
	Warmup bool   `json:"warmup"`
	// FirstRPCMs and Phases are the cold start as `coldstart run` measures
	// it (from t0, immediately before the fork), with the traced phases
	// added: runtime_ready (runtime.main began, estimated from when the
	// init lines arrived) and inits_done (the last init ended).
	FirstRPCMs     float64       `json:"first_rpc_ms"`
	ReadyAttemptMs float64       `json:"ready_attempt_ms,omitempty"`
	Phases         []Phase       `json:"phases"`
	Inits          []PackageInit `json:"inits"`
	// OtherStderrLines counts the server's stderr lines that are not init
	// trace lines; FirstOtherLine is the first of them.
	OtherStderrLines int    `json:"other_stderr_lines"`
	FirstOtherLine   string `json:"first_other_line,omitempty"`
	Error            string `json:"error,omitempty"`
}

// The phases explain adds to a cold start's.
const (
	PhaseRuntimeReady = "runtime_ready" // runtime.main began: the runtime is up, inits start
	PhaseInitsDone    = "inits_done"    // the last package init ended: main.main begins
)

// Phase returns the named phase's time from t0 and whether it was seen.
func (t Trace) Phase(name string) (float64, bool) {
	for _, p := range t.Phases {
		if p.Name == name {
			return p.Ms, true
		}
	}
	return 0, false
}

// StdModule is the module name given to the standard library's packages.
const StdModule = "std"

// Modules maps a binary's packages to the modules that provide them, from
// the build info the Go linker embeds (what `go version -m` prints).
type Modules struct {
	// Binary is the file the build info was read from (for a UPX-packed
	// binary: the unpacked twin).
	Binary string `json:"binary"`
	// Main is the main module's path ("" without module info), and its
	// version ("(devel)" for a build in its own checkout).
	Main        string `json:"main"`
	MainVersion string `json:"main_version,omitempty"`
	// GoVersion is the toolchain that built it.
	GoVersion string `json:"go_version"`
	// Deps are the dependency modules, path → version.
	Deps map[string]string `json:"deps,omitempty"`
	// Note says what could not be read, and so what cannot be attributed
	// ("" when the build info was read).
	Note string `json:"note,omitempty"`
}

// Module names the module that provides pkg: StdModule for the standard
// library, the main module or the dependency whose path is the longest
// prefix of pkg, or "" when it cannot be told (no module info).
func (m Modules) Module(pkg string) string {
	if m.Main != "" && under(pkg, m.Main) {
		return m.Main
	}
	best := ""
	for p := range m.Deps {
		if under(pkg, p) && len(p) > len(best) {
			best = p
		}
	}
	if best != "" {
		return best
	}
	if isStd(pkg) {
		return StdModule
	}
	return ""
}

// Version is the version of module mod ("" for std).
func (m Modules) Version(mod string) string {
	if mod == m.Main && mod != "" {
		return m.MainVersion
	}
	return m.Deps[mod]
}

func under(pkg, mod string) bool {
	return pkg == mod || strings.HasPrefix(pkg, mod+"/")
}

// isStd: standard-library import paths have no dot in their first element
// (the go command's own rule); "main" is the main package of a build
// without modules, not the standard library.
func isStd(pkg string) bool {
	first, _, _ := strings.Cut(pkg, "/")
	return first != "main" && !strings.Contains(first, ".")
}
