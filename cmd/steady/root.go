package main

import (
	"github.com/spf13/cobra"

	"github.com/coldstart-go/coldstart/internal/leftovers"
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
	root.AddCommand(newRunCmd(runSteady))
	return root
}
