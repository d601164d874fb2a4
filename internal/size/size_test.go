package size

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int64
		err  string
	}{
		{"8", 8, ""},
		{"8B", 8, ""},
		{" 16 B ", 16, ""},
		{"1KiB", 1024, ""},
		{"64KiB", 65536, ""},
		{"1Ki", 1024, ""},
		{"256Mi", 256 << 20, ""},
		{"256MiB", 256 << 20, ""},
		{"1.5Gi", 3 << 29, ""},
		{"2Ti", 2 << 40, ""},
		{"2kB", 2000, ""},
		{"2KB", 2000, ""},
		{"3MB", 3e6, ""},
		{"1GB", 1e9, ""},
		{"0", 0, ""},
		{"1kb", 0, `unknown unit "kb"`},
		{"256mi", 0, `unknown unit "mi"`},
		{"KiB", 0, "malformed size"},
		{"", 0, "malformed size"},
		{"-1", 0, "malformed size"},
		{"-1Mi", 0, "malformed size"},
		{"1.2.3Ki", 0, "malformed size"},
		{".5Ki", 0, "malformed size"},
		{"5.Ki", 0, "malformed size"},
		{"1.5", 0, "a fraction of a byte"},
		{"0.3Ki", 0, "not a whole number of bytes"},
		{"99999999999Ti", 0, "out of range"},
		{"99999999999999999999", 0, "out of range"},
		{"1e3", 0, `unknown unit "e3"`},
	} {
		got, err := Parse(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Parse(%q) = %d, %v, want error containing %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Parse(%q) = %d, %v, want %d", tt.in, got, err, tt.want)
		}
	}
}

func TestFormat(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 1: "1", 1024: "1Ki", 1536: "1536", 256 << 20: "256Mi", 3 << 30: "3Gi", 1 << 40: "1Ti"} {
		if got := Format(n); got != want {
			t.Errorf("Format(%d) = %q, want %q", n, got, want)
		}
	}
}

// FuzzParse: Parse never panics, never returns a negative size, and what
// Format writes Parse reads back to the same number.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"8", "8B", "1KiB", "256Mi", "1.5Gi", "2kB", "-1", "1e3", "0.3Ki", "99999999999Ti", " 16 B ", "..Ki", "9223372036854775807", "8388608Ti"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := Parse(s)
		if err != nil {
			if !strings.Contains(err.Error(), "size") {
				t.Errorf("Parse(%q) error %q does not say it is about a size", s, err)
			}
			return
		}
		if n < 0 {
			t.Fatalf("Parse(%q) = %d, negative", s, n)
		}
		back, err := Parse(Format(n))
		if err != nil || back != n {
			t.Errorf("Parse(Format(%d) = %q) = %d, %v", n, Format(n), back, err)
		}
	})
}
