package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// jsonl builds a results file for a test: each record one JSON object,
// v's fields with "kind" set.
type jsonl struct {
	t *testing.T
	b bytes.Buffer
}

func newJSONL(t *testing.T) *jsonl { return &jsonl{t: t} }

// add appends v (a struct or a map) as a record of kind.
func (j *jsonl) add(kind string, v any) {
	j.t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		j.t.Fatal(err)
	}
	m := map[string]any{}
	if err := json.Unmarshal(raw, &m); err != nil {
		j.t.Fatal(err)
	}
	m["kind"] = kind
	if err := json.NewEncoder(&j.b).Encode(m); err != nil {
		j.t.Fatal(err)
	}
}

// write writes the records to name in a temporary directory of the
// test's and returns its path.
func (j *jsonl) write(name string) string {
	j.t.Helper()
	path := filepath.Join(j.t.TempDir(), name)
	if err := os.WriteFile(path, j.b.Bytes(), 0o644); err != nil {
		j.t.Fatal(err)
	}
	return path
}
