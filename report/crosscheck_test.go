package report

import (
	"bytes"
	"strings"
	"testing"
)

func TestReadCrosscheckAndBuildErrors(t *testing.T) {
	in := `{"kind":"provenance","schema":"coldstart/v1","tool":"crosscheck","started_at":"2026-11-30T03:40:47Z"}
{"kind":"crosscheck","arm":"upx","runs":20,"coldstart_median_ms":90.95,"plain_median_ms":92.53,"diff_pct":-1.7,"max_ms":476.5,"agree":true}
{"kind":"crosscheck","arm":"slow","runs":20,"coldstart_median_ms":10,"plain_median_ms":1010,"diff_pct":-99,"max_ms":1010,"agree":false}
{"kind":"build_error","error":"upx arm: upx not found\nmore"}
`
	c, ws, err := Read("x_crosscheck.jsonl", strings.NewReader(in))
	if err != nil || len(ws) != 0 {
		t.Fatalf("Read() = %v, warnings %v", err, ws)
	}
	if len(c.Crosscheck) != 2 || len(c.BuildErrors) != 1 {
		t.Fatalf("read %d crosscheck rows, %d build errors; want 2, 1", len(c.Crosscheck), len(c.BuildErrors))
	}
	var buf bytes.Buffer
	r := &Report{Campaigns: []*Campaign{c}}
	if err := r.Markdown(&buf, MarkdownOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Prober accuracy", "| upx | 20 | 91.0 | 92.5 | -1.7% |", "| slow |", "no †", "Not built, not measured", "upx arm: upx not found"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("Markdown lacks %q:\n%s", want, buf.String())
		}
	}
	if !strings.Contains(buf.String(), "upx arm: upx not found\n") {
		t.Errorf("Markdown quotes more than the error's first line")
	}
}
