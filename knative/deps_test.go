package knative

import (
	"strings"
	"testing"

	"github.com/coldstart-go/coldstart/internal/deptest"
)

// clientsets are the packages knative must not depend on, each with the
// packages under it unless exact: client-go's and Knative's clientsets and
// informers compile every API group's typed client and scheme, most of a
// build of the commands, for the few resources Clients reads through the
// dynamic client and Knative's typed serving/v1 client.
var clientsets = []struct {
	path  string
	exact bool
}{
	{path: "k8s.io/client-go/kubernetes"}, // typed clients and their scheme
	{path: "k8s.io/client-go/informers"},
	{path: "k8s.io/client-go/discovery"},
	{path: "k8s.io/client-go/dynamic/dynamicinformer"}, // imports informers
	{path: "knative.dev/serving/pkg/client/clientset/versioned", exact: true},
	{path: "knative.dev/serving/pkg/client/informers"},
}

// TestDependencies fails when a clientset comes back into knative's
// dependencies. It asks the go command, as `go list -deps ./knative` does;
// tests may use the clientsets.
func TestDependencies(t *testing.T) {
	deps := deptest.List(t, "github.com/coldstart-go/coldstart/knative")
	seen := map[string]bool{}
	for _, d := range deps {
		seen[d] = true
		if isClientset(d) {
			t.Errorf("knative depends on %s: use Clients' dynamic and typed serving/v1 clients", d)
		}
	}
	// The matcher matches: these are what it must let through.
	for _, d := range []string{"k8s.io/client-go/dynamic", "knative.dev/serving/pkg/client/clientset/versioned/typed/serving/v1"} {
		if !seen[d] {
			t.Errorf("knative does not depend on %s any more: update clientsets", d)
		}
		if isClientset(d) {
			t.Errorf("isClientset(%q) = true, want false", d)
		}
	}
	for _, d := range []string{"k8s.io/client-go/kubernetes", "k8s.io/client-go/kubernetes/typed/core/v1", "knative.dev/serving/pkg/client/clientset/versioned"} {
		if !isClientset(d) {
			t.Errorf("isClientset(%q) = false, want true", d)
		}
	}
}

func isClientset(path string) bool {
	for _, c := range clientsets {
		if path == c.path || !c.exact && strings.HasPrefix(path, c.path+"/") {
			return true
		}
	}
	return false
}
