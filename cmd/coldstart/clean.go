package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/coldstart-go/coldstart/internal/leftovers"
)

// cleanOptions are coldstart clean's flags.
type cleanOptions struct {
	StateDir string
	stderr   io.Writer
}

func newCleanCmd(run func(context.Context, *cleanOptions, io.Writer) error) *cobra.Command {
	o := &cleanOptions{StateDir: leftovers.StateDir()}
	cmd := &cobra.Command{
		Use:   "clean",
		Short: "Remove what killed coldstart runs left behind: servers, runc containers, cgroups, bundles, root filesystems",
		Long: `Every coldstart run records each process, container, cgroup, bundle, unpacked root
filesystem and temp directory it creates in a state file (keyed by the run's id and its
PID) before creating it, and forgets each once it is cleaned up. A run killed with
SIGKILL (an OOM kill, a CI timeout) cannot clean up: the next run sweeps what such dead
runs left, and clean does it on demand, printing each thing it removes. Only what a
state file lists for a run that is no longer running is touched, never anything found
by its name; runs still running are listed and left alone.`,
		Example: "  coldstart clean",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.stderr = cmd.ErrOrStderr()
			return run(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&o.StateDir, "state-dir", o.StateDir, "where runs keep their state files ($COLDSTART_STATE_DIR overrides the default)")
	return cmd
}

func runClean(ctx context.Context, o *cleanOptions, w io.Writer) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	removed, left, err := leftovers.Clean(o.StateDir, nil)
	failed := 0
	for _, r := range removed {
		if r.Err != nil {
			failed++
			fmt.Fprintf(w, "left\t%s\t(run pid %d: %v)\n", r.Entry, r.Owner, r.Err)
			continue
		}
		fmt.Fprintf(w, "removed\t%s\t(run pid %d, gone)\n", r.Entry, r.Owner)
	}
	for _, l := range left {
		fmt.Fprintf(o.stderr, "coldstart clean: run pid %d is still running (%d things in %s): left alone\n", l.Owner, l.Entries, l.File)
	}
	if len(removed) == 0 {
		fmt.Fprintf(o.stderr, "coldstart clean: nothing left by dead runs in %s\n", o.StateDir)
	}
	if err != nil {
		return fmt.Errorf("clean %s: %w", o.StateDir, err)
	}
	if failed > 0 {
		return fmt.Errorf("clean %s: %d things could not be removed (listed above)", o.StateDir, failed)
	}
	return nil
}
