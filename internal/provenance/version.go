package provenance

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
)

// build is what this binary knows of its own build, read once: the main
// module's version and the commit it was built from.
type build struct {
	version string // module version: a release, a pseudo-version, or "(devel)"
	commit  string // "" when the binary carries no vcs stamp
}

var readBuild = sync.OnceValue(func() build {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return build{}
	}
	var rev string
	var dirty bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev != "" && dirty {
		rev += "+dirty"
	}
	return build{version: bi.Main.Version, commit: rev}
})

// checkoutCommit is gitCommit, asked once per process: a results file, the
// version flag and the version command all name the same commit.
var checkoutCommit = sync.OnceValue(gitCommit)

// Commit is the commit of the coldstart checkout this binary was built
// from, "+dirty" when the tree was modified: the vcs stamp go build puts in
// a binary built inside a git checkout (go ≥1.18, -buildvcs=auto), else,
// for binaries without one (go run, go test, -buildvcs=false), what git
// says of the working directory's checkout, else "unknown".
func Commit() string {
	if c := readBuild().commit; c != "" {
		return c
	}
	return checkoutCommit()
}

// ToolVersion is this binary's version, as results record it (tool_version)
// and --version and the version command print it. It is the main module's
// version when the build names one: a release (go install ...@v1.2.3) or
// the pseudo-version go build stamps inside a git checkout
// (v0.0.0-20261130032040-5ff603e62ff7+dirty). A build that names none
// ("(devel)": go run, go test, -buildvcs=false) is "devel" and the first
// 12 digits of Commit ("devel 5ff603e62ff7+dirty"), or "(devel)" when the
// commit is unknown too.
func ToolVersion() string {
	if v := readBuild().version; v != "" && v != "(devel)" {
		return v
	}
	c := Commit()
	if c == "" || c == "unknown" {
		return "(devel)"
	}
	return "devel " + shortCommit(c)
}

// shortCommit keeps a commit's first 12 hex digits and its "+dirty".
func shortCommit(c string) string {
	rev, dirty := strings.CutSuffix(c, "+dirty")
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "+dirty"
	}
	return rev
}

// VersionText is what `TOOL version` and `TOOL --version` print: the
// tool's version (ToolVersion), the full commit (Commit) and the Go
// toolchain, OS and architecture it was built with, one per line.
func VersionText(tool string) string {
	return fmt.Sprintf("%s version %s\ncommit %s\nbuilt with %s %s/%s\n",
		tool, ToolVersion(), Commit(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
