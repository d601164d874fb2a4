package main

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// parseFlags runs the command newCmd builds on args, with a run function
// that only records its options, and returns them. With wantErr it checks
// that the command fails with an error containing it, and returns nil.
func parseFlags[O any](t *testing.T, name string, newCmd func(func(context.Context, *O, io.Writer) error) *cobra.Command, args []string, wantErr string) *O {
	t.Helper()
	var got *O
	cmd := newCmd(func(_ context.Context, o *O, _ io.Writer) error { got = o; return nil })
	cmd.SetArgs(args)
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	err := cmd.Execute()
	if err != nil {
		err = flagError(err) // as run prints it
	}
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("%s %q = %v, want error containing %q", name, args, err, wantErr)
		}
		return nil
	}
	if err != nil {
		t.Fatalf("%s %q = %v", name, args, err)
	}
	return got
}
