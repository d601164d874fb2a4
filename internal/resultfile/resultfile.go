// Package resultfile writes one campaign's results as JSON Lines under
// results/: a provenance line first, then one line per record. The file is
// rewritten through a temp file and a rename after every Add, so an
// interrupted campaign keeps everything it measured and no reader ever sees
// a half-written file.
package resultfile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/coldstart-go/coldstart/internal/atomicfile"
	"github.com/coldstart-go/coldstart/internal/provenance"
)

// Schema names the record format; readers check it.
const Schema = "coldstart/v1"

// File is one campaign's results file.
type File struct {
	mu   sync.Mutex
	path string
	buf  bytes.Buffer
}

// Name returns results/<YYYYMMDD-HHMMSS>_<label>.jsonl for the provenance's start.
func Name(dir, label string, p provenance.Provenance) string {
	return filepath.Join(dir, p.StartedAt.Local().Format("20060102-150405")+"_"+label+".jsonl")
}

// Create starts a results file in dir, named by Name, with the provenance
// as its first line. A name already taken gets a numeric suffix.
func Create(dir, label string, p provenance.Provenance) (*File, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create results dir: %w", err)
	}
	path := Name(dir, label, p)
	for i := 2; ; i++ {
		if _, err := os.Stat(path); os.IsNotExist(err) {
			break
		}
		path = filepath.Join(dir, fmt.Sprintf("%s_%s-%d.jsonl", p.StartedAt.Local().Format("20060102-150405"), label, i))
	}
	f := &File{path: path}
	if err := f.Add("provenance", struct {
		Schema string `json:"schema"`
		provenance.Provenance
	}{Schema, p}); err != nil {
		return nil, err
	}
	return f, nil
}

// Path is where the file is.
func (f *File) Path() string { return f.path }

// Add appends one record of the given kind ("probe", "summary", "artifact",
// ...) and rewrites the file atomically. v must marshal to a JSON object
// without a "kind" key of its own; one that does not is refused and the
// file stays as it was. When the rewrite fails, the file on disk stays as
// it was and the record is kept: the next successful Add writes it too.
func (f *File) Add(kind string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s record: %w", kind, err)
	}
	if len(b) < 2 || b[0] != '{' {
		return fmt.Errorf("encode %s record: not a JSON object", kind)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(b, &keys); err != nil {
		return fmt.Errorf("encode %s record: %w", kind, err)
	}
	if _, ok := keys["kind"]; ok {
		// Two "kind" keys on one line: a reader would take the record's
		// own for the record kind.
		return fmt.Errorf("encode %s record: it has its own \"kind\" key, which would clash with the record kind", kind)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.buf.WriteString(`{"kind":`)
	kb, _ := json.Marshal(kind)
	f.buf.Write(kb)
	if len(b) > 2 {
		f.buf.WriteByte(',')
	}
	f.buf.Write(b[1:])
	f.buf.WriteByte('\n')
	return f.flush()
}

func (f *File) flush() error {
	return atomicfile.WriteFile(f.path, f.buf.Bytes(), 0o644)
}
