// Package render writes result rows as an aligned table, JSON, CSV or
// Markdown. Columns come from the rows' struct fields and their json names,
// so the unit in a JSON key (p50_ms, size_bytes) is also the column header.
package render

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Format is an output format; it is a pflag.Value for -o.
type Format string

// The formats every results-printing command accepts.
const (
	Table    Format = "table"
	JSON     Format = "json"
	CSV      Format = "csv"
	Markdown Format = "markdown"
)

// Formats lists the accepted formats, for help text and errors.
var Formats = []Format{Table, JSON, CSV, Markdown}

func (f *Format) String() string { return string(*f) }

// Type names the flag's value kind in help text.
func (f *Format) Type() string { return "format" }

// Set accepts one of Formats.
func (f *Format) Set(s string) error {
	for _, k := range Formats {
		if string(k) == s {
			*f = k
			return nil
		}
	}
	return fmt.Errorf("unknown format %q (known: table, json, csv, markdown)", s)
}

// Write renders rows, a slice of structs (or pointers to structs), in format f.
// JSON is the rows as they are; the other formats have one column per
// exported field with a json name, skipping fields tagged render:"-" and
// flattening nothing: nested values are printed with %v.
// A field tagged render:"%.1f" is printed with that verb; one tagged
// render:"bytes" is printed in MiB in tables and Markdown, raw in CSV.
func Write(w io.Writer, f Format, rows any) error {
	if f == JSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	header, cells, err := table(rows, f != CSV)
	if err != nil {
		return err
	}
	switch f {
	case CSV:
		cw := csv.NewWriter(w)
		if err := cw.Write(header); err != nil {
			return err
		}
		if err := cw.WriteAll(cells); err != nil {
			return err
		}
		return cw.Error()
	case Markdown:
		fmt.Fprintf(w, "| %s |\n", strings.Join(header, " | "))
		fmt.Fprintf(w, "|%s\n", strings.Repeat("---|", len(header)))
		for _, row := range cells {
			if _, err := fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | ")); err != nil {
				return err
			}
		}
		return nil
	case Table, "":
		return WriteTable(w, header, cells)
	}
	return fmt.Errorf("unknown format %q", f)
}

// Cells are rows' column names and cells as the table format prints them
// (bytes in MiB, render verbs applied), for a caller that reshapes the
// table before writing it (Write's Table does no more than align these).
func Cells(rows any) (header []string, cells [][]string, err error) {
	return table(rows, true)
}

// WriteTable aligns header and cells as Write's Table format does.
func WriteTable(w io.Writer, header []string, cells [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, row := range cells {
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	return tw.Flush()
}

type column struct {
	index []int
	name  string
	verb  string
}

func table(rows any, human bool) ([]string, [][]string, error) {
	v := reflect.ValueOf(rows)
	if v.Kind() != reflect.Slice {
		return nil, nil, fmt.Errorf("render: rows are a %s, want a slice", v.Kind())
	}
	et := v.Type().Elem()
	if et.Kind() == reflect.Pointer {
		et = et.Elem()
	}
	if et.Kind() != reflect.Struct {
		return nil, nil, fmt.Errorf("render: rows hold %s, want structs", et)
	}
	cols := columns(et, nil)
	header := make([]string, len(cols))
	for i, c := range cols {
		header[i] = c.name
	}
	var cells [][]string
	for i := 0; i < v.Len(); i++ {
		rv := reflect.Indirect(v.Index(i))
		row := make([]string, len(cols))
		for j, c := range cols {
			fv, err := rv.FieldByIndexErr(c.index)
			if err != nil {
				row[j] = ""
				continue
			}
			verb := c.verb
			if verb == "bytes" {
				verb = ""
				if human {
					verb = "bytes"
				}
			}
			row[j] = cell(fv, verb)
		}
		cells = append(cells, row)
	}
	return header, cells, nil
}

func columns(t reflect.Type, prefix []int) []column {
	var cols []column
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		idx := append(append([]int(nil), prefix...), i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				cols = append(cols, columns(ft, idx)...)
				continue
			}
		}
		r := f.Tag.Get("render")
		if name == "-" || r == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		cols = append(cols, column{index: idx, name: name, verb: r})
	}
	return cols
}

func cell(v reflect.Value, verb string) string {
	if v.Kind() == reflect.Pointer {
		// An optional figure: empty when missing, else as its value.
		if v.IsNil() {
			return ""
		}
		return cell(v.Elem(), verb)
	}
	if verb == "bytes" && v.CanInt() {
		return strconv.FormatFloat(float64(v.Int())/(1<<20), 'f', 1, 64) + " MiB"
	}
	if verb != "" {
		return fmt.Sprintf(verb, v.Interface())
	}
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		return formatFloat(v.Float())
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.String {
			return strings.Join(v.Interface().([]string), " ")
		}
	case reflect.Map:
		if m, ok := v.Interface().(map[string]float64); ok {
			return formatTimes(m)
		}
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return ""
		}
		return cell(v.Elem(), verb)
	}
	return fmt.Sprint(v.Interface())
}

// Number formats x as every table does: three significant digits for
// small numbers, whole numbers for large ones (0.123, 1.23, 12.3, 123).
func Number(x float64) string { return formatFloat(x) }

// formatFloat keeps three significant digits for small numbers and whole
// numbers for large ones: 0.123, 1.23, 12.3, 123, 12345.
func formatFloat(x float64) string {
	a := x
	if a < 0 {
		a = -a
	}
	switch {
	case a == 0:
		return "0"
	case a >= 100:
		return strconv.FormatFloat(x, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(x, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(x, 'f', 2, 64)
	default:
		return strconv.FormatFloat(x, 'f', 3, 64)
	}
}

// formatTimes renders named times ("phase -> ms from t0") in the order they
// happened: "started=0.81 accepting=8.92 first_rpc=10.4".
func formatTimes(m map[string]float64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] < m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + formatFloat(m[k])
	}
	return strings.Join(parts, " ")
}
