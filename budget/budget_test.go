package budget

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"

	"github.com/coldstart-go/coldstart/internal/cpulist"
)

// lastCPU is the highest CPU this process may use, for "CPU the machine
// does not have" cases that hold on any machine.
func allowed(t *testing.T) []int {
	t.Helper()
	cpus, err := AllowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	return cpus
}

func TestParse(t *testing.T) {
	cpu0 := allowed(t)[0]
	tests := []struct {
		name string
		in   string
		want []Budget
	}{
		{"max", "max", []Budget{{}}},
		{"cpu set", "cpus=0", []Budget{{CPUs: []int{cpu0}}}},
		{"quota", "cores=0.5", []Budget{{Cores: 0.5}}},
		{"millicores", "cores=250m", []Budget{{Cores: 0.25}}},
		{"memory Mi", "mem=256Mi", []Budget{{MemBytes: 256 << 20}}},
		{"memory bytes", "mem=1000000", []Budget{{MemBytes: 1000000}}},
		{"memory fraction", "mem=1.5Gi", []Budget{{MemBytes: 3 << 29}}},
		{"combined", "cores=1,mem=512Mi", []Budget{{Cores: 1, MemBytes: 512 << 20}}},
		{"list", "cpus=0;cores=0.5;max", []Budget{{CPUs: []int{0}}, {Cores: 0.5}, {}}},
		{"spaces and trailing separator", " cores = 0.5 , mem=64Mi ; max ;", []Budget{{Cores: 0.5, MemBytes: 64 << 20}, {}}},
		{"all keys", "cpus=0,cores=0.5,mem=32Mi", []Budget{{CPUs: []int{0}, Cores: 0.5, MemBytes: 32 << 20}}},
		{"keys any order", "mem=32Mi,cpus=0", []Budget{{CPUs: []int{0}, MemBytes: 32 << 20}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.in)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.in, err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("Parse(%q) mismatch (-want +got):\n%s", tt.in, d)
			}
		})
	}
}

// TestParseCPULists needs two CPUs for ranges and lists.
func TestParseCPULists(t *testing.T) {
	cpus := allowed(t)
	if len(cpus) < 2 || cpus[0] != 0 || cpus[1] != 1 {
		t.Skipf("needs CPUs 0 and 1, have %s", FormatCPUList(cpus))
	}
	tests := []struct {
		in   string
		want []int
	}{
		{"cpus=0-1", []int{0, 1}},
		{"cpus=1,0", []int{0, 1}},
		{"cpus=0,1,mem=1Gi", []int{0, 1}},
	}
	for _, tt := range tests {
		got, err := ParseOne(tt.in)
		if err != nil {
			t.Fatalf("ParseOne(%q): %v", tt.in, err)
		}
		if d := cmp.Diff(tt.want, got.CPUs); d != "" {
			t.Errorf("ParseOne(%q).CPUs mismatch (-want +got):\n%s", tt.in, d)
		}
	}
}

func TestParseErrors(t *testing.T) {
	cpus := allowed(t)
	missing := cpus[len(cpus)-1] + 1
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", "empty budget list"},
		{"only separators", ";;", "empty budget list"},
		{"unknown key", "cpu=0", `unknown key "cpu"`},
		{"bare word", "half", "malformed item"},
		{"max combined", "max,mem=1Gi", "max stands alone"},
		{"CPU missing", "cpus=" + itoa(missing), "not one this machine lets us use"},
		{"CPU range missing", "cpus=0-" + itoa(missing), "not one this machine lets us use"},
		{"CPU negative", "cpus=-1", "not a CPU number"},
		{"CPU backwards", "cpus=1-0", "runs backwards"},
		{"CPU twice", "cpus=0,0", "listed twice"},
		{"CPU empty", "cpus=", "empty CPU list"},
		{"quota zero", "cores=0", "at least 0.01"},
		{"quota negative", "cores=-1", "at least 0.01"},
		{"quota tiny", "cores=0.001", "at least 0.01"},
		{"quota malformed", "cores=half", "malformed CPU quota"},
		{"quota beyond machine", "cores=" + itoa(len(cpus)+1), "exceeds the"},
		{"quota beyond CPU set", "cpus=0,cores=2", "exceeds the 1 CPUs in its CPU set"},
		{"size malformed", "mem=256mb", `malformed size "256mb"`},
		{"size empty", "mem=", "malformed size"},
		{"size zero", "mem=0", "must be > 0"},
		{"size negative", "mem=-1Mi", "malformed size"},
		{"size fractional bytes", "mem=0.3Ki", "not a whole number of bytes"},
		{"size overflow", "mem=99999999999Ti", "out of range"},
		{"key twice", "mem=1Gi,mem=2Gi", "mem given twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.in)
			if err == nil {
				t.Fatalf("Parse(%q) = %v, want error containing %q", tt.in, got, tt.want)
			}
			if !strings.HasPrefix(err.Error(), "--budget: ") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse(%q) error = %q, want --budget: ...%s...", tt.in, err, tt.want)
			}
			if !errors.Is(err, ErrUsage) {
				t.Errorf("Parse(%q) error %q is not ErrUsage", tt.in, err)
			}
		})
	}
}

func itoa(n int) string { return FormatCPUList([]int{n}) }

func TestStringRoundTrip(t *testing.T) {
	for _, in := range []string{
		"max", "cpus=0", "cores=0.5", "cores=0.25", "cores=1.5", "mem=256Mi", "mem=1000000",
		"mem=3Gi", "mem=1536Mi", "cpus=0,cores=0.5,mem=32Mi",
	} {
		b, err := ParseOne(in)
		if err != nil {
			t.Fatalf("ParseOne(%q): %v", in, err)
		}
		if got := b.String(); got != in {
			t.Errorf("ParseOne(%q).String() = %q, want %q", in, got, in)
		}
		back, err := ParseOne(b.String())
		if err != nil {
			t.Fatalf("ParseOne(%q): %v", b.String(), err)
		}
		if d := cmp.Diff(b, back); d != "" {
			t.Errorf("round trip of %q mismatch (-want +got):\n%s", in, d)
		}
	}
	// Other spellings render canonically.
	for in, want := range map[string]string{
		"cores=500m": "cores=0.5", "mem=1.5Gi": "mem=1536Mi", "mem=1048576": "mem=1Mi",
		"mem=32Mi , cores=1": "cores=1,mem=32Mi",
	} {
		b, err := ParseOne(in)
		if err != nil {
			t.Fatalf("ParseOne(%q): %v", in, err)
		}
		if got := b.String(); got != want {
			t.Errorf("ParseOne(%q).String() = %q, want %q", in, got, want)
		}
	}
}

func TestFormatCPUList(t *testing.T) {
	tests := []struct {
		in   []int
		want string
	}{
		{nil, ""},
		{[]int{0}, "0"},
		{[]int{0, 1, 2}, "0-2"},
		{[]int{5, 0, 2, 1}, "0-2,5"},
		{[]int{1, 3, 4, 6}, "1,3-4,6"},
	}
	for _, tt := range tests {
		if got := FormatCPUList(tt.in); got != tt.want {
			t.Errorf("FormatCPUList(%v) = %q, want %q", tt.in, got, tt.want)
		}
		if len(tt.in) > 0 {
			back, err := cpulist.Parse(tt.want)
			if err != nil || FormatCPUList(back) != tt.want {
				t.Errorf("cpulist.Parse(%q) = %v, %v", tt.want, back, err)
			}
		}
	}
}

func TestList(t *testing.T) {
	l := &List{Budgets: []Budget{{}}}
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.Var(l, "budget", "budgets")
	if err := fs.Parse([]string{"--budget", "cpus=0;cores=0.5", "--budget", "mem=64Mi"}); err != nil {
		t.Fatal(err)
	}
	want := []Budget{{CPUs: []int{0}}, {Cores: 0.5}, {MemBytes: 64 << 20}}
	if d := cmp.Diff(want, l.Budgets); d != "" {
		t.Errorf("--budget mismatch (-want +got):\n%s", d)
	}
	if got, want := l.String(), "cpus=0;cores=0.5;mem=64Mi"; got != want {
		t.Errorf("List.String() = %q, want %q", got, want)
	}
	err := fs.Parse([]string{"--budget", "cores=0"})
	wantErr := `invalid argument "cores=0" for "--budget" flag: CPU quota cores=0 must be at least 0.01`
	if err == nil || !strings.HasPrefix(err.Error(), wantErr) {
		t.Errorf("--budget cores=0: error %v, want %s...", err, wantErr)
	}
	if !errors.Is(err, ErrUsage) {
		t.Errorf("--budget cores=0: error %v is not ErrUsage", err)
	}
}

func TestGOMAXPROCS(t *testing.T) {
	n := len(allowed(t))
	tests := []struct {
		b    Budget
		want int
	}{
		{Budget{}, n},
		{Budget{CPUs: []int{0}}, 1},
		{Budget{Cores: 0.5}, min(n, 2)},
		{Budget{CPUs: []int{0}, Cores: 0.5}, 1},
		{Budget{Cores: 100}, n},
		{Budget{MemBytes: 1 << 30}, n},
	}
	for _, tt := range tests {
		if got := tt.b.GOMAXPROCS(); got != tt.want {
			t.Errorf("%s.GOMAXPROCS() = %d, want %d", tt.b, got, tt.want)
		}
	}
}

func TestCPULimit(t *testing.T) {
	n := float64(len(allowed(t)))
	tests := []struct {
		b    Budget
		want float64
	}{
		{Budget{}, n},
		{Budget{CPUs: []int{0}}, 1},
		{Budget{Cores: 0.5}, 0.5},
		{Budget{CPUs: []int{0, 1}, Cores: 1.5}, 1.5},
		{Budget{CPUs: []int{0}, Cores: 1.5}, 1},
		{Budget{Cores: 100}, n},
		{Budget{MemBytes: 1 << 30}, n},
	}
	for _, tt := range tests {
		if got := tt.b.CPULimit(); got != tt.want {
			t.Errorf("%s.CPULimit() = %g, want %g", tt.b, got, tt.want)
		}
	}
}

// FuzzParse: Parse never panics; a list it accepts renders (String) to a
// list it reads back to the same budgets, and its errors are usage errors
// naming --budget's grammar.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"max", "cpus=0", "cpus=0-1", "cores=0.5", "mem=256Mi", "cpus=0;cores=1,mem=512Mi;max", "cores=500m", "mem=1.5Gi", "cpus=0,2", "cpus=1-0", "cores=NaN", "mem=-1", ";;", "cpus=", "x=1", "cores=1e400", "mem=1KiB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, list string) {
		bs, err := Parse(list)
		if err != nil {
			if !errors.Is(err, ErrUsage) {
				t.Errorf("Parse(%q) error %v is not ErrUsage", list, err)
			}
			return
		}
		var items []string
		for _, b := range bs {
			if b.Cores < 0 || b.MemBytes < 0 {
				t.Fatalf("Parse(%q) = %+v: negative figures", list, b)
			}
			items = append(items, b.String())
		}
		back, err := Parse(strings.Join(items, ";"))
		if err != nil {
			t.Fatalf("Parse(%q) = %v, but its rendering %q does not parse: %v", list, bs, items, err)
		}
		for i := range bs {
			if back[i].String() != bs[i].String() {
				t.Errorf("Parse(%q)[%d] = %s, read back as %s", list, i, bs[i], back[i])
			}
		}
	})
}
