package cliopts

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/coldstart-go/coldstart/knative"
)

// parseCluster runs a command with the shared and the cluster flags bound
// (as coldstart run binds them) on args, checking them as its RunE does.
func parseCluster(args ...string) (*Common, *Cluster, error) {
	c := New("tool", []string{"default", "static"})
	k := NewCluster()
	var target string
	cmd := &cobra.Command{
		Use: "run", SilenceUsage: true, SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			c.SetArgs(cmd, args)
			if err := k.Check(&c, target); err != nil {
				return err
			}
			return c.Validate()
		},
	}
	c.Bind(cmd, "")
	k.BindOn(cmd, "where", "via what")
	cmd.Flags().StringVar(&target, "target", "", "")
	cmd.SetArgs(args)
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	err := cmd.Execute()
	return &c, &k, err
}

func TestCluster(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		arms     []string
		services []string
		wantErr  string
	}{
		{name: "local by default", arms: []string{"default", "static"}},
		{name: "knative: the build arms are Services too", args: []string{"--on", "knative", "--arms", "default,image"},
			arms: []string{"default", "image"}, services: []string{"coldstart-default", "coldstart-image"}},
		// A user's deployed Service is measured by its name, whichever
		// flag comes first.
		{name: "knative: any arm name", args: []string{"--arms", "myservice,default", "--on", "knative"},
			arms: []string{"myservice", "default"}, services: []string{"coldstart-myservice", "coldstart-default"}},
		{name: "knative: the name prefix", args: []string{"--on", "knative", "--name-prefix", "", "--arms", "myservice"},
			arms: []string{"myservice"}, services: []string{"myservice"}},
		{name: "knative: all is every build arm", args: []string{"--on", "knative", "--name-prefix", "bench-", "--arms", "all,default"},
			arms: []string{"default", "pgo", "static", "upx", "image"}, services: []string{"bench-default", "bench-pgo", "bench-static", "bench-upx", "bench-image"}},
		{name: "locally an unknown arm is refused", args: []string{"--arms", "myservice"},
			wantErr: `--arms: unknown arm "myservice" (known: default, pgo, static, upx, image)`},
		{name: "knative: not a DNS-1035 label", args: []string{"--on", "knative", "--arms", "My_Service"},
			wantErr: `--arms My_Service (--name-prefix "coldstart-"): service name "coldstart-My_Service": a DNS-1035 label must consist of lower case`},
		{name: "knative: a prefix that makes a bad name", args: []string{"--on", "knative", "--name-prefix", "9-", "--arms", "default"},
			wantErr: `--arms default (--name-prefix "9-"): service name "9-default"`},
		{name: "knative: no PKG", args: []string{"--on", "knative", "./cmd/api"}, wantErr: "--on knative measures the Services coldstart deploy made"},
		{name: "knative: no --bin", args: []string{"--on", "knative", "--bin", "/bin/true"}, wantErr: "no PKG, --bin or server arguments"},
		{name: "knative: activator needs --target", args: []string{"--on", "knative", "--via", "activator"}, wantErr: "--via activator: give the activator's address as --target"},
		{name: "knative: activator", args: []string{"--on", "knative", "--via", "activator", "--target", "10.0.0.1:81", "--arms", "static"},
			arms: []string{"static"}, services: []string{"coldstart-static"}},
		{name: "knative: unknown via", args: []string{"--on", "knative", "--via", "mesh"}, wantErr: `--via: "mesh", want ingress or activator`},
		{name: "unknown place", args: []string{"--on", "mars"}, wantErr: `--on: "mars", want local or knative`},
		{name: "locally: the cluster flags given", args: []string{"--namespace", "x", "--context", "kind", "--name-prefix", "p-"},
			wantErr: "--namespace, --context, --name-prefix: only with --on knative"},
		{name: "locally: --kubeconfig and --via", args: []string{"--kubeconfig", "/k", "--via", "activator"},
			wantErr: "--kubeconfig, --via: only with --on knative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, k, err := parseCluster(tt.args...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parse(%q) = %v, want an error containing %q", tt.args, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parse(%q) = %v", tt.args, err)
			}
			if got := strings.Join(c.Arms.Names, ","); got != strings.Join(tt.arms, ",") {
				t.Errorf("parse(%q) arms = %s, want %s", tt.args, got, strings.Join(tt.arms, ","))
			}
			var services []string
			if k.Knative() {
				for _, a := range c.Arms.Names {
					services = append(services, k.ServiceName(a))
				}
			}
			if got, want := strings.Join(services, ","), strings.Join(tt.services, ","); got != want {
				t.Errorf("parse(%q) services = %s, want %s", tt.args, got, want)
			}
		})
	}
}

// TestClusterClients: the clients come from --kubeconfig's file, the
// cluster of --context (else the current one), in --namespace (else the
// context's); without any kubeconfig the error names the flag.
func TestClusterClients(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")
	_, _, err := (&Cluster{}).Clients(nil)
	if !errors.Is(err, knative.ErrNoKubeconfig) || !strings.HasSuffix(err.Error(), "; or pass --kubeconfig") {
		t.Errorf("Clients with no kubeconfig = %v, want %v ending in the flag", err, knative.ErrNoKubeconfig)
	}

	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters:
- {name: a, cluster: {server: "https://127.0.0.1:6443"}}
- {name: b, cluster: {server: "https://127.0.0.2:6443"}}
contexts:
- {name: one, context: {cluster: a, user: u, namespace: bench}}
- {name: two, context: {cluster: b, user: u}}
current-context: one
users:
- {name: u, user: {token: t}}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		k        Cluster
		host, ns string
	}{
		{Cluster{Kubeconfig: kc}, "https://127.0.0.1:6443", "bench"},
		{Cluster{Kubeconfig: kc, Namespace: "other"}, "https://127.0.0.1:6443", "other"},
		{Cluster{Kubeconfig: kc, Context: "two"}, "https://127.0.0.2:6443", "default"},
	}
	for _, tt := range tests {
		c, ns, err := tt.k.Clients(nil)
		if err != nil || c.Host != tt.host || ns != tt.ns {
			t.Errorf("%+v.Clients = host %q, namespace %q, %v; want %q, %q", tt.k, c.Host, ns, err, tt.host, tt.ns)
		}
	}
	if _, _, err := (&Cluster{Kubeconfig: kc, Context: "three"}).Clients(nil); err == nil || !strings.Contains(err.Error(), "three") {
		t.Errorf("Clients with an unknown context = %v, want an error naming it", err)
	}
}
