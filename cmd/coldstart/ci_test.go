package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestCIExamples runs the coldstart commands of docs/ci's examples for
// real, in the order their jobs run (main's baseline, then the change's
// campaign and gate), on the bundled sample server with few runs: what a
// user copies measures and gates. Both sides build the same code, so the
// gate must pass; the example's GATE_FLAGS widen the tolerance to 3× and
// allow a busy host, since this test's host is shared and its two
// campaigns run apart, 8 runs each, compared unpaired: while the other
// packages' tests ran, the same build came out 1.61× [1.36, 1.91] slower
// the second time. That the gate finds a real regression is gate.txtar's
// and gate_base.txtar's to show. The
// examples' relative results directories are put under a temporary
// directory; the commands run in the checkout, where ./examples/echo is.
func TestCIExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts real servers; skipped in -short mode")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, ex := range []struct {
		file string
		// jobs in the order they run; commands reads one job's lines.
		jobs []string
		// env is the key of the example's variables; under, of its jobs
		// ("" = the top level).
		env, under string
		commands   func(job map[string]any) []string
	}{
		{"github-actions.yml", []string{"baseline", "gate"}, "env", "jobs", func(job map[string]any) []string {
			var lines []string
			for _, st := range asList(job["steps"]) {
				if run, ok := asMap(st)["run"].(string); ok {
					lines = append(lines, shellLines(run)...)
				}
			}
			return lines
		}},
		{"gitlab-ci.yml", []string{"coldstart-baseline", "coldstart-gate"}, "variables", "", func(job map[string]any) []string {
			var lines []string
			for _, l := range asList(job["script"]) {
				if s, ok := l.(string); ok {
					lines = append(lines, shellLines(s)...)
				}
			}
			return lines
		}},
	} {
		t.Run(ex.file, func(t *testing.T) {
			doc := readYAML(t, filepath.Join(root, "docs", "ci", ex.file))
			work := t.TempDir()
			env := os.Environ()
			for k, v := range asMap(doc[ex.env]) {
				env = append(env, k+"="+v.(string))
			}
			summary := filepath.Join(work, "summary.md")
			env = append(env, "PKG=./examples/echo", "RUNS=8", "ARMS=default,static",
				"GATE_FLAGS=--allow-busy --max-regression 2", "GITHUB_STEP_SUMMARY="+summary,
				"COLDSTART_STATE_DIR="+filepath.Join(work, "state"))
			paths := strings.NewReplacer("base-results", filepath.Join(work, "base-results"),
				"new-results", filepath.Join(work, "new-results"), "coldstart-gate.md", filepath.Join(work, "coldstart-gate.md"))
			jobs := doc
			if ex.under != "" {
				jobs = asMap(doc[ex.under])
			}
			ran := 0
			for _, name := range ex.jobs {
				job := asMap(jobs[name])
				if job == nil {
					t.Fatalf("%s: no job %s", ex.file, name)
				}
				for _, line := range ex.commands(job) {
					if !strings.HasPrefix(line, "coldstart ") {
						continue // installing Go and coldstart: this test is coldstart
					}
					cmd := exec.Command("sh", "-c", paths.Replace(line))
					cmd.Dir, cmd.Env = root, env
					out, err := cmd.CombinedOutput()
					if err != nil {
						t.Fatalf("%s job %s: %s: %v\n%s", ex.file, name, line, err, out)
					}
					ran++
				}
			}
			if ran < 3 {
				t.Fatalf("%s: ran %d coldstart commands, want the baseline's run, the change's run and the gate", ex.file, ran)
			}
			md := filepath.Join(work, "coldstart-gate.md")
			if strings.HasPrefix(ex.file, "github") {
				md = summary
			}
			b, err := os.ReadFile(md)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"### coldstart gate", "| default | max | first RPC median |", "| static | max | first RPC median |", "**Pass:**"} {
				if !strings.Contains(string(b), want) {
					t.Errorf("%s: the gate's summary lacks %q:\n%s", ex.file, want, b)
				}
			}
		})
	}
}

func readYAML(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var doc map[string]any
	if err := json.Unmarshal(j, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return doc
}

// shellLines splits a script into its command lines, a trailing
// backslash joining a line to the next.
func shellLines(s string) []string {
	var out []string
	cur := ""
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l)
		if rest, ok := strings.CutSuffix(l, "\\"); ok {
			cur += rest + " "
			continue
		}
		if l = strings.TrimSpace(cur + l); l != "" {
			out = append(out, l)
		}
		cur = ""
	}
	return out
}

func asMap(v any) map[string]any { m, _ := v.(map[string]any); return m }
func asList(v any) []any         { l, _ := v.([]any); return l }
