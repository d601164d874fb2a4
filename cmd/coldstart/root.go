package main

import (
	"github.com/spf13/cobra"

	"github.com/coldstart-go/coldstart/internal/leftovers"
)

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "coldstart",
		Short: "Measure how each build of a Go gRPC server starts, serves and packs, for scale-to-zero",
		Long: `coldstart builds one Go main package several ways (default, pgo, static, upx, image),
starts each build as a fresh process many times and times spawn to first RPC over a
fresh gRPC channel per probe, under the CPU and memory budgets your pods really get.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		// What dead runs left is swept on first use of the state file;
		// the sweep says what it removed here.
		PersistentPreRun: func(cmd *cobra.Command, _ []string) { leftovers.SweepLog = cmd.ErrOrStderr() },
	}
	root.AddCommand(
		newBuildCmd(runBuild),
		newRunCmd(runColdstart),
		newDensityCmd(runDensity),
		newDeployCmd(runDeploy),
		newReportCmd(runReport),
		newPullCmd(runPull),
		newCleanCmd(runClean),
		newExplainCmd(runExplain),
		newVersionCmd(runVersion),
	)
	setVersion(root, "coldstart")
	return root
}
