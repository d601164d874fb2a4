package cpulist

import (
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tt := range []struct {
		in      string
		want    []int
		wantErr string
	}{
		{"0", []int{0}, ""},
		{"0-3", []int{0, 1, 2, 3}, ""},
		{" 2-3, 0 ", []int{2, 3, 0}, ""},
		{"", nil, "empty CPU list"},
		{"x", nil, `malformed CPU list "x": "x" is not a CPU number`},
		{"3-1", nil, "range 3-1 runs backwards"},
		{"1024", nil, "CPU 1024 is beyond 1023"},
	} {
		got, err := Parse(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Parse(%q) = %v, %v; want an error with %q", tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("Parse(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}
