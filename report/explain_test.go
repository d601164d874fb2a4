package report

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// The explain section from a real `coldstart explain` file (the slowinit
// test server as default and upx arms): phases, top packages with their
// modules, the arms compared, and the stacked phase plot.
func TestExplainSection(t *testing.T) {
	plots, md := renderFixture(t, "explain", "Explain")
	if len(plots) != 1 || plots[0].Kind != "waterfall" {
		t.Fatalf("plots %+v, want the one waterfall of the phases", plots)
	}
	for _, want := range []string{
		"## Start-up attribution: where the time goes",
		"**default** (max): top packages by median init time",
		"| 1 | `github.com/coldstart-go/coldstart/internal/testservers/slowinit/heavy` | github.com/coldstart-go/coldstart |",
		"**upx** (max): top packages",
		"| max | exec_to_runtime | default | upx |",
		"![where a local start's spawn → first RPC goes, phase medians",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q", want)
		}
	}
}

// A cold-start campaign run with --poll-interval: the polling table.
func TestPollSection(t *testing.T) {
	r := load(t, filepath.Join("testdata", "poll"))
	var b bytes.Buffer
	if err := r.Markdown(&b, MarkdownOptions{Title: "Polls"}); err != nil {
		t.Fatalf("Markdown() = %v", err)
	}
	golden(t, b.Bytes())
	for _, want := range []string{"## Readiness polling: what the platform sees", "| default | max | 4 | knative-activator | 200 |"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("Markdown lacks %q", want)
		}
	}
}
