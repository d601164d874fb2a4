package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/coldstart-go/coldstart/builds"
	"github.com/coldstart-go/coldstart/campaign"
	"github.com/coldstart-go/coldstart/internal/provenance"
	"github.com/coldstart-go/coldstart/internal/render"
	"github.com/coldstart-go/coldstart/internal/runas"
	"github.com/coldstart-go/coldstart/prober"
)

// serverOptions are the flags every measuring command shares: what to
// build, how to start it, how to probe it, where results go.
type serverOptions struct {
	Pkg         string
	Bin         string
	Prebuilt    string
	Arms        string
	armsSet     bool      // --arms was given
	stderr      io.Writer // the command's error writer: progress, logs, notes
	UPXLevel    string
	PGOProfile  string
	PGODuration time.Duration
	Instrument  bool
	Runtime     string
	Probe       string
	ProbeBody   string
	Env         []string
	Dir         string
	Addr        string
	ServerArgs  []string
	Output      render.Format
	ResultsDir  string
	Verbose     bool
	Quiet       bool
	// The start arms (prebound, snapshot): which build they start, and
	// the snapshot's warm-up calls.
	StartFrom      string
	SnapshotWarmup int
	// Safety (issue 20): who process arms run as, prebuilt images as arms,
	// secrets kept out of what is written.
	RunAs         string
	Images        []string
	SecretRequest bool
	HashSecrets   bool

	extraPositional []string
	armsChanged     bool
}

func (o *serverOptions) defaults() {
	o.Arms = "default,static,upx,pgo,image"
	o.UPXLevel = "default"
	o.PGODuration = 10 * time.Second
	o.Probe = "health"
	o.Runtime = "runc"
	o.Output = render.Table
	o.ResultsDir = "results"
	o.StartFrom = "default"
}

func (o *serverOptions) bind(cmd *cobra.Command) {
	f := cmd.Flags()
	f.Var(setFlag{&o.Arms, &o.armsSet}, "arms", "arms to build and measure, comma-separated (known: default, static, upx, pgo, image; and prebound, snapshot: the --start-from build started with a socket bound by coldstart, or restored from a CRIU checkpoint; with --bin the default is "+strings.Join(builds.BinaryArms, ",")+")")
	f.StringVar(&o.StartFrom, "start-from", o.StartFrom, "the build arm that the prebound and snapshot arms start")
	f.IntVar(&o.SnapshotWarmup, "snapshot-warmup", 0, "calls (readiness probes, each over a fresh connection) the server answers before it is checkpointed (0 = none)")
	f.StringVar(&o.Bin, "bin", "", "a prebuilt server binary instead of PKG (arms default and upx only)")
	f.StringVar(&o.Prebuilt, "prebuilt", "", "measure the arms coldstart build --out-dir copied into this directory, with their build records, instead of building (for a machine without Go; without PKG they are taken as the sample server)")
	f.StringVar(&o.UPXLevel, "upx-level", o.UPXLevel, "upx arm compression: default, best or lzma")
	f.StringVar(&o.PGOProfile, "pgo-profile", "", "CPU profile for the pgo arm (\"\" = collect one under load)")
	f.DurationVar(&o.PGODuration, "pgo-duration", o.PGODuration, "how long to load the default arm while collecting the pgo profile")
	f.BoolVar(&o.Instrument, "instrument", false, "compile the debug hook into PKG's arms (runtime metrics and pprof on $COLDSTART_DEBUG_ADDR); changes the binary, and the results say so")
	f.StringVar(&o.Runtime, "runtime", "runc", "what starts the image arm: runc, docker or podman (the engines need a working daemon)")
	f.StringVar(&o.Probe, "probe", o.Probe, "readiness probe: health, /pkg.Svc/Method, http://127.0.0.1/path, h2c://127.0.0.1/path or tcp")
	f.StringVar(&o.ProbeBody, "probe-request", "", "request for a /pkg.Svc/Method probe: JSON, or @FILE of binary protobuf")
	f.StringArrayVar(&o.Env, "env", nil, "extra environment for the server, K=V (repeatable)")
	f.StringVar(&o.Dir, "dir", "", "the server's working directory (\"\" = this one)")
	f.StringVar(&o.Addr, "addr", "", "probe this fixed host:port instead of a free port (for servers that choose their own)")
	f.VarP(&o.Output, "output", "o", "output format: table, json, csv or markdown")
	f.StringVar(&o.ResultsDir, "results-dir", o.ResultsDir, "directory for the raw results file")
	f.BoolVarP(&o.Verbose, "verbose", "v", false, "print every spawned command line to stderr")
	f.BoolVarP(&o.Quiet, "quiet", "q", false, "no progress lines on stderr")
	f.StringVar(&o.RunAs, "run-as", "", "user the servers run as: USER, UID[:GID] or root (\"\" = 65532:65532 when coldstart is root, else yourself)")
	f.StringArrayVar(&o.Images, "image", nil, "NAME=LAYOUT|TARBALL|REF: a prebuilt image measured as arm NAME under runc (repeatable; without --arms, only the images)")
	f.BoolVar(&o.SecretRequest, "secret-request", false, "the --probe-request body is a secret: never written to results, reports or -v output")
	f.BoolVar(&o.HashSecrets, "hash-secrets", false, "write a keyed hash beside each redacted secret, so runs with different values can be told apart")
}

func (o *serverOptions) validate() error {
	if o.Bin != "" && !o.armsSet {
		// A binary can only be itself or packed: measure those.
		o.Arms = strings.Join(builds.BinaryArms, ",")
	}
	if len(o.extraPositional) > 1 {
		return fmt.Errorf("want at most one PKG, got %q (server arguments go after --)", o.extraPositional)
	}
	if o.Bin != "" && o.Pkg != "" {
		return fmt.Errorf("--bin %s and PKG %s: give one or the other", o.Bin, o.Pkg)
	}
	if o.Prebuilt != "" && (o.Bin != "" || o.Instrument || o.PGOProfile != "") {
		return fmt.Errorf("--prebuilt %s: the arms are built already; --bin, --instrument and --pgo-profile do not apply", o.Prebuilt)
	}
	if _, _, _, err := o.armLists(); err != nil {
		return err
	}
	if o.SnapshotWarmup < 0 {
		return fmt.Errorf("--snapshot-warmup: %d, want 0 or more", o.SnapshotWarmup)
	}
	var level builds.UPXLevel
	if err := level.Set(o.UPXLevel); err != nil {
		return fmt.Errorf("--upx-level: %w", err)
	}
	switch o.Runtime {
	case "runc", "docker", "podman":
	default:
		return fmt.Errorf("--runtime: %q, want runc, docker or podman", o.Runtime)
	}
	if _, err := prober.ParseTemplate(o.ServerArgs); err != nil {
		return err
	}
	if _, err := o.checker(); err != nil {
		return err
	}
	for _, e := range o.Env {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
			return fmt.Errorf("--env: %q, want K=V", provenance.RedactEnv(e))
		}
	}
	if _, err := runas.Parse(o.RunAs); err != nil {
		return err
	}
	for _, s := range o.Images {
		if _, err := campaign.ParseImageArm(s); err != nil {
			return err
		}
	}
	return nil
}

func (o *serverOptions) progress() io.Writer {
	if o.Quiet {
		return nil
	}
	return o.errw()
}

// errw is where progress and notes go: the command's error writer
// (cmd.ErrOrStderr(), so tests can read it), stderr before one is set.
func (o *serverOptions) errw() io.Writer {
	if o.stderr == nil {
		return os.Stderr
	}
	return o.stderr
}

func (o *serverOptions) log() io.Writer {
	if o.Verbose {
		return o.errw()
	}
	return nil
}

// armLists splits --arms into the arms to build and the start arms
// (prebound, snapshot), which start the --start-from build: it is built
// even when not listed (hide: then it is not measured itself).
func (o *serverOptions) armLists() (build, start []string, hide bool, err error) {
	all := strings.Split(o.Arms, ",")
	for i := range all {
		all[i] = strings.TrimSpace(all[i])
	}
	build, start, hide = campaign.SplitStartArms(all, o.StartFrom)
	if len(start) > 0 && contains(campaign.StartArms, o.StartFrom) {
		return nil, nil, false, fmt.Errorf("--start-from: %q is a start arm; name a build arm (default, static, upx, pgo)", o.StartFrom)
	}
	if build, err = builds.ParseArms(strings.Join(build, ",")); err != nil {
		return nil, nil, false, fmt.Errorf("--arms: %w", err)
	}
	return build, start, hide, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// setFlag is a string flag that remembers whether it was given, so a
// default can depend on other flags.
type setFlag struct {
	v   *string
	set *bool
}

func (f setFlag) String() string {
	if f.v == nil {
		return ""
	}
	return *f.v
}
func (f setFlag) Set(s string) error { *f.v, *f.set = s, true; return nil }
func (f setFlag) Type() string       { return "string" }
