package builds

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Options configure the builders made by New and BuildAll. The zero value
// builds into the default cache, quietly, with upx's default level and a
// collected PGO profile.
type Options struct {
	// CacheDir holds one directory per build key ("" = DefaultCacheDir()).
	CacheDir string
	// NoCache builds every arm afresh into a new temporary directory under
	// CacheDir, and does not record it.
	NoCache bool
	// OutDir, when set, receives a copy of each artifact named
	// <package>-<arm>; Artifact.Path then points there ("" = leave artifacts
	// in the cache).
	OutDir string
	// Prebuilt, when set, is a directory an earlier build's OutDir filled:
	// arms are loaded from there (see LoadPrebuilt), nothing is built.
	Prebuilt string

	// Go is the go command ("" = "go" from PATH).
	Go string
	// UPX is the upx command ("" = "upx" from PATH).
	UPX string
	// UPXLevel selects upx's compression ("" = upx's default level).
	UPXLevel UPXLevel

	// PGOProfile is a CPU profile (pprof) for the pgo arm ("" = collect one
	// by running the default arm under load for PGODuration).
	PGOProfile string
	// PGODuration is how long the collected profile samples (0 = 10 s;
	// rounded up to whole seconds, what /debug/pprof/profile accepts).
	PGODuration time.Duration
	// CollectProfile collects the pgo arm's profile when PGOProfile is ""
	// and none is stored for these sources (nil = the pgo arm needs
	// PGOProfile). Package pgocollect provides one; builds itself runs
	// nothing it builds.
	CollectProfile ProfileCollector
	// ProfileLoad says, in words, how CollectProfile starts the server and
	// what it loads it with (its arguments, environment and load, as
	// pgocollect.Config.Load gives them; "" = Echo calls, or health
	// checks, with no arguments). The progress line says it, and it is
	// part of the collected profile's cache key, so that a profile taken
	// under one load is not reused for another.
	ProfileLoad string

	// Instrument compiles the debug hook into the main package (see
	// HookFile): with $COLDSTART_DEBUG_ADDR set, the server then serves
	// /debug/pprof/profile and /debug/runtime there. Off by default; it
	// changes the cache key and sets Artifact.Instrumented.
	Instrument bool

	// Progress gets one line per arm (built, or reused from the cache) and
	// the PGO collection's steps (nil = quiet).
	Progress io.Writer
	// Verbose also writes each command line run to Progress (os.Stderr when
	// Progress is nil), so a build can be replayed by hand.
	Verbose bool

	sh *shared // memo shared by the builders of one BuildAll/New call
}

// DefaultCacheDir is ${XDG_CACHE_HOME:-$HOME/.cache}/coldstart/builds.
func DefaultCacheDir() string {
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			home = os.TempDir()
		}
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "coldstart", "builds")
}

func (o Options) withDefaults() Options {
	if o.CacheDir == "" {
		o.CacheDir = DefaultCacheDir()
	}
	if o.Go == "" {
		o.Go = "go"
	}
	if o.UPX == "" {
		o.UPX = "upx"
	}
	if o.UPXLevel == "" {
		o.UPXLevel = UPXDefault
	}
	if o.PGODuration <= 0 {
		o.PGODuration = 10 * time.Second
	}
	if o.sh == nil {
		o.sh = newShared()
	}
	return o
}

// progress writes one progress line, if anyone listens.
func (o Options) progress(format string, args ...any) {
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, format+"\n", args...)
	}
}

// cmdLog is where command lines go under Verbose (nil = nowhere).
func (o Options) cmdLog() io.Writer {
	if !o.Verbose {
		return nil
	}
	if o.Progress != nil {
		return o.Progress
	}
	return os.Stderr
}

// UPXLevel is upx's compression level; it is a pflag.Value for --upx-level.
type UPXLevel string

// The offered levels. --brute is not offered: it packs for ~10 minutes and
// gives the same bytes as --best --lzma.
const (
	UPXDefault UPXLevel = "default" // upx's own default: seconds for a 13 MB server
	UPXBest    UPXLevel = "best"    // --best: minutes on 2 cores
	UPXLZMA    UPXLevel = "lzma"    // --lzma: smallest, slowest to unpack
)

func (l *UPXLevel) String() string { return string(*l) }

// Type names the flag's value kind in help text.
func (l *UPXLevel) Type() string { return "level" }

// Set accepts default, best or lzma.
func (l *UPXLevel) Set(s string) error {
	switch UPXLevel(s) {
	case UPXDefault, UPXBest, UPXLZMA:
		*l = UPXLevel(s)
		return nil
	}
	return fmt.Errorf("unknown upx level %q (known: default, best, lzma)", s)
}

// flags are upx's command-line flags for the level.
func (l UPXLevel) flags() []string {
	switch l {
	case UPXBest:
		return []string{"--best"}
	case UPXLZMA:
		return []string{"--lzma"}
	}
	return nil
}

// shared memoizes what several arms of one call need: package listings,
// the Go and upx versions, the PGO profile.
type shared struct {
	mu      sync.Mutex
	pkgs    map[string]listing
	goEnv   map[string]string // by the directory go runs in
	upx     map[string]string
	profile *profileInfo
}

func newShared() *shared {
	return &shared{pkgs: map[string]listing{}, goEnv: map[string]string{}, upx: map[string]string{}}
}
