package campaign

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/coldstart-go/coldstart/internal/testservers"
	"github.com/coldstart-go/coldstart/launch"
)

func TestArmEvict(t *testing.T) {
	src := testservers.Build(t)
	bin := filepath.Join(t.TempDir(), "server")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	a := Arm{Name: "default", Path: bin}
	e, err := a.evict(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if e.FilePages == 0 || e.ResidentBefore == 0 {
		t.Fatalf("evict: %+v; want the just-written binary resident", e)
	}
	if e.ResidentAfter >= e.ResidentBefore {
		t.Errorf("evict: %d pages resident after, %d before; want fewer", e.ResidentAfter, e.ResidentBefore)
	}

	eng, err := launch.NewEngine("docker")
	if err != nil {
		t.Skip(err)
	}
	_, err = Arm{Name: "image", Path: bin, Launcher: eng}.evict(context.Background())
	if !errors.Is(err, ErrNoCacheFiles) {
		t.Errorf("evict through an engine = %v, want ErrNoCacheFiles", err)
	}
}

func TestParsePageCache(t *testing.T) {
	for in, want := range map[string]PageCache{"": Warm, "warm": Warm, "cold": Cold} {
		if got, err := ParsePageCache(in); err != nil || got != want {
			t.Errorf("ParsePageCache(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParsePageCache("lukewarm"); err == nil {
		t.Error(`ParsePageCache("lukewarm") = nil error`)
	}
}
