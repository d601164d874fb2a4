package knative

import (
	"os/exec"
	"strings"
	"testing"
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
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("find the go command (needed to list knative's dependencies): %v", err)
	}
	out, err := exec.Command(goBin, "list", "-deps", ".").Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list -deps .: %v\n%s", err, stderr)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 || deps[len(deps)-1] != "github.com/coldstart-go/coldstart/knative" {
		t.Fatalf("go list -deps . gave %d packages ending %q, want knative's dependencies ending with knative itself", len(deps), deps[len(deps)-1:])
	}
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
