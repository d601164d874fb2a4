package cliopts

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/spf13/pflag"

	"github.com/coldstart-go/coldstart/builds"
	"github.com/coldstart-go/coldstart/campaign"
	"github.com/coldstart-go/coldstart/prober"
	"github.com/coldstart-go/coldstart/record"
)

// VariantHelp and SweepHelp are --variant's and --sweep's help texts, the
// same on every command that measures arms.
const (
	VariantHelp = "NAME:KEY=VALUE[,KEY=VALUE...]: measure an arm's binary started with more settings too, as arm NAME, " +
		"in the same rounds as the others and compared against that arm as it is (repeatable). " +
		"KEY is env.VAR (environment, after --env's: env.GOGC=50) or arg.ARG (one more server argument, after the others: arg.--num-stream-workers=2), " +
		"or from=ARM, the arm it starts, or control (it sets nothing the arm does not have: an A/A check that must come out ~); without from=, NAME says it: ARM.SUFFIX starts ARM (static.gogc50 starts static), " +
		"a NAME without '.' starts the baseline arm; a value holds no comma (docs/variants.md)"
	SweepHelp = "[ARM:]KEY=V1,V2,...: a --variant per value, named ARM.VAR=V (env.GOGC=50,200 measures default.GOGC=50 and default.GOGC=200; " +
		"arg.--num-stream-workers=1,4 measures default.num-stream-workers=1 and ...=4); ARM is the baseline arm unless given; KEY is env.VAR or arg.--FLAG " +
		"(repeatable; sweeps are not crossed)"
)

// variantKeys is what a --variant or --sweep key may be, for errors.
const variantKeys = "env.VAR=VALUE (environment) or arg.ARG (a server argument)"

// Variants are --variant and --sweep as given, in order; Resolve makes
// them campaign.Variants once the arms to be measured are known.
type Variants struct {
	specs []variantSpec
}

// variantSpec is one --variant, or one value of a --sweep.
type variantSpec struct {
	flag  string // "--variant" or "--sweep", for errors
	given string // the flag's value, for errors
	// name is the variant's name; for a sweep, what follows "ARM.".
	name  string
	from  string // the arm it starts ("" = as name says, or the baseline)
	sweep bool
	record.Variant
}

// Given reports whether any --variant or --sweep was given.
func (v *Variants) Given() bool { return len(v.specs) > 0 }

// Bind adds --variant and --sweep to f, bound to v.
func (v *Variants) Bind(f *pflag.FlagSet) {
	f.Var(variantFlag{v}, "variant", VariantHelp)
	f.Var(sweepFlag{v}, "sweep", SweepHelp)
}

type variantFlag struct{ v *Variants }

func (f variantFlag) String() string { return f.v.text(false) }
func (f variantFlag) Type() string   { return "NAME:SETTINGS" }
func (f variantFlag) Set(s string) error {
	spec, err := ParseVariant(s)
	if err != nil {
		return err
	}
	f.v.specs = append(f.v.specs, spec)
	return nil
}

type sweepFlag struct{ v *Variants }

func (f sweepFlag) String() string { return f.v.text(true) }
func (f sweepFlag) Type() string   { return "[ARM:]KEY=VALUES" }
func (f sweepFlag) Set(s string) error {
	specs, err := ParseSweep(s)
	if err != nil {
		return err
	}
	f.v.specs = append(f.v.specs, specs...)
	return nil
}

// text lists the values given, for pflag's String.
func (v *Variants) text(sweep bool) string {
	var out []string
	for _, s := range v.specs {
		if s.sweep == sweep && !slices.Contains(out, s.given) {
			out = append(out, s.given)
		}
	}
	return strings.Join(out, " ")
}

// ParseVariant reads one --variant value: NAME:KEY=VALUE[,KEY=VALUE...],
// each KEY env.VAR, arg.ARG or from, or the word control.
func ParseVariant(s string) (variantSpec, error) {
	spec := variantSpec{flag: "--variant", given: s}
	name, settings, ok := strings.Cut(s, ":")
	if !ok || settings == "" {
		return spec, fmt.Errorf("%q: want NAME:KEY=VALUE[,KEY=VALUE...], each KEY %s, e.g. static.gogc50:env.GOGC=50", s, variantKeys)
	}
	if err := checkVariantName(name); err != nil {
		return spec, fmt.Errorf("%q: %w", s, err)
	}
	spec.name = name
	for _, kv := range strings.Split(settings, ",") {
		switch {
		case kv == "control":
			spec.Control = true
		case strings.HasPrefix(kv, "from="):
			if spec.from != "" {
				return spec, fmt.Errorf("%q: from= given twice", s)
			}
			if spec.from = strings.TrimPrefix(kv, "from="); spec.from == "" {
				return spec, fmt.Errorf("%q: from= names no arm", s)
			}
		default:
			if err := spec.add(kv); err != nil {
				return spec, fmt.Errorf("variant %s: %w", name, err)
			}
		}
	}
	if len(spec.Env) == 0 && len(spec.Args) == 0 && !spec.Control {
		return spec, fmt.Errorf("variant %s: sets nothing: give env.VAR=VALUE or arg.ARG, or control to measure the arm as it is under another name", name)
	}
	return spec, nil
}

// add adds one env.VAR=VALUE or arg.ARG setting.
func (s *variantSpec) add(kv string) error {
	switch {
	case strings.HasPrefix(kv, "env."):
		e := strings.TrimPrefix(kv, "env.")
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
			return fmt.Errorf("%q: want env.VAR=VALUE", kv)
		}
		if _, err := prober.ParseTemplate([]string{e}); err != nil {
			return fmt.Errorf("%q: %w", kv, err)
		}
		s.Env = append(s.Env, e)
	case strings.HasPrefix(kv, "arg."):
		a := strings.TrimPrefix(kv, "arg.")
		if a == "" {
			return fmt.Errorf("%q: want arg.ARG, e.g. arg.--num-stream-workers=2", kv)
		}
		if _, err := prober.ParseTemplate([]string{a}); err != nil {
			return fmt.Errorf("%q: %w", kv, err)
		}
		s.Args = append(s.Args, a)
	default:
		return fmt.Errorf("%q: key is neither env. nor arg.: want %s (or from=ARM, the arm it starts, or control)", kv, variantKeys)
	}
	return nil
}

// ParseSweep reads one --sweep value, [ARM:]KEY=V1,V2,..., into a
// variant per value; each is named once its arm is known (Resolve).
func ParseSweep(s string) ([]variantSpec, error) {
	arm, rest := "", s
	if k, _, _ := strings.Cut(s, "="); strings.Contains(k, ":") {
		arm, rest, _ = strings.Cut(s, ":")
		if arm == "" {
			return nil, fmt.Errorf("%q: the arm before ':' is empty", s)
		}
	}
	key, values, ok := strings.Cut(rest, "=")
	var name string
	switch {
	case !ok:
		return nil, fmt.Errorf("%q: want [ARM:]KEY=V1,V2,..., KEY env.VAR or arg.--FLAG", s)
	case strings.HasPrefix(key, "env.") && len(key) > len("env."):
		name = strings.TrimPrefix(key, "env.")
	case strings.HasPrefix(key, "arg.") && strings.TrimLeft(strings.TrimPrefix(key, "arg."), "-") != "":
		name = strings.TrimLeft(strings.TrimPrefix(key, "arg."), "-")
	default:
		return nil, fmt.Errorf("%q: key %q is neither env. nor arg.: want env.VAR=V1,V2,... (environment) or arg.--FLAG=V1,V2,... (a server argument)", s, key)
	}
	var out []variantSpec
	seen := map[string]bool{}
	for _, val := range strings.Split(values, ",") {
		if val == "" {
			return nil, fmt.Errorf("%q: an empty value: want V1,V2,... each non-empty", s)
		}
		if seen[val] {
			return nil, fmt.Errorf("%q: value %q given twice", s, val)
		}
		seen[val] = true
		spec := variantSpec{flag: "--sweep", given: s, name: name + "=" + val, from: arm, sweep: true}
		if err := spec.add(key + "=" + val); err != nil {
			return nil, fmt.Errorf("%q: %w", s, err)
		}
		out = append(out, spec)
	}
	return out, nil
}

// checkVariantName checks a name --variant gives: it labels rows and
// tables, and a comma, colon or space in it would not read back.
func checkVariantName(n string) error {
	if n == "" {
		return errors.New("empty variant name: want NAME:KEY=VALUE,...")
	}
	r := []rune(n)
	if !unicode.IsLetter(r[0]) && !unicode.IsDigit(r[0]) {
		return fmt.Errorf("variant name %q: begin with a letter or digit", n)
	}
	if i := strings.IndexFunc(n, func(c rune) bool { return unicode.IsSpace(c) || strings.ContainsRune(",:|\"'`\\", c) }); i >= 0 {
		return fmt.Errorf("variant name %q: no spaces, commas, colons, quotes or '|'", n)
	}
	return nil
}

// Resolve makes the variants, given the arms to be measured (in order,
// variants aside) and --baseline: each variant's arm (from=, else NAME's
// ARM. prefix, else the baseline arm), and each sweep value's name. It
// refuses a variant of an arm not measured, of the snapshot arm (a
// restored checkpoint keeps the environment and arguments it was dumped
// with), a name given twice, and a name that is an arm's.
func (v *Variants) Resolve(arms []string, baseline string) ([]campaign.Variant, error) {
	if len(v.specs) == 0 {
		return nil, nil
	}
	base := record.ChooseBaseline(arms, baseline)
	measured := func(flag, arm string) error {
		if !slices.Contains(arms, arm) {
			return fmt.Errorf("%s: arm %s is not measured (arms: %s): add it to --arms, or vary one of those", flag, arm, strings.Join(arms, ", "))
		}
		if arm == campaign.SnapshotArm {
			return fmt.Errorf("%s: the snapshot arm restores a checkpoint, which keeps the environment and arguments its server was dumped with: vary the arm it starts (--start-from) instead", flag)
		}
		return nil
	}
	var out []campaign.Variant
	for _, s := range v.specs {
		flag := fmt.Sprintf("%s %s", s.flag, s.given)
		of, name := s.from, s.name
		switch {
		case s.sweep:
			if of == "" {
				of = base
			}
			name = of + "." + s.name
		case of == "" && strings.Contains(s.name, "."):
			// The longest measured arm NAME begins with, before a '.'
			// (an arm's own name may hold one: --bin my.api=...).
			for i := len(s.name) - 1; i > 0; i-- {
				if s.name[i] == '.' && slices.Contains(arms, s.name[:i]) {
					of = s.name[:i]
					break
				}
			}
			if of == "" {
				first, _, _ := strings.Cut(s.name, ".")
				if slices.Contains(builds.Known(), first) || slices.Contains(campaign.StartArms, first) {
					of = first // a known arm, not measured: said below
				} else {
					return nil, fmt.Errorf("%s: no measured arm is named %s (arms: %s): name the variant ARM.SUFFIX after the arm it starts, or give from=ARM", flag, first, strings.Join(arms, ", "))
				}
			}
		case of == "":
			of = base
		}
		if err := measured(flag, of); err != nil {
			return nil, err
		}
		if slices.Contains(arms, name) {
			return nil, fmt.Errorf("%s: %s is an arm's name: name the variant after what it sets, e.g. %s.gogc50", flag, name, of)
		}
		for _, o := range out {
			if o.Name == name {
				return nil, fmt.Errorf("%s: variant %s given twice: name each variant once", flag, name)
			}
		}
		out = append(out, campaign.Variant{Name: name, Variant: record.Variant{Of: of, Env: s.Env, Args: s.Args, Control: s.Control}})
	}
	if slices.ContainsFunc(out, func(x campaign.Variant) bool { return x.Name == baseline }) {
		return nil, fmt.Errorf("--baseline: %s is a variant; a variant is compared against its own arm, so name an arm (arms: %s)", baseline, strings.Join(arms, ", "))
	}
	return out, nil
}

// variantNotes are the variants as provenance notes: "variant NAME" →
// "of ARM: env.K=V, arg.ARG".
func variantNotes(vs []campaign.Variant) map[string]string {
	if len(vs) == 0 {
		return nil
	}
	out := map[string]string{}
	for _, v := range vs {
		out["variant "+v.Name] = v.Variant.Text()
	}
	return out
}
