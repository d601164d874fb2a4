package main

import (
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

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
		newGateCmd(runGate),
		newPullCmd(runPull),
		newCostCmd(runCost),
		newReplayCmd(runReplay),
		newCleanCmd(runClean),
		newExplainCmd(runExplain),
		newVersionCmd(runVersion),
	)
	setVersion(root, "coldstart")
	return root
}

// timeoutVar binds the duration flag name to p, and --timeout to the same
// value as a deprecated alias: --timeout once named a different bound on
// each command (one start, one instance's readiness, the wait for all
// Services), so each now has a name saying what it bounds, while scripts
// that pass --timeout keep working with a warning on stderr. Help shows
// only name.
func timeoutVar(f *pflag.FlagSet, p *time.Duration, name, usage string) {
	f.DurationVar(p, name, *p, usage)
	f.DurationVar(p, "timeout", *p, usage)
	_ = f.MarkDeprecated("timeout", "use --"+name)
}
