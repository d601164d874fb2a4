package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/coldstart-go/coldstart/internal/leftovers"
	"github.com/coldstart-go/coldstart/internal/provenance"
)

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "steady",
		Short: "Measure a warm Go server per request: latency, throughput, CPU and allocation per call, memory",
		Long: `steady starts each build of a server, warms it, loads it over gRPC, HTTP/1.1 or h2c
(closed loop, streaming, open loop at a fixed rate, or a rising ramp) and meters the
server from outside: CPU per call from /proc, peak RSS, RSS and PSS, and for Go
servers that serve runtime metrics, allocated bytes per call and GC cycles.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		// What dead runs left is swept on first use of the state file, as
		// coldstart does; the sweep says what it removed here.
		PersistentPreRun: func(cmd *cobra.Command, _ []string) { leftovers.SweepLog = cmd.ErrOrStderr() },
	}
	root.AddCommand(newRunCmd(runSteady), newVersionCmd())
	// --version prints what the version command prints; declared here so
	// that cobra does not take -v for it, which means verbose on run.
	root.Version = provenance.ToolVersion()
	root.SetVersionTemplate(provenance.VersionText("steady"))
	root.Flags().Bool("version", false, "print the version, the commit and the Go version, and exit (as the version command)")
	return root
}

// newVersionCmd prints provenance.VersionText: the version results
// record as tool_version, the commit and the Go toolchain.
func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print steady's version, the commit it was built from and the Go version",
		Long: `version prints the version results files record as tool_version: the module version
go install or go build stamped in the binary, or "devel" and the commit for a build
that names none (go run, -buildvcs=false); then the full commit, "+dirty" when the
checkout was modified, and the Go toolchain, OS and architecture it was built with.
steady --version prints the same.`,
		Example: "  steady version",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := io.WriteString(cmd.OutOrStdout(), provenance.VersionText("steady"))
			return err
		},
	}
}
