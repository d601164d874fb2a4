package report

import (
	"strings"
	"testing"

	"github.com/coldstart-go/coldstart/internal/deptest"
)

// forbiddenDeps are the packages report must not depend on, with why:
// report reads results files through package record's types, so that
// reading (and regenerating a published report) needs none of the code
// that launches, probes, loads, pulls or builds. Each covers the package
// and every package under it.
var forbiddenDeps = []struct{ prefix, why string }{
	{"github.com/coldstart-go/coldstart/launch", "launching (plain, runc, docker/podman)"},
	{"github.com/coldstart-go/coldstart/prober", "probing, and launching through it"},
	{"github.com/coldstart-go/coldstart/pull", "image pulls (its rows are record.PullRow)"},
	{"github.com/coldstart-go/coldstart/explain/inittrace", "traced campaigns (explain itself parses and analyzes: its rows are record.Trace)"},
	{"github.com/coldstart-go/coldstart/steady", "steady's load generator (its rows are record.SteadyRow, record.SoakRow)"},
	{"github.com/coldstart-go/coldstart/builds", "building arms"},
	{"github.com/coldstart-go/coldstart/campaign", "running campaigns"},
	{"github.com/coldstart-go/coldstart/budget", "cgroup control"},
	{"github.com/coldstart-go/coldstart/knative", "Knative clients"},
	{"github.com/coldstart-go/coldstart/pgocollect", "PGO collection"},
	{"github.com/coldstart-go/coldstart/internal/ociimage", "OCI image code"},
	{"github.com/coldstart-go/coldstart/internal/unpack", "image unpacking"},
	{"github.com/coldstart-go/coldstart/internal/leftovers", "run state and sweeping"},
	{"github.com/coldstart-go/coldstart/internal/runas", "dropping privileges"},
	{"github.com/google/go-containerregistry/", "image code"},
	{"github.com/opencontainers/", "runc and OCI runtime code"},
	{"google.golang.org/grpc", "gRPC clients"},
	{"k8s.io/", "Kubernetes clients"},
	{"knative.dev/", "Knative clients"},
}

// TestDependencies fails when report's dependencies grow back to include
// launching, probing, load, pull, build or image code (as they did when
// report read pull, soak and explain rows through their producers'
// packages). It asks the go command, as `go list -deps ./report` does.
func TestDependencies(t *testing.T) {
	deps := deptest.List(t, "github.com/coldstart-go/coldstart/report")
	for _, d := range deps {
		if why := forbiddenWhy(d); why != "" {
			t.Errorf("report depends on %s (%s): read its rows through package record instead", d, why)
		}
	}
}

// forbiddenWhy says why report must not depend on package path ("" = it
// may).
func forbiddenWhy(path string) string {
	for _, f := range forbiddenDeps {
		p := strings.TrimSuffix(f.prefix, "/")
		if path == p || strings.HasPrefix(path, p+"/") {
			return f.why
		}
	}
	return ""
}

func forbidden(path string) bool { return forbiddenWhy(path) != "" }

// TestForbiddenDepsMatch checks the matcher on a list that holds what
// report once depended on, so that TestDependencies cannot pass by
// matching nothing.
func TestForbiddenDepsMatch(t *testing.T) {
	for _, d := range []string{
		"github.com/coldstart-go/coldstart/launch",
		"github.com/coldstart-go/coldstart/pull",
		"github.com/coldstart-go/coldstart/explain/inittrace",
		"github.com/coldstart-go/coldstart/steady",
		"github.com/coldstart-go/coldstart/builds",
		"github.com/coldstart-go/coldstart/internal/ociimage",
		"github.com/google/go-containerregistry/pkg/v1/remote",
	} {
		if !forbidden(d) {
			t.Errorf("forbidden(%q) = false, want true", d)
		}
	}
	for _, d := range []string{
		"github.com/coldstart-go/coldstart/record",
		"github.com/coldstart-go/coldstart/explain", // parsing and analysis only
		"github.com/coldstart-go/coldstart/internal/stats",
		"github.com/coldstart-go/coldstart/pullx", // a prefix is a path, not a string
		"gonum.org/v1/plot",
	} {
		if forbidden(d) {
			t.Errorf("forbidden(%q) = true, want false", d)
		}
	}
}
