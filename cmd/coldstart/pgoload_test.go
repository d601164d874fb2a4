package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coldstart-go/coldstart/builds"
	"github.com/coldstart-go/coldstart/cmd/internal/cliopts"
	"github.com/coldstart-go/coldstart/internal/render"
)

// TestBuildPGOUserLoad builds the pgo arm of a server shaped as a user's
// (pgocollect/testdata/hotserver: it needs -listen ADDR and $HOT_KEY)
// through coldstart build's run function, its profile collected under its
// own method (--pgo-call) with its own arguments and environment; and
// refuses, naming the flag, a --pgo-load command that exits 1 at once and
// a --pgo-call method the server does not offer.
func TestBuildPGOUserLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a server twice and profiles it; skipped in -short mode")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	build := func(load cliopts.PGOLoad) (string, error) {
		o := &buildOptions{Pkg: "./pgocollect/testdata/hotserver", ModuleDir: root, Arms: builds.ArmList{"pgo"}, armsGiven: true,
			UPXLevel: builds.UPXDefault, PGODuration: time.Second, PGOLoad: load, Output: render.JSON, CacheDir: cache, Quiet: true,
			ServerArgs: []string{"-listen", "{addr}"}, Env: []string{"HOT_KEY=k"}, stderr: &bytes.Buffer{}}
		if err := o.validate(); err != nil {
			return "", err
		}
		var out bytes.Buffer
		err := runBuild(context.Background(), o, &out)
		return out.String(), err
	}

	out, err := build(cliopts.PGOLoad{Call: "/hot.v1.Hot/Spin", Data: `{"n": 20000}`})
	if err != nil {
		t.Fatal(err)
	}
	var arts []builds.Artifact
	if err := json.Unmarshal([]byte(out), &arts); err != nil || len(arts) != 1 {
		t.Fatalf("build -o json: %v\n%s", err, out)
	}
	if a := arts[0]; !strings.HasPrefix(a.ProfileLoad, "gRPC unary /hot.v1.Hot/Spin") || a.ProfileNote == "" {
		t.Errorf("artifact profile load %q, note %q: want the method's load and a note", a.ProfileLoad, a.ProfileNote)
	}
	var note builds.ProfileNote
	if b, err := os.ReadFile(arts[0].ProfileNote); err != nil || json.Unmarshal(b, &note) != nil {
		t.Fatalf("profile note %s: %v", arts[0].ProfileNote, err)
	}
	if note.LoadKind != "call" || note.Method != "/hot.v1.Hot/Spin" || strings.Join(note.ServerArgs, " ") != "-listen {addr}" || note.Calls == 0 {
		t.Errorf("profile note = %+v, want calls of /hot.v1.Hot/Spin with -listen {addr}", note)
	}

	for _, tt := range []struct {
		load cliopts.PGOLoad
		want []string
	}{
		{cliopts.PGOLoad{Command: "echo no route to {addr} >&2; exit 1"}, []string{"--pgo-load: exited before the profile was fetched: exit status 1", "no route to 127.0.0.1:"}},
		{cliopts.PGOLoad{Call: "/hot.v1.Hot/Nope"}, []string{"--pgo-call: ", "no method Nope (methods: Spin)"}},
	} {
		_, err := build(tt.load)
		for _, w := range tt.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("build with %+v: error %v, want it to say %q", tt.load, err, w)
			}
		}
	}
}
