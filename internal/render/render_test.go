package render

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

type inner struct {
	Note string `json:"note"`
}

type row struct {
	Arm       string   `json:"arm"`
	MedianMs  float64  `json:"median_ms"`
	SizeBytes int64    `json:"size_bytes" render:"bytes"`
	PSSBytes  *int64   `json:"pss_bytes" render:"bytes"` // nil: a reading that failed
	Ratio     float64  `json:"ratio" render:"%.3f"`
	Command   []string `json:"command"`
	Hidden    string   `json:"hidden" render:"-"`
	Skipped   string   `json:"-"`
	inner
}

func TestWrite(t *testing.T) {
	pss := int64(3355443)
	rows := []row{
		{Arm: "default", MedianMs: 7.234, SizeBytes: 19051830, PSSBytes: &pss, Ratio: 1, Command: []string{"go", "build"}, Hidden: "x", inner: inner{"a"}},
		{Arm: "upx", MedianMs: 123.4567, SizeBytes: 5054864, Ratio: 0.26534, Command: []string{"upx", "-q"}, inner: inner{"b, with comma"}},
	}
	for _, f := range Formats {
		t.Run(string(f), func(t *testing.T) {
			var buf bytes.Buffer
			if err := Write(&buf, f, rows); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", t.Name()+".golden")
			if *update {
				os.MkdirAll(filepath.Dir(golden), 0o755)
				if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("read golden (run with -update): %v", err)
			}
			if diff := cmp.Diff(string(want), buf.String()); diff != "" {
				t.Errorf("Write(%s) mismatch (-want +got):\n%s", f, diff)
			}
		})
	}
}

func TestFormatSet(t *testing.T) {
	var f Format
	if err := f.Set("yaml"); err == nil {
		t.Errorf("Set(yaml) = nil, want an error naming the known formats")
	}
	if err := f.Set("csv"); err != nil || f != CSV {
		t.Errorf("Set(csv) = %v, %q", err, f)
	}
}

func TestWriteRejectsNonSlice(t *testing.T) {
	if err := Write(&bytes.Buffer{}, Table, row{}); err == nil {
		t.Error("Write(Table, struct) = nil, want an error")
	}
}
