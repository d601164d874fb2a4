// Package kubetest starts a real kube-apiserver with etcd for tests
// (through controller-runtime's envtest), from the binaries that
// scripts/kube-testenv.sh builds from the Go module proxy and caches
// outside the repository. Without them, tests skip and name the script.
package kubetest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/coldstart-go/coldstart/internal/require"
)

// Versions of the binaries; scripts/kube-testenv.sh builds the same ones
// (keep the two in step: they name the cache directory).
const (
	KubeVersion = "1.36.3" // k8s.io/kubernetes; staging modules v0.36.3
	EtcdVersion = "3.6.16" // go.etcd.io/etcd/server/v3
	Script      = "scripts/kube-testenv.sh"
)

// ErrNoBinaries is returned by AssetsDir when kube-apiserver or etcd is missing.
var ErrNoBinaries = errors.New("kube-apiserver and etcd not built")

// CacheDir is where scripts/kube-testenv.sh puts the binaries:
// ${COLDSTART_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/coldstart/kube}/k8s-vK_etcd-vE.
func CacheDir() string {
	root := os.Getenv("COLDSTART_KUBE_CACHE")
	if root == "" {
		base := os.Getenv("XDG_CACHE_HOME")
		if base == "" {
			home, _ := os.UserHomeDir()
			base = filepath.Join(home, ".cache")
		}
		root = filepath.Join(base, "coldstart", "kube")
	}
	return filepath.Join(root, fmt.Sprintf("k8s-v%s_etcd-v%s", KubeVersion, EtcdVersion))
}

// AssetsDir returns the directory holding kube-apiserver and etcd:
// $KUBEBUILDER_ASSETS when set (envtest's own variable), else CacheDir.
func AssetsDir() (string, error) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		dir = CacheDir()
	}
	for _, b := range []string{"kube-apiserver", "etcd"} {
		fi, err := os.Stat(filepath.Join(dir, b))
		if err != nil || fi.Mode()&0o111 == 0 {
			return dir, fmt.Errorf("%w: no executable %s in %s (run %s; ~15 min the first time)", ErrNoBinaries, b, dir, Script)
		}
	}
	return dir, nil
}

// Env is a running kube-apiserver with etcd.
type Env struct {
	Config *rest.Config
	env    *envtest.Environment
}

// Start starts kube-apiserver and etcd, installs the CRD files given, and
// stops both when the test ends. It skips the test when the binaries are
// missing, naming the script that builds them.
func Start(t testing.TB, crdPaths ...string) *Env {
	t.Helper()
	dir, err := AssetsDir()
	if err != nil {
		require.Skipf(t, require.Kube, "%v", err)
	}
	te := &envtest.Environment{
		BinaryAssetsDirectory:    dir,
		CRDInstallOptions:        envtest.CRDInstallOptions{Paths: crdPaths},
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: 90 * time.Second,
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	start := time.Now()
	cfg, err := te.Start()
	if err != nil {
		t.Fatalf("start kube-apiserver and etcd from %s: %v", dir, err)
	}
	t.Logf("kube-apiserver v%s and etcd v%s up in %v", KubeVersion, EtcdVersion, time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		if err := te.Stop(); err != nil {
			t.Errorf("stop kube-apiserver and etcd: %v", err)
		}
	})
	return &Env{Config: cfg, env: te}
}

// InstallCRDs installs CRD files into the running API server and waits
// until they are served.
func (e *Env) InstallCRDs(paths ...string) error {
	_, err := envtest.InstallCRDs(e.Config, envtest.CRDInstallOptions{Paths: paths, ErrorIfPathMissing: true})
	if err != nil {
		return fmt.Errorf("install CRDs %v: %w", paths, err)
	}
	return nil
}

// WriteKubeconfig writes a kubeconfig for an admin user (system:masters)
// of this API server to path.
func (e *Env) WriteKubeconfig(path string) error {
	u, err := e.env.AddUser(envtest.User{Name: "coldstart-test", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("add kubeconfig user: %w", err)
	}
	b, err := u.KubeConfig()
	if err != nil {
		return fmt.Errorf("render kubeconfig: %w", err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return nil
}
