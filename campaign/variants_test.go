package campaign

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/coldstart-go/coldstart/builds"
	"github.com/coldstart-go/coldstart/prober"
	"github.com/coldstart-go/coldstart/record"
)

// TestAddVariants: a variant starts its arm's binary with its environment
// after the arm's (--env's included) and its arguments after the arm's,
// placeholders filled; it gets a copy of the arm's artifact naming it;
// a variant of an arm that was not made fails alone.
func TestAddVariants(t *testing.T) {
	tmpl, _ := prober.ParseTemplate([]string{"--addr", "{addr}"})
	envT, _ := prober.ParseTemplate([]string{"GOGC=100", "A={port}"})
	static := Arm{Name: "static", Path: "/bin/echo", ArgTemplate: []string{"--addr", "{addr}"},
		Args: func(t prober.Target) ([]string, error) { return tmpl.Expand(prober.VarsFor(t)) },
		EnvFor: func(t prober.Target) []string {
			e, _ := envT.Expand(prober.VarsFor(t))
			return e
		}}
	b := Built{Arms: []Arm{static}, Artifacts: []builds.Artifact{{Arm: "static", Path: "/bin/echo", Command: []string{"go build"}}}}
	v := record.Variant{Of: "static", Env: []string{"GOGC=50", "P={port}"}, Args: []string{"--workers=2", "--http={http_addr}"}}
	if err := AddVariants(&b, []Variant{{Name: "static.x", Variant: v}, {Name: "upx.x", Variant: record.Variant{Of: "upx", Env: []string{"A=1"}}}}); err != nil {
		t.Fatal(err)
	}
	if len(b.Arms) != 2 || b.Arms[1].Name != "static.x" || b.Arms[1].Path != "/bin/echo" {
		t.Fatalf("arms %s, want static, static.x of /bin/echo", ArmNames(b.Arms))
	}
	a := b.Arms[1]
	tg := prober.Target{Network: "tcp", Address: "127.0.0.1:4242"}
	if got, want := a.EnvFor(tg), []string{"GOGC=100", "A=4242", "GOGC=50", "P=4242"}; !cmp.Equal(got, want) {
		t.Errorf("env %q, want %q (the variant's last, so its GOGC wins)", got, want)
	}
	args, err := a.Args(tg)
	if err != nil {
		t.Fatal(err)
	}
	if len(args) != 4 || args[1] != "127.0.0.1:4242" || args[2] != "--workers=2" || !strings.HasPrefix(args[3], "--http=127.0.0.1:") {
		t.Errorf("args %q, want --addr 127.0.0.1:4242 --workers=2 --http=<a free port>", args)
	}
	if got, want := a.ArgTemplate, []string{"--addr", "{addr}", "--workers=2", "--http={http_addr}"}; !cmp.Equal(got, want) {
		t.Errorf("arg template %q, want %q", got, want)
	}
	if len(b.Artifacts) != 2 || b.Artifacts[1].Arm != "static.x" || b.Artifacts[1].Variant.Of != "static" || b.Artifacts[0].Variant.IsVariant() {
		t.Errorf("artifacts %+v, want static's and a copy for static.x naming its variant", b.Artifacts)
	}
	if len(b.Failed) != 1 || !strings.Contains(b.Failed[0].Error(), "variant upx.x: its arm upx was not made") {
		t.Errorf("failed %v, want upx.x's arm not made", b.Failed)
	}
	if err := a.variantErr(errors.New("server exited")); !strings.Contains(err.Error(), "variant static.x (of static: env.GOGC=50") {
		t.Errorf("variantErr: %v, want the variant and its settings named", err)
	}
}
