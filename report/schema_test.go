package report

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// TestSchemaMatchesProducers reads, from its source, the one producer struct
// this package keeps its own copy of (record.SteadyRow, as SteadyRow; the rest it
// reads through, or embeds, the producers' own types), and checks that every
// JSON key it writes is one this package reads, apart from the keys a report
// has no use for.
func TestSchemaMatchesProducers(t *testing.T) {
	tests := []struct {
		file, typ string
		mine      any
		unused    []string
	}{
		{"../record/steady.go", "SteadyRow", SteadyRow{}, []string{"service_p50_us", "service_p99_us", "service_max_us", "gc_cycles", "heap_bytes", "pods", "scale_event", "method"}},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.file)+"/"+tt.typ, func(t *testing.T) {
			if _, err := os.Stat(tt.file); err != nil {
				// A guard that skips when its source moves guards nothing:
				// point it at the producer's new home.
				t.Fatalf("%s.%s moved or was renamed (%v): update this test to read the producer from where it now lives", tt.file, tt.typ, err)
			}
			theirs, err := jsonKeys(tt.file, tt.typ)
			if err != nil {
				t.Fatal(err)
			}
			mine := map[string]bool{}
			rt := reflect.TypeOf(tt.mine)
			for i := 0; i < rt.NumField(); i++ {
				mine[strings.Split(rt.Field(i).Tag.Get("json"), ",")[0]] = true
			}
			for _, k := range tt.unused {
				mine[k] = true
			}
			for _, k := range theirs {
				if !mine[k] {
					t.Errorf("%s.%s writes %q, which report.%s does not read", tt.file, tt.typ, k, rt.Name())
				}
			}
		})
	}
}

// jsonKeys lists the json names of a struct type's fields, as written in
// its source.
func jsonKeys(file, typ string) ([]string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		return nil, err
	}
	var keys []string
	found := false
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok || ts.Name.Name != typ {
			return true
		}
		st, ok := ts.Type.(*ast.StructType)
		if !ok {
			return false
		}
		found = true
		for _, fld := range st.Fields.List {
			if fld.Tag == nil {
				continue
			}
			tag, _ := strconv.Unquote(fld.Tag.Value)
			name := strings.Split(reflect.StructTag(tag).Get("json"), ",")[0]
			if name != "" && name != "-" {
				keys = append(keys, name)
			}
		}
		return false
	})
	if !found {
		return nil, &os.PathError{Op: "find type " + typ, Path: file, Err: os.ErrNotExist}
	}
	return keys, nil
}
