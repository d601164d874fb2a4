package cliopts

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/coldstart-go/coldstart/campaign"
	"github.com/coldstart-go/coldstart/record"
)

// resolve parses the flags (each a "--variant V" or "--sweep S" pair) and
// resolves them against arms as a command does, through the shared flags.
func resolve(t *testing.T, arms []string, baseline string, args ...string) ([]campaign.Variant, error) {
	t.Helper()
	c, err := parse(append(args, "--baseline", baseline)...)
	if err != nil {
		return nil, err
	}
	if baseline == "" {
		c.Baseline = ""
	}
	if err := c.CheckArms(arms); err != nil {
		return nil, err
	}
	return c.Resolved(), nil
}

func TestVariants(t *testing.T) {
	arms := []string{"default", "static", "my.api"}
	v := func(name, of string, env, args []string) campaign.Variant {
		return campaign.Variant{Name: name, Variant: record.Variant{Of: of, Env: env, Args: args}}
	}
	tests := []struct {
		name     string
		baseline string
		args     []string
		want     []campaign.Variant
	}{
		{name: "ARM.SUFFIX starts ARM", args: []string{"--variant", "static.gogc50:env.GOGC=50,arg.--num-stream-workers=2"},
			want: []campaign.Variant{v("static.gogc50", "static", []string{"GOGC=50"}, []string{"--num-stream-workers=2"})}},
		{name: "no dot: the baseline arm", args: []string{"--variant", "gogc50:env.GOGC=50"},
			want: []campaign.Variant{v("gogc50", "default", []string{"GOGC=50"}, nil)}},
		{name: "no dot, --baseline: that arm", baseline: "static", args: []string{"--variant", "gogc50:env.GOGC=50"},
			want: []campaign.Variant{v("gogc50", "static", []string{"GOGC=50"}, nil)}},
		{name: "from= over the name", args: []string{"--variant", "static.x:from=default,env.A=1"},
			want: []campaign.Variant{v("static.x", "default", []string{"A=1"}, nil)}},
		{name: "an arm whose name holds a dot", args: []string{"--variant", "my.api.w2:arg.--workers=2"},
			want: []campaign.Variant{v("my.api.w2", "my.api", nil, []string{"--workers=2"})}},
		{name: "values keep their = and placeholders; a bare flag", args: []string{"--variant", "default.x:env.GODEBUG=gctrace=1,arg.--debug-addr={debug_addr},arg.--shared-write-buffer"},
			want: []campaign.Variant{v("default.x", "default", []string{"GODEBUG=gctrace=1"}, []string{"--debug-addr={debug_addr}", "--shared-write-buffer"})}},
		{name: "sweep of env on the baseline", args: []string{"--sweep", "env.GOGC=50,200,off"},
			want: []campaign.Variant{
				v("default.GOGC=50", "default", []string{"GOGC=50"}, nil),
				v("default.GOGC=200", "default", []string{"GOGC=200"}, nil),
				v("default.GOGC=off", "default", []string{"GOGC=off"}, nil)}},
		{name: "sweep of an argument on a named arm", args: []string{"--sweep", "static:arg.--num-stream-workers=1,4"},
			want: []campaign.Variant{
				v("static.num-stream-workers=1", "static", nil, []string{"--num-stream-workers=1"}),
				v("static.num-stream-workers=4", "static", nil, []string{"--num-stream-workers=4"})}},
		{name: "a value with a colon is no arm", args: []string{"--sweep", "arg.--listen=127.0.0.1:1"},
			want: []campaign.Variant{v("default.listen=127.0.0.1:1", "default", nil, []string{"--listen=127.0.0.1:1"})}},
		{name: "a control sets nothing", args: []string{"--variant", "static.ctl:control"},
			want: []campaign.Variant{{Name: "static.ctl", Variant: record.Variant{Of: "static", Control: true}}}},
		{name: "a control that sets the arm's own value", args: []string{"--variant", "static.w0:arg.--num-stream-workers=0,control"},
			want: []campaign.Variant{{Name: "static.w0", Variant: record.Variant{Of: "static", Args: []string{"--num-stream-workers=0"}, Control: true}}}},
		{name: "variants and sweeps in the order given", args: []string{"--sweep", "env.GOGC=50", "--variant", "static.m:env.GOMEMLIMIT=64MiB"},
			want: []campaign.Variant{
				v("default.GOGC=50", "default", []string{"GOGC=50"}, nil),
				v("static.m", "static", []string{"GOMEMLIMIT=64MiB"}, nil)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := resolve(t, arms, tt.baseline, tt.args...)
			if err != nil {
				t.Fatalf("%q: %v", tt.args, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("%q (-want +got):\n%s", tt.args, diff)
			}
		})
	}
}

// TestVariantErrors: each bad --variant or --sweep is refused naming the
// flag and what to do.
func TestVariantErrors(t *testing.T) {
	arms := []string{"default", "static", "snapshot"}
	tests := []struct {
		name     string
		baseline string
		args     []string
		want     []string
	}{
		{name: "key neither env. nor arg.", args: []string{"--variant", "x:GOGC=50"},
			want: []string{"--variant", `"GOGC=50"`, "neither env. nor arg.", "env.VAR=VALUE", "arg.ARG"}},
		{name: "sweep key neither", args: []string{"--sweep", "GOGC=50,100"},
			want: []string{"--sweep", `key "GOGC" is neither env. nor arg.`, "env.VAR=V1,V2", "arg.--FLAG=V1,V2"}},
		{name: "no settings", args: []string{"--variant", "x"}, want: []string{"--variant", "want NAME:KEY=VALUE"}},
		{name: "only from", args: []string{"--variant", "x:from=static"}, want: []string{"--variant", "sets nothing", "or control"}},
		{name: "env without =", args: []string{"--variant", "x:env.GOGC"}, want: []string{"--variant", "want env.VAR=VALUE"}},
		{name: "bad name", args: []string{"--variant", "-x:env.A=1"}, want: []string{"--variant", "begin with a letter or digit"}},
		{name: "empty sweep value", args: []string{"--sweep", "env.GOGC=50,,100"}, want: []string{"--sweep", "empty value"}},
		{name: "given twice", args: []string{"--variant", "a:env.A=1", "--variant", "a:env.A=2"},
			want: []string{"--variant a:env.A=2", "variant a given twice"}},
		{name: "a sweep and a variant of one name", args: []string{"--sweep", "env.GOGC=50", "--variant", "default.GOGC=50:env.GOGC=50"},
			want: []string{"--variant default.GOGC=50:env.GOGC=50", "given twice"}},
		{name: "an arm's name", args: []string{"--variant", "static:env.A=1"}, want: []string{"--variant static:env.A=1", "is an arm's name"}},
		{name: "an arm not measured", args: []string{"--variant", "upx.x:env.A=1"},
			want: []string{"--variant upx.x:env.A=1", "arm upx is not measured (arms: default, static, snapshot)", "add it to --arms"}},
		{name: "from= an arm not measured", args: []string{"--variant", "x:from=pgo,env.A=1"}, want: []string{"arm pgo is not measured"}},
		{name: "a sweep of an arm not measured", args: []string{"--sweep", "upx:env.GOGC=50"}, want: []string{"--sweep upx:env.GOGC=50", "arm upx is not measured"}},
		{name: "no arm of the prefix", args: []string{"--variant", "statc.x:env.A=1"},
			want: []string{"no measured arm is named statc", "ARM.SUFFIX", "from=ARM"}},
		{name: "of the snapshot arm", args: []string{"--variant", "snapshot.x:env.A=1"}, want: []string{"restores a checkpoint", "--start-from"}},
		{name: "--baseline a variant", baseline: "a", args: []string{"--variant", "a:env.A=1"}, want: []string{"--baseline: a is a variant"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := resolve(t, arms, tt.baseline, tt.args...)
			if err == nil {
				t.Fatalf("%q: no error", tt.args)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q: error %q lacks %q", tt.args, err, w)
				}
			}
		})
	}
}
