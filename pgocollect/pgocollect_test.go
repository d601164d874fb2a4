package pgocollect_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coldstart-go/coldstart/builds"
	"github.com/coldstart-go/coldstart/pgocollect"
)

// TestCollect collects 1 s profiles the way the pgo arm does when given
// none: from the sample server under Echo load, and from a server with only
// the health service under health-check load, each built with the debug
// hook.
func TestCollect(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two servers and runs each under load for a second; skipped in -short mode")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	tests := []struct {
		pkg      string
		wantLoad string
	}{
		{builds.SamplePkg, "gRPC Echo unary, 64-byte payload, 4 goroutines"},
		{"./builds/testdata/healthserver", "gRPC health checks"},
	}
	for _, tt := range tests {
		t.Run(tt.pkg, func(t *testing.T) {
			ctx := context.Background()
			arts, errs := builds.BuildAll(ctx, builds.Source{Pkg: tt.pkg, Dir: root}, []string{"default"},
				builds.Options{CacheDir: cache, Instrument: true})
			if errs[0] != nil {
				t.Fatal(errs[0])
			}
			var log bytes.Buffer
			prof, note, err := pgocollect.Collect(ctx, arts[0], 1, &log)
			if err != nil {
				t.Fatal(err)
			}
			if err := builds.CheckProfile(prof); err != nil {
				t.Errorf("collected profile: %v", err)
			}
			if !strings.HasPrefix(note.Load, tt.wantLoad) || note.Calls == 0 || note.DurationS != 1 || note.CollectedAt == "" || note.Server != arts[0].Path {
				t.Errorf("note = %+v, want %q load with calls over 1 s from %s", note, tt.wantLoad, arts[0].Path)
			}
			if !strings.Contains(log.String(), arts[0].Path) {
				t.Errorf("log %q does not name the spawned server %s", log.String(), arts[0].Path)
			}
		})
	}
}

// TestCollectServerGone: a binary that is not a server fails with the
// reason, and nothing is left running.
func TestCollectServerGone(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "false")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho no server here >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, _, err := pgocollect.Collect(context.Background(), builds.Artifact{Arm: "default", Path: bin}, 1, nil)
	if err == nil || !strings.Contains(err.Error(), "no server here") {
		t.Errorf("Collect(not a server) = %v, want the server's exit with its stderr", err)
	}
}
