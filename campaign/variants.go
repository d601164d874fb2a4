package campaign

import (
	"fmt"

	"github.com/coldstart-go/coldstart/prober"
	"github.com/coldstart-go/coldstart/record"
)

// Variant is an arm started with extra settings (coldstart run
// --variant): the binary of arm Of, as that arm starts it, with Env added
// after its environment and Args after its arguments. It is measured as
// arm Name beside the others, and compared against Of.
type Variant struct {
	Name string
	record.Variant
}

// AddVariants adds each variant to b, made from b's arm named v.Of (a
// build, a --bin binary, an image or a start arm), with a copy of that
// arm's artifact, if it has one, naming the variant and its settings. A
// variant whose arm was not made goes to b.Failed, naming both.
func AddVariants(b *Built, vs []Variant) error {
	for _, v := range vs {
		i := -1
		for j := range b.Arms {
			if b.Arms[j].Name == v.Of {
				i = j
			}
		}
		if i < 0 {
			b.Failed = append(b.Failed, fmt.Errorf("variant %s: its arm %s was not made", v.Name, v.Of))
			continue
		}
		a, err := variantArm(b.Arms[i], v)
		if err != nil {
			return err
		}
		b.Arms = append(b.Arms, a)
		for _, art := range b.Artifacts {
			if art.Arm == v.Of {
				art.Arm, art.Variant = v.Name, v.Variant
				art.Command = append([]string(nil), art.Command...)
				b.Artifacts = append(b.Artifacts, art)
				break
			}
		}
	}
	return nil
}

// variantArm is arm a started with v's settings: its environment last
// (so its values are those the server reads, over --env's), its
// arguments after a's, placeholders filled as a's are.
func variantArm(a Arm, v Variant) (Arm, error) {
	envT, err := prober.ParseTemplate(v.Env)
	if err != nil {
		return a, fmt.Errorf("variant %s: environment: %w", v.Name, err)
	}
	argT, err := prober.ParseTemplate(v.Args)
	if err != nil {
		return a, fmt.Errorf("variant %s: arguments: %w", v.Name, err)
	}
	out := a
	out.Name, out.Variant = v.Name, v.Variant
	if len(v.Env) > 0 {
		envFor := a.EnvFor
		out.EnvFor = func(t prober.Target) []string {
			var env []string
			if envFor != nil {
				env = append(env, envFor(t)...)
			}
			more, err := envT.Expand(prober.VarsFor(t))
			if err != nil {
				more = v.Env // a placeholder with no value here: as given
			}
			return append(env, more...)
		}
	}
	if len(v.Args) == 0 {
		return out, nil
	}
	if len(a.ArgTemplate) > 0 {
		// One template, so that a placeholder both name ({debug_addr})
		// is one address.
		all := append(append([]string(nil), a.ArgTemplate...), v.Args...)
		tmpl, err := prober.ParseTemplate(all)
		if err != nil {
			return a, fmt.Errorf("variant %s: arguments: %w", v.Name, err)
		}
		out.ArgTemplate = all
		out.Args = func(t prober.Target) ([]string, error) {
			vars, err := tmpl.VarsFor(t)
			if err != nil {
				return nil, err
			}
			return tmpl.Expand(vars)
		}
		return out, nil
	}
	own := a.Args
	out.ArgTemplate = append([]string(nil), v.Args...)
	out.Args = func(t prober.Target) ([]string, error) {
		var args []string
		if own != nil {
			var err error
			if args, err = own(t); err != nil {
				return nil, err
			}
		}
		vars, err := argT.VarsFor(t)
		if err != nil {
			return nil, err
		}
		more, err := argT.Expand(vars)
		return append(args, more...), err
	}
	return out, nil
}

// variantErr is err naming a's variant and its settings, when a is one:
// a server that refuses a setting fails as the variant that set it.
func (a Arm) variantErr(err error) error {
	if err == nil || !a.Variant.IsVariant() {
		return err
	}
	return fmt.Errorf("variant %s (%s): %w", a.Name, a.Variant.Text(), err)
}
