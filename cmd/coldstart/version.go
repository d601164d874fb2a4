package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/coldstart-go/coldstart/internal/provenance"
)

// newVersionCmd prints what provenance.VersionText says of this binary:
// the version results record as tool_version, the commit and the Go
// toolchain. `coldstart --version` prints the same (see setVersion).
func newVersionCmd(run func(io.Writer) error) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print coldstart's version, the commit it was built from and the Go version",
		Long: `version prints the version results files record as tool_version: the module version
go install or go build stamped in the binary, or "devel" and the commit for a build
that names none (go run, -buildvcs=false); then the full commit, "+dirty" when the
checkout was modified, and the Go toolchain, OS and architecture it was built with.
coldstart --version prints the same.`,
		Example: "  coldstart version",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return run(cmd.OutOrStdout())
		},
	}
}

func runVersion(w io.Writer) error {
	_, err := io.WriteString(w, provenance.VersionText("coldstart"))
	return err
}

// setVersion gives root a --version flag printing what the version
// command prints. The flag is declared here rather than left to cobra,
// which would take -v for it where -v means verbose on every command.
func setVersion(root *cobra.Command, tool string) {
	root.Version = provenance.ToolVersion()
	root.SetVersionTemplate(provenance.VersionText(tool))
	root.Flags().Bool("version", false, "print the version, the commit and the Go version, and exit (as the version command)")
}
