package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/coldstart-go/coldstart/builds"
	"github.com/coldstart-go/coldstart/campaign"
	"github.com/coldstart-go/coldstart/cmd/internal/cliopts"
	"github.com/coldstart-go/coldstart/prober"
)

// serverOptions are the flags every measuring command shares: those steady
// shares too (cliopts.Common), and coldstart's own on how to start and
// probe the servers.
type serverOptions struct {
	cliopts.Common
	Prebuilt  string
	Runtimes  []string
	Probe     string
	ProbeBody string
	Dir       string
	Addr      string
	// The start arms (prebound, snapshot): which build they start, and
	// the snapshot's warm-up calls.
	StartFrom      string
	SnapshotWarmup int
	// Prebuilt images measured as arms, and whether the probe's
	// request is a secret kept out of everything written.
	Images        []string
	SecretRequest bool
	// A method probe's schema (else the server's reflection) and
	// metadata.
	Protoset      string
	Protos        []string
	ImportPaths   []string
	ProbeMetadata []string
	// TLS for the probes: --tls, or a grpcs://, https:// or h3:// probe, with
	// these files and names.
	TLS cliopts.TLS
	// notes go into the results file's provenance (coldstart gate --base:
	// which commit each side was built from).
	notes map[string]string
}

// defaultArms are the arms coldstart run and density measure when --arms
// is not given; pgo joins them with a named profile source
// (cliopts.WithPGOArm).
var defaultArms = []string{"default", "static", "upx", "image"}

func newServerOptions(arms []string) serverOptions {
	return serverOptions{
		Common:    cliopts.New("coldstart", arms, campaign.StartArms...),
		Probe:     "health",
		Runtimes:  []string{"runc"},
		StartFrom: "default",
	}
}

func (o *serverOptions) bind(cmd *cobra.Command) {
	o.Common.Bind(cmd, "prebound and snapshot start the --start-from build with a socket bound by coldstart, or restored from a CRIU checkpoint")
	f := cmd.Flags()
	f.StringVar(&o.StartFrom, "start-from", o.StartFrom, "the build arm that the prebound and snapshot arms start")
	f.IntVar(&o.SnapshotWarmup, "snapshot-warmup", 0, "calls (readiness probes, each over a fresh connection) the server answers before it is checkpointed (0 = none)")
	f.StringVar(&o.Prebuilt, "prebuilt", "", "measure the arms coldstart build --out-dir copied into this directory, with their build records, instead of building (for a machine without Go; without PKG they are taken as the sample server)")
	f.StringSliceVar(&o.Runtimes, "runtime", o.Runtimes, "what starts the image arm: runc, crun, docker or podman (the engines need a working daemon); a list measures the image arm once per runtime, interleaved: image under the first, image-RUNTIME under each other")
	f.StringVar(&o.Probe, "probe", o.Probe, "readiness probe: health, /pkg.Svc/Method, grpcs://127.0.0.1[/pkg.Svc/Method], http://127.0.0.1/path, https://127.0.0.1/path, h2c://127.0.0.1/path, h3://127.0.0.1/path (HTTP/3 over QUIC, UDP) or tcp")
	f.StringVar(&o.ProbeBody, "probe-request", "", "request for a /pkg.Svc/Method probe: JSON, or @FILE of binary protobuf")
	f.StringVar(&o.Dir, "dir", "", "the server's working directory (\"\" = this one)")
	f.StringVar(&o.Addr, "addr", "", "probe this fixed host:port instead of a free port (for servers that choose their own)")
	f.StringArrayVar(&o.Images, "image", nil, "NAME=LAYOUT|TARBALL|REF: a prebuilt image measured as arm NAME under runc (repeatable; without --arms, only the images)")
	f.BoolVar(&o.SecretRequest, "secret-request", false, "the --probe-request body is a secret: never written to results, reports or -v output")
	f.StringVar(&o.Protoset, "protoset", "", "a /pkg.Svc/Method probe's types from this FileDescriptorSet (protoc --descriptor_set_out --include_imports) instead of the server's reflection service")
	f.StringArrayVar(&o.Protos, "proto", nil, "a /pkg.Svc/Method probe's types from this .proto file, compiled in process (repeatable; no protoc needed)")
	f.StringSliceVarP(&o.ImportPaths, "import-paths", "i", nil, "with --proto: directories its imports are found in, comma-separated or repeated (the file's own directory is searched too)")
	f.StringArrayVar(&o.ProbeMetadata, "probe-metadata", nil, "KEY=VALUE metadata sent with each /pkg.Svc/Method probe and its reflection requests (repeatable; values are redacted in results)")
	o.TLS.Bind(cmd, "probe over TLS: a new TLS client per probe, never resuming a session, its handshake the tls_handshake phase (grpcs://, https:// and h3:// probes imply it; over h3 the phase is the QUIC handshake)",
		"the probe URL's host, else the address dialled")
	cmd.MarkFlagsMutuallyExclusive("proto", "protoset")
}

func (o *serverOptions) validate() error {
	if err := o.Common.Validate(); err != nil {
		return err
	}
	if len(o.Images) > 0 && !o.Arms.Given() && !o.Bin.Given() {
		o.Arms.Names = nil // --image alone: only the images
	}
	if o.Prebuilt != "" && (o.Bin.Given() || o.Instrument || o.PGOProfile != "") {
		return fmt.Errorf("--prebuilt %s: the arms are built already; --bin, --instrument and --pgo-profile do not apply", o.Prebuilt)
	}
	if _, _, _, err := o.armLists(); err != nil {
		return err
	}
	if o.SnapshotWarmup < 0 {
		return fmt.Errorf("--snapshot-warmup: %d, want 0 or more", o.SnapshotWarmup)
	}
	for i, rt := range o.Runtimes {
		switch {
		case !slices.Contains([]string{"runc", "crun", "docker", "podman"}, rt):
			return fmt.Errorf("--runtime: %q, want runc, crun, docker or podman", rt)
		case slices.Contains(o.Runtimes[:i], rt):
			return fmt.Errorf("--runtime: %s twice", rt)
		}
	}
	if len(o.Runtimes) == 0 {
		return errors.New("--runtime: none given, want runc, crun, docker or podman")
	}
	if (len(o.Runtimes) > 1 || o.Runtimes[0] != "runc") && !slices.Contains(o.Arms.Names, builds.ImageArm) && len(o.Images) == 0 {
		return fmt.Errorf("--runtime %s: starts image arms, and neither the image arm (--arms %s) nor an --image is measured; add image to --arms",
			strings.Join(o.Runtimes, ","), strings.Join(o.Arms.Names, ","))
	}
	if _, err := prober.ParseTemplate(o.ServerArgs); err != nil {
		return err
	}
	if _, err := o.checker(); err != nil {
		return err
	}
	images, err := o.images()
	if err != nil {
		return err
	}
	arms := append([]string(nil), o.Arms.Names...)
	for _, b := range o.Bin.Named {
		arms = append(arms, b.Name)
	}
	for _, ia := range images {
		arms = append(arms, ia.Name)
	}
	return o.CheckArms(arms)
}

// images parses --image.
func (o *serverOptions) images() ([]campaign.ImageArm, error) {
	var images []campaign.ImageArm
	for _, s := range o.Images {
		ia, err := campaign.ParseImageArm(s)
		if err != nil {
			return nil, fmt.Errorf("--image: %w", err)
		}
		images = append(images, ia)
	}
	return images, nil
}

// armLists splits --arms into the arms to build and the start arms
// (prebound, snapshot), which start the --start-from build: it is built
// even when not listed (hide: then it is not measured itself).
func (o *serverOptions) armLists() (build, start []string, hide bool, err error) {
	build, start, hide = campaign.SplitStartArms(o.Arms.Names, o.StartFrom)
	if len(start) > 0 && slices.Contains(campaign.StartArms, o.StartFrom) {
		return nil, nil, false, fmt.Errorf("--start-from: %q is a start arm; name a build arm (default, static, upx, pgo)", o.StartFrom)
	}
	if _, err := builds.ParseArms(o.StartFrom); len(start) > 0 && err != nil {
		return nil, nil, false, fmt.Errorf("--start-from: %w", err)
	}
	return build, start, hide, nil
}
