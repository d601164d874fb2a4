package record

import "strings"

// Variant says what makes an arm a variant (coldstart run --variant): the
// binary of another arm, Of, started with extra environment and extra
// server arguments, and compared against Of as it is rather than against
// the baseline. Zero on an arm that is no variant. Rows embed it, so each
// row says what was set; the values are recorded as given.
type Variant struct {
	// Of is the arm the variant starts the binary of, and its baseline.
	Of string `json:"variant_of,omitempty" render:"-"`
	// Env is the environment it adds, K=V, after every other (--env's
	// included), so that its values are the ones the server reads.
	Env []string `json:"variant_env,omitempty" render:"-"`
	// Args are the arguments it adds after the server's own, each as it
	// was given (placeholders such as {debug_addr} unexpanded).
	Args []string `json:"variant_args,omitempty" render:"-"`
	// Control marks a variant that sets nothing its arm does not already
	// have (--variant NAME:control): the same start under another name,
	// which must come out "no difference" against its arm. One that does
	// not says the campaign's verdicts against that arm are doubtful.
	Control bool `json:"variant_control,omitempty" render:"-"`
	// Platform is what a platform lever changes in the arm's Knative
	// Service (coldstart deploy --lever), one field each, e.g.
	// "automountServiceAccountToken: false": the same image, deployed so.
	Platform []string `json:"variant_platform,omitempty" render:"-"`
}

// IsVariant reports whether v makes an arm a variant.
func (v Variant) IsVariant() bool { return v.Of != "" }

// Settings are v's settings as --variant takes them: env.K=V and
// arg.ARG, the environment first; then a platform lever's fields.
func (v Variant) Settings() []string {
	var out []string
	for _, e := range v.Env {
		out = append(out, "env."+e)
	}
	for _, a := range v.Args {
		out = append(out, "arg."+a)
	}
	return append(out, v.Platform...)
}

// Text is v as a person reads it: "of static: env.GOGC=50,
// arg.--num-stream-workers=2" ("" when v is no variant). Not String: rows
// embed Variant, and would print as it.
func (v Variant) Text() string {
	if !v.IsVariant() {
		return ""
	}
	s := "of " + v.Of
	set := v.Settings()
	if v.Control {
		set = append(set, "control")
	}
	if len(set) > 0 {
		s += ": " + strings.Join(set, ", ")
	}
	return s
}

// Baselines says which arm each arm is compared against: a variant
// against its own arm (Variant.Of), every other arm against Base.
type Baselines struct {
	Base string
	// Of maps each variant to its arm.
	Of map[string]string
}

// NewBaselines picks the baseline among arms (ChooseBaseline over those
// that are no variant, so a variant is never the baseline) and notes each
// variant's arm; of gives an arm's Variant.
func NewBaselines(arms []string, want string, of func(arm string) string) Baselines {
	b := Baselines{Of: map[string]string{}}
	var plain []string
	for _, a := range arms {
		if o := of(a); o != "" {
			b.Of[a] = o
			continue
		}
		plain = append(plain, a)
	}
	b.Base = ChooseBaseline(plain, want)
	return b
}

// For is the arm arm is compared against: its own for a variant, else
// Base.
func (b Baselines) For(arm string) string {
	if o, ok := b.Of[arm]; ok {
		return o
	}
	return b.Base
}
