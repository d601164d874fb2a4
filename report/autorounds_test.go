package report

import (
	"bytes"
	"strings"
	"testing"
)

// TestSteadyAutoRounds: the steady table says, beside each row's round
// count, why a step of `steady run --rounds auto` stopped, and a note
// says what "auto" means; rows with a fixed number of rounds say nothing
// more.
func TestSteadyAutoRounds(t *testing.T) {
	const row = `"budget":"max","protocol":"grpc","payload_bytes":8,"concurrency":1,"conns":1,"depth":1,"calls":3000,"seconds":1,"calls_per_s":3000,"p50_us":100,"p99_us":300,"server_cpu_us_per_call":50`
	jsonl := `{"kind":"provenance","schema":"` + Schema + `","tool":"steady","host":"h","started_at":"2026-12-02T04:00:00Z"}
{"kind":"step","arm":"a","scenario":"sequential",` + row + `,"rounds":6,"confidence":0.95,"stopped":"precision","precision":0.5,"max_rounds":6}
{"kind":"step","arm":"a","scenario":"throughput",` + row + `,"rounds":30,"confidence":0.95,"stopped":"max-rounds","precision":0.03,"max_rounds":30}
{"kind":"step","arm":"a","scenario":"open",` + row + `,"rounds":4,"busy_rounds":1,"confidence":0.95,"stopped":"interrupted","precision":0.03,"max_rounds":30}
{"kind":"step","arm":"a","scenario":"stream",` + row + `,"rounds":5,"confidence":0.95}
`
	c, ws, err := Read("auto_steady.jsonl", strings.NewReader(jsonl))
	if err != nil || c == nil || len(ws) != 0 {
		t.Fatalf("Read() = %v, %v, warnings %v", c, err, ws)
	}
	r := &Report{Campaigns: []*Campaign{c}}
	var b bytes.Buffer
	if err := r.Markdown(&b, MarkdownOptions{Title: "t"}); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"| 6, auto: ±50% reached |",
		"| 30, auto: cap of 30 before ±3% |",
		"| 4, 1 busy, auto: interrupted |",
		"| 5 |",
		"\"auto\" rows ran with `steady run --rounds auto`",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
}
