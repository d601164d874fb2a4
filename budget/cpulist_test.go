package budget

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCPUList(t *testing.T) {
	tests := []struct {
		in      string
		want    CPUList
		wantErr string
	}{
		{in: "0", want: CPUList{0}},
		{in: "0-1", want: CPUList{0, 1}},
		{in: "1,0", want: CPUList{0, 1}},
		{in: "", wantErr: "empty CPU list"},
		{in: "max", wantErr: `"max" is not a CPU number`},
		{in: "0,cores=1", wantErr: `"0,cores=1": want CPUs only`},
		{in: "0,mem=1Gi", wantErr: `"0,mem=1Gi": want CPUs only`},
		{in: "1000", wantErr: `CPU 1000 in "cpus=1000" is not one this machine lets us use`},
	}
	for _, tt := range tests {
		var l CPUList
		err := l.Set(tt.in)
		if tt.wantErr != "" {
			// pflag names the flag: the error must not name --budget.
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), Flag) {
				t.Errorf("CPUList.Set(%q) = %v, want an error containing %q and not naming %s", tt.in, err, tt.wantErr, Flag)
			}
			continue
		}
		if err != nil {
			t.Errorf("CPUList.Set(%q) = %v", tt.in, err)
			continue
		}
		if diff := cmp.Diff(tt.want, l); diff != "" {
			t.Errorf("CPUList.Set(%q) (-want +got):\n%s", tt.in, diff)
		}
		if got := l.String(); got != FormatCPUList(tt.want) {
			t.Errorf("CPUList(%q).String() = %q", tt.in, got)
		}
	}
}
