package cliopts

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/coldstart-go/coldstart/builds"
	"github.com/coldstart-go/coldstart/campaign"
)

// Arms is --arms as a pflag.Value: comma-separated arm names, each checked
// against the arms the command knows (the registered build arms and the
// command's own), "all" for every build arm. It remembers whether it was
// given, so its default may depend on other flags (--bin PATH). A name
// it does not know is kept and refused by Common.Validate, not by Set:
// with --on knative (Cluster.Check) the arms name deployed Services, and
// any name is one, whichever flag comes first.
type Arms struct {
	Names []string
	given bool
	extra []string // the command's own arms beside the build arms
	// unknown is Set's error for a name none of the known arms; services
	// says the names are Services' (Cluster.Check), so it does not apply.
	unknown  error
	services bool
}

// String renders the list as Set reads it.
func (a *Arms) String() string { return strings.Join(a.Names, ",") }

// Type names the flag's value kind in help text.
func (a *Arms) Type() string { return "arms" }

// Set replaces the list with the arms in s.
func (a *Arms) Set(s string) error {
	names, err := builds.ParseArmList(s, a.extra...)
	a.unknown = nil
	if errors.Is(err, builds.ErrUnknownArm) {
		a.unknown, names = err, anyArms(s)
	} else if err != nil {
		return err
	}
	a.Names, a.given = names, true
	return nil
}

// anyArms reads a list of arms as ParseArmList does, "all" for every build
// arm, without checking the names.
func anyArms(s string) []string {
	var names []string
	for _, a := range strings.Split(s, ",") {
		switch a = strings.TrimSpace(a); {
		case a == "all":
			for _, k := range builds.Known() {
				if !slices.Contains(names, k) {
					names = append(names, k)
				}
			}
		case a != "" && !slices.Contains(names, a):
			names = append(names, a)
		}
	}
	return names
}

// check refuses a name Set did not know, unless the arms are Services.
func (a *Arms) check() error {
	if a.unknown != nil && !a.services {
		return fmt.Errorf("--arms: %w", a.unknown)
	}
	return nil
}

// Given reports whether --arms was on the command line.
func (a *Arms) Given() bool { return a.given }

// known lists the arms Set accepts.
func (a *Arms) known() []string { return append(builds.Known(), a.extra...) }

// Bins is --bin as a pflag.Value: a prebuilt server binary instead of PKG,
// given as PATH (once: the binary is measured as the arms that apply to
// it, or those --arms names) or as ARM=PATH (repeatable: each binary is
// measured as it is, as arm ARM). The forms do not mix.
type Bins struct {
	// Path is the PATH form ("" = not given).
	Path string
	// Named are the ARM=PATH forms, in order.
	Named []campaign.Binary
}

// String renders the binaries as they were given, comma-separated.
func (b *Bins) String() string {
	if b.Path != "" {
		return b.Path
	}
	s := make([]string, len(b.Named))
	for i, n := range b.Named {
		s[i] = n.Name + "=" + n.Path
	}
	return strings.Join(s, ",")
}

// Type names the flag's value kind in help text.
func (b *Bins) Type() string { return "[ARM=]PATH" }

// Given reports whether --bin was on the command line.
func (b *Bins) Given() bool { return b.Path != "" || len(b.Named) > 0 }

// ArmsFor is the arm list measured beside the binaries: with ARM=PATH none
// (and --arms is refused: each binary names its own arm), with PATH and no
// --arms the arms that apply to a binary (default, upx), else arms. A
// package to build (pkg) and --bin are refused together.
func (b *Bins) ArmsFor(pkg string, arms []string, armsGiven bool) ([]string, error) {
	switch {
	case b.Given() && pkg != "":
		return nil, fmt.Errorf("--bin %s and PKG %s: give one or the other", b.String(), pkg)
	case len(b.Named) > 0 && armsGiven:
		return nil, fmt.Errorf("--arms and --bin ARM=PATH: --bin names its own arms (ARM=PATH); to pack one binary too, give --bin PATH --arms default,upx")
	case len(b.Named) > 0:
		return nil, nil
	case b.Path != "" && !armsGiven:
		return append([]string(nil), builds.BinaryArms...), nil
	}
	return arms, nil
}

// Set adds one --bin.
func (b *Bins) Set(s string) error {
	name, path, err := ParseBin(s)
	if err != nil {
		return err
	}
	switch {
	case name == "" && b.Path != "":
		return fmt.Errorf("%s and %s: give one PATH (measured as default and upx), or ARM=PATH for each binary", b.Path, path)
	case name == "" && len(b.Named) > 0, name != "" && b.Path != "":
		return fmt.Errorf("%q: PATH and ARM=PATH do not mix: give one PATH, or ARM=PATH for each binary", s)
	case name == "":
		b.Path = path
		return nil
	}
	for _, n := range b.Named {
		if n.Name == name {
			return fmt.Errorf("arm %q given twice", name)
		}
	}
	b.Named = append(b.Named, campaign.Binary{Name: name, Path: path})
	return nil
}

// ParseBin reads one --bin value: ARM=PATH, or PATH (name ""). Text before
// the first '=' is an arm name unless it holds a '/' (then the whole value
// is a path: ./build=1/server).
func ParseBin(s string) (name, path string, err error) {
	n, p, ok := strings.Cut(s, "=")
	if !ok || strings.Contains(n, "/") {
		if s == "" {
			return "", "", fmt.Errorf("empty path: want ARM=PATH or PATH")
		}
		return "", s, nil
	}
	if n == "" || p == "" {
		return "", "", fmt.Errorf("%q: want ARM=PATH or PATH", s)
	}
	if err := campaign.CheckArmName(n); err != nil {
		return "", "", fmt.Errorf("%q: %w", s, err)
	}
	return n, p, nil
}

// ModuleDirHelp is -C's help text, the same in every command that builds.
const ModuleDirHelp = "build PKG from the module in this directory, as go -C DIR does: PKG, go.mod and go.work resolve from DIR (\"\" = this directory)"

// ModuleDir checks -C DIR for a command building pkg (bin: a prebuilt
// binary was given instead) and returns DIR made absolute, so that the
// builds' command lines and records name it whatever the current
// directory ("" stays ""). -C needs a PKG to build there: without one
// the bundled sample server would be built from coldstart's own module.
func ModuleDir(dir, pkg string, bin bool) (string, error) {
	if dir == "" {
		return "", nil
	}
	if bin {
		return "", fmt.Errorf("-C %s: builds PKG there; --bin is a binary already built", dir)
	}
	if pkg == "" {
		return "", fmt.Errorf("-C %s: name the package to build there, e.g. . for the module's root", dir)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("-C %s: %w", dir, err)
	}
	if fi, err := os.Stat(abs); err != nil {
		return "", fmt.Errorf("-C: %w", err)
	} else if !fi.IsDir() {
		return "", fmt.Errorf("-C %s: not a directory", dir)
	}
	return abs, nil
}
