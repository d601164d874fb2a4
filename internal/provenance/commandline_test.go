package provenance

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCommandLine(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		resultsDir string
		want       string
	}{
		{name: "none", args: nil, want: ""},
		{name: "plain words stay bare", args: []string{"/tmp/go-build123/b001/exe/coldstart", "run", "-n", "20", "--arms", "default,static,upx", "--budget=cpus=0-1,mem=256Mi"},
			want: "coldstart run -n 20 --arms default,static,upx --budget=cpus=0-1,mem=256Mi"},
		{name: "budget list quoted", args: []string{"coldstart", "run", "--budget", "cpus=0;cpus=0-1;cores=0.5"},
			want: "coldstart run --budget 'cpus=0;cpus=0-1;cores=0.5'"},
		{name: "campaign dir: the directory the file is in now", args: []string{"coldstart", "density", "--results-dir", "results/.campaign-90K8hf", "-o", "json"}, resultsDir: "results",
			want: "coldstart density --results-dir results -o json"},
		{name: "campaign dir inline", args: []string{"coldstart", "run", "--results-dir=results/.campaign-90K8hf"}, resultsDir: "published/results",
			want: "coldstart run --results-dir=published/results"},
		{name: "campaign dir, Go flag style", args: []string{"/tmp/x/criukdat", "-n", "5", "-results-dir", "/work/main/results/.campaign-AbC123"}, resultsDir: "results",
			want: "criukdat -n 5 -results-dir results"},
		{name: "campaign dir kept without a directory to name", args: []string{"coldstart", "run", "--results-dir", "results/.campaign-90K8hf"},
			want: "coldstart run --results-dir results/.campaign-90K8hf"},
		{name: "other results dir kept", args: []string{"coldstart", "run", "--results-dir", "out/nightly"}, resultsDir: "results",
			want: "coldstart run --results-dir out/nightly"},
		{name: "server arguments only quoted", args: []string{"coldstart", "run", "--", "--results-dir", "results/.campaign-x", "--listen={addr}"}, resultsDir: "results",
			want: "coldstart run -- --results-dir results/.campaign-x '--listen={addr}'"},
		{name: "secrets redacted", args: []string{"coldstart", "run", "--env", "API_TOKEN=hunter2"},
			want: "coldstart run --env 'API_TOKEN=<redacted>'"},
		{name: "empty, spaces, quotes", args: []string{"steady", "run", "--probe-request", "", "--note", "it's a test", "--path", "$HOME/x"},
			want: `steady run --probe-request '' --note 'it'"'"'s a test' --path '$HOME/x'`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := append([]string(nil), tt.args...)
			if got := CommandLine(tt.args, tt.resultsDir); got != tt.want {
				t.Errorf("CommandLine(%q, %q) = %s, want %s", tt.args, tt.resultsDir, got, tt.want)
			}
			if d := cmp.Diff(before, tt.args); d != "" {
				t.Errorf("CommandLine changed the recorded args (-before +after):\n%s", d)
			}
		})
	}
}

// TestCommandLineBash pastes CommandLine's output into bash itself: each
// argument comes back as recorded, whatever it holds.
func TestCommandLineBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skipf("no bash to paste into: %v", err)
	}
	args := []string{"coldstart", "run", "--budget", "cpus=0;cpus=0-1;cores=0.5", "", "a b\tc", "new\nline",
		"it's", `"double"`, `back\slash`, "$HOME", "`date`", "$(id)", "!!", "~", "~/x", "*", "?", "[a]", "{a,b}",
		"a&b", "a|b", "a>b", "<in", "#c", "x=1", "--k=v w", "é ü 日本", "%s", "-", "--", "{addr}"}
	line := CommandLine(args, "")
	// printf repeats its format for each argument: NUL-separated, so an
	// argument holding a newline comes back whole.
	cmd := exec.Command(bash, "-c", `printf '%s\0' `+line)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bash -c %q: %v", line, err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if d := cmp.Diff(args, got); d != "" {
		t.Errorf("bash read %s as (-want +got):\n%s", line, d)
	}
}
