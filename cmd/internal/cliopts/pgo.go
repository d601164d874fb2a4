package cliopts

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/coldstart-go/coldstart/internal/grpcschema"
	"github.com/coldstart-go/coldstart/launch"
	"github.com/coldstart-go/coldstart/pgocollect"
	"github.com/coldstart-go/coldstart/prober"
	"github.com/coldstart-go/coldstart/steady"
)

// PGOLoad are the flags that say what loads the server while the pgo
// arm's profile is collected: the user's method (--pgo-call, with
// --pgo-data, --pgo-data-file, --pgo-metadata and --pgo-proto,
// --pgo-protoset, --pgo-import-paths for its types, as steady run's
// --call and its flags) or the user's command (--pgo-load). Neither =
// coldstart's Echo calls, health checks when the server has no Echo.
// They are --pgo-* rather than steady run's --call so that, on steady
// run, the profile's load and the measured load are told apart.
type PGOLoad struct {
	Command     string
	Call        string
	Data        string
	DataFile    string
	Metadata    []string
	Protoset    string
	Protos      []string
	ImportPaths []string
}

// Bind adds the --pgo-load and --pgo-call flags to f, bound to p.
func (p *PGOLoad) Bind(f *pflag.FlagSet) {
	f.StringVar(&p.Command, "pgo-load", "", "shell command that loads the server while the pgo profile is collected, instead of coldstart's Echo calls: started when the server is ready, given its address as {addr}, {host}, {port} or {socket}, killed (its process group) when the profile is fetched; exiting non-zero before that fails the pgo arm with its output's tail")
	f.StringVar(&p.Call, "pgo-call", "", "collect the pgo profile under calls of this gRPC method of yours, /pkg.Svc/Method (unary or server-streaming), instead of Echo; its requests, metadata and types as steady run's --call takes them: --pgo-data, --pgo-data-file, --pgo-metadata, --pgo-proto, --pgo-protoset, --pgo-import-paths")
	f.StringVar(&p.Data, "pgo-data", "", "with --pgo-call: the request as JSON (protojson; \"\" = the empty message)")
	f.StringVar(&p.DataFile, "pgo-data-file", "", "with --pgo-call: a file of JSON requests, one a line, taken in turn")
	f.StringArrayVar(&p.Metadata, "pgo-metadata", nil, "with --pgo-call: KEY=VALUE sent with every call (repeatable)")
	f.StringVar(&p.Protoset, "pgo-protoset", "", "with --pgo-call: the method's types from this FileDescriptorSet (\"\" = server reflection)")
	f.StringArrayVar(&p.Protos, "pgo-proto", nil, "with --pgo-call: the method's types from this .proto file, compiled in process (repeatable; \"\" = server reflection)")
	f.StringSliceVar(&p.ImportPaths, "pgo-import-paths", nil, "with --pgo-proto: directories its imports are found in")
}

// Validate checks the load flags together and with --pgo-profile.
func (p *PGOLoad) Validate(profile string) error {
	switch {
	case p.Command != "" && profile != "":
		return errors.New("--pgo-load with --pgo-profile: the profile is given, nothing is collected; give one or the other")
	case p.Call != "" && profile != "":
		return errors.New("--pgo-call with --pgo-profile: the profile is given, nothing is collected; give one or the other")
	case p.Command != "" && p.Call != "":
		return errors.New("--pgo-load with --pgo-call: give one load or the other")
	}
	if p.Call == "" {
		for name, set := range map[string]bool{"pgo-data": p.Data != "", "pgo-data-file": p.DataFile != "", "pgo-metadata": len(p.Metadata) > 0,
			"pgo-proto": len(p.Protos) > 0, "pgo-protoset": p.Protoset != "", "pgo-import-paths": len(p.ImportPaths) > 0} {
			if set {
				return fmt.Errorf("--%s: only with --pgo-call", name)
			}
		}
	}
	if p.Command != "" {
		if _, err := prober.ParseTemplate([]string{p.Command}); err != nil {
			return fmt.Errorf("--pgo-load: %w", err)
		}
	}
	if p.Data != "" && p.DataFile != "" {
		return errors.New("--pgo-data with --pgo-data-file: give one or the other")
	}
	if _, err := p.call(); err != nil {
		return err
	}
	return nil
}

// call is --pgo-call as a steady.Call (nil without it).
func (p *PGOLoad) call() (*steady.Call, error) {
	if p.Call == "" {
		return nil, nil
	}
	md, err := grpcschema.ParseMetadata(p.Metadata)
	if err != nil {
		return nil, fmt.Errorf("--pgo-metadata: %w", err)
	}
	c := &steady.Call{Method: p.Call, DataFile: p.DataFile, Metadata: md,
		Schema: grpcschema.Source{Protoset: p.Protoset, Protos: p.Protos, ImportPaths: p.ImportPaths}}
	if p.Data != "" {
		c.Data = [][]byte{[]byte(p.Data)}
	}
	return c, nil
}

// Config is how the pgo profile is collected: the server started by l
// with its argument template args and environment env under p's load.
// Call Validate first.
func (p *PGOLoad) Config(l launch.Launcher, args, env []string) pgocollect.Config {
	call, _ := p.call() // validated
	return pgocollect.Config{Launcher: l, Args: args, Env: env, Call: call, Command: p.Command}
}

// pgoConfig is how the pgo profile is collected: the server started as
// the arms are (its arguments, environment, by l) under the --pgo-* load.
func (c *Common) pgoConfig(l launch.Launcher) pgocollect.Config {
	return c.PGOLoad.Config(l, c.ServerArgs, c.Env)
}

// pgoFlags are the flags pgocollect.Config's fields come from, by the
// names its errors give them (steady.OptionError).
var pgoFlags = map[string]string{
	"Command":                 "--pgo-load",
	"Call":                    "--pgo-call",
	"Call.Method":             "--pgo-call",
	"Call.Data":               "--pgo-data",
	"Call.DataFile":           "--pgo-data-file",
	"Call.Metadata":           "--pgo-metadata",
	"Call.Schema.Protoset":    "--pgo-protoset",
	"Call.Schema.Protos":      "--pgo-proto",
	"Call.Schema.ImportPaths": "--pgo-import-paths",
}

// PGOFlagError is err with pgocollect's settings named by their flags
// (--pgo-load for Config.Command, --pgo-call for Config.Call.Method, ...).
func PGOFlagError(err error) error {
	var oe *steady.OptionError
	if err == nil || !errors.As(err, &oe) {
		return err
	}
	if _, ok := pgoFlags[oe.Option]; !ok {
		return err
	}
	return ReplaceMessage(err, oe, oe.Text(func(o string) string {
		if f, ok := pgoFlags[o]; ok {
			return f
		}
		return o
	}))
}

// WithPGOArm adds the pgo arm to the default arms when the pgo profile
// has a source the user named (--pgo-profile, --pgo-call, --pgo-load),
// and refuses such a source when --arms was given without pgo. The pgo
// arm is not a default arm otherwise: its profile would come from
// coldstart's own Echo calls, or from health checks alone on a server
// without Echo, which is not the service's traffic, and collecting it
// and rebuilding every package with it is the larger part of a first
// run (docs/arms.md). binGiven: the arms are prebuilt binaries, which
// have no pgo arm.
func WithPGOArm(arms []string, armsGiven, binGiven bool, profile string, load PGOLoad) ([]string, error) {
	flag := ""
	switch {
	case profile != "":
		flag = "--pgo-profile"
	case load.Call != "":
		flag = "--pgo-call"
	case load.Command != "":
		flag = "--pgo-load"
	}
	if flag == "" || binGiven || slices.Contains(arms, "pgo") {
		return arms, nil
	}
	if armsGiven {
		return nil, fmt.Errorf("%s: the pgo arm is not among --arms %s; add pgo to --arms, or leave --arms out", flag, strings.Join(arms, ","))
	}
	// Listed as the published campaign lists them: pgo before image.
	if i := slices.Index(arms, "image"); i >= 0 {
		return slices.Insert(slices.Clone(arms), i, "pgo"), nil
	}
	return append(slices.Clone(arms), "pgo"), nil
}
