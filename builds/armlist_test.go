package builds

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParseArmList: a command's own arms are accepted beside the
// registered ones and listed in errors; "all" stays the registered arms.
func TestParseArmList(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr string
	}{
		{in: "upx,prebound", want: []string{"upx", "prebound"}},
		{in: "all", want: Known()},
		{in: "gcc", wantErr: `unknown arm "gcc" (known: ` + strings.Join(Known(), ", ") + `, prebound)`},
		{in: " , ", wantErr: `no arms named (known: ` + strings.Join(Known(), ", ") + `, prebound)`},
	}
	for _, tt := range tests {
		got, err := ParseArmList(tt.in, "prebound")
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("ParseArmList(%q) = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseArmList(%q) = %v", tt.in, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("ParseArmList(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}
