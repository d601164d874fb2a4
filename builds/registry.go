package builds

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Factory makes the Builder of one arm from the options. Builders it makes
// may share work with the others of the same BuildAll call.
type Factory func(o Options) (Builder, error)

var registry = struct {
	sync.Mutex
	f     map[string]Factory
	extra []string // registered names outside armOrder, in order
}{f: map[string]Factory{}}

// armOrder is the order arms are listed in; arms registered under other
// names follow in registration order.
var armOrder = []string{"default", "pgo", "static", "upx", "image"}

// DefaultArms are the arms built when none are named. The pgo arm joins
// them when its profile has a source the user named: the profile is then
// the service's own traffic, not coldstart's calls.
var DefaultArms = []string{"default", "static", "upx"}

// BinaryArms are the arms a prebuilt binary (Source.Bin) can be: itself
// as-is, and packed by upx. The others build from a package.
var BinaryArms = []string{"default", "upx"}

func init() {
	Register("default", func(o Options) (Builder, error) { return newDefault(o), nil })
	Register("pgo", func(o Options) (Builder, error) { return newPGO(o), nil })
	Register("static", func(o Options) (Builder, error) { return newStatic(o), nil })
	Register("upx", func(o Options) (Builder, error) { return newUPX(o), nil })
}

// Register makes an arm known to New, BuildAll and ArmList. It replaces an
// arm of the same name.
func Register(name string, f Factory) {
	registry.Lock()
	defer registry.Unlock()
	if _, ok := registry.f[name]; !ok && !contains(armOrder, name) {
		registry.extra = append(registry.extra, name)
	}
	registry.f[name] = f
}

// Known lists the registered arms: default, pgo, static, upx, image (those
// registered), then any others.
func Known() []string {
	registry.Lock()
	defer registry.Unlock()
	var names []string
	for _, n := range armOrder {
		if _, ok := registry.f[n]; ok {
			names = append(names, n)
		}
	}
	return append(names, registry.extra...)
}

// ErrUnknownArm is returned for an arm name nobody registered.
var ErrUnknownArm = errors.New("unknown arm")

func unknownArm(name string) error {
	return fmt.Errorf("%w %q (known: %s)", ErrUnknownArm, name, strings.Join(Known(), ", "))
}

// New returns the cached Builder of an arm (unless o.NoCache).
func New(arm string, o Options) (Builder, error) {
	o = o.withDefaults()
	registry.Lock()
	f, ok := registry.f[arm]
	registry.Unlock()
	if !ok {
		return nil, unknownArm(arm)
	}
	b, err := f(o)
	if err != nil {
		return nil, fmt.Errorf("set up %s arm: %w", arm, err)
	}
	return Cached(b, o), nil
}

// BuildAll builds src as each of arms, in order, and returns one artifact
// and one error per arm (same indexes): arts[i] is valid when errs[i] is
// nil. One arm failing (upx missing, say) does not stop the others;
// errors.Join(errs...) is nil when all succeeded. With o.OutDir set, each
// artifact is copied there as <package>-<arm>, its record beside it as
// <package>-<arm>.json; with o.Prebuilt set, nothing is built: each arm is
// loaded from such a directory (LoadPrebuilt).
func BuildAll(ctx context.Context, src Source, arms []string, o Options) ([]Artifact, []error) {
	o = o.withDefaults()
	arts := make([]Artifact, len(arms))
	errs := make([]error, len(arms))
	for i, arm := range arms {
		if err := ctx.Err(); err != nil {
			errs[i] = fmt.Errorf("build %s arm: %w", arm, err)
			continue
		}
		if o.Prebuilt != "" {
			arts[i], errs[i] = LoadPrebuilt(o.Prebuilt, arm)
			continue
		}
		b, err := New(arm, o)
		if err != nil {
			errs[i] = err
			continue
		}
		a, err := b.Build(ctx, src)
		if err != nil {
			errs[i] = err
			continue
		}
		if o.OutDir != "" {
			if a, err = copyOut(a, o.OutDir); err != nil {
				errs[i] = err
				continue
			}
		}
		arts[i] = a
	}
	return arts, errs
}

// BuildAs takes a prebuilt binary as it is, as arm name (--bin ARM=PATH):
// the default arm of Source{Bin: path}, renamed.
func BuildAs(ctx context.Context, name, path string, o Options) (Artifact, error) {
	arts, errs := BuildAll(ctx, Source{Bin: path}, []string{"default"}, o)
	arts[0].Arm = name
	return arts[0], errs[0]
}

func copyOut(a Artifact, dir string) (Artifact, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return a, fmt.Errorf("create output dir %s: %w", dir, err)
	}
	if a.Path == "" { // an image arm's artifact is a directory
		return a, nil
	}
	fi, err := os.Stat(a.Path)
	if err != nil || fi.IsDir() {
		return a, nil
	}
	dst := filepath.Join(dir, filepath.Base(a.Path)+"-"+a.Arm)
	if err := copyFile(dst+".tmp", a.Path, 0o755); err != nil {
		return a, fmt.Errorf("copy %s arm to %s: %w", a.Arm, dir, err)
	}
	if err := os.Rename(dst+".tmp", dst); err != nil {
		return a, fmt.Errorf("copy %s arm to %s: %w", a.Arm, dir, err)
	}
	a.Path = dst
	return a, writeRecord(a)
}

// ArmList is a list of arm names; it is a pflag.Value for --arms
// ("default,upx"): names must be registered, duplicates are dropped.
type ArmList []string

func (l *ArmList) String() string { return strings.Join(*l, ",") }

// Type names the flag's value kind in help text.
func (l *ArmList) Type() string { return "arms" }

// Set replaces the list with the comma-separated arms in s.
func (l *ArmList) Set(s string) error {
	arms, err := ParseArms(s)
	if err != nil {
		return err
	}
	*l = arms
	return nil
}

// ParseArms splits a comma-separated arm list and checks each name;
// "all" stands for every known arm.
func ParseArms(s string) ([]string, error) { return ParseArmList(s) }

// ParseArmList is ParseArms for a command that also takes arms of its own
// beside the registered ones (extra: coldstart run's start arms). "all"
// still stands for the registered arms only; errors list both.
func ParseArmList(s string, extra ...string) ([]string, error) {
	known := append(Known(), extra...)
	var arms []string
	for _, a := range strings.Split(s, ",") {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		if a == "all" {
			for _, k := range Known() {
				if !contains(arms, k) {
					arms = append(arms, k)
				}
			}
			continue
		}
		if !contains(known, a) {
			return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownArm, a, strings.Join(known, ", "))
		}
		if !contains(arms, a) {
			arms = append(arms, a)
		}
	}
	if len(arms) == 0 {
		return nil, fmt.Errorf("no arms named (known: %s)", strings.Join(known, ", "))
	}
	return arms, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
