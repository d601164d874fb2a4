package provenance

import (
	"path/filepath"
	"strings"

	"al.essio.dev/pkg/shellescape"
)

// CampaignDirPrefix begins the name of the temporary directory
// scripts/campaign.sh writes a campaign into (results/.campaign-XXXXXX)
// before it moves the files to results/: a --results-dir naming such a
// directory names one that no longer exists.
const CampaignDirPrefix = ".campaign-"

// CommandLine renders a recorded command line (Provenance.Args) for people
// to read and paste into a POSIX shell: every argument shell-quoted where
// the shell would otherwise split or expand it ("--budget 'cpus=0;cores=0.5'"),
// the program by its base name (args[0] is often a go run or go test
// binary under /tmp, gone since), secret values redacted as RedactArgs does
// (files written before redaction existed still hold them), and the value
// of a --results-dir (or Go-flag style -results-dir) that names a temporary
// CampaignDirPrefix directory replaced by resultsDir, the directory the
// results file is in now. With resultsDir "" that value stays as recorded.
// Arguments after "--" are the server's own and are only quoted. The
// recorded args are not changed; nil or empty args give "".
func CommandLine(args []string, resultsDir string) string {
	if len(args) == 0 {
		return ""
	}
	out := RedactArgs(args)
	out[0] = filepath.Base(out[0])
	for i := 1; i < len(out) && out[i] != "--"; i++ {
		name, value, inline := strings.Cut(out[i], "=")
		if name != "--results-dir" && name != "-results-dir" {
			continue
		}
		switch {
		case inline && isCampaignDir(value) && resultsDir != "":
			out[i] = name + "=" + resultsDir
		case !inline && i+1 < len(out):
			if isCampaignDir(out[i+1]) && resultsDir != "" {
				out[i+1] = resultsDir
			}
			i++
		}
	}
	return shellescape.QuoteCommand(out)
}

// isCampaignDir reports whether dir is a temporary campaign directory.
func isCampaignDir(dir string) bool {
	return strings.HasPrefix(filepath.Base(dir), CampaignDirPrefix)
}
