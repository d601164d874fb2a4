package cliopts

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/spf13/cobra"

	"github.com/coldstart-go/coldstart/knative"
)

// Cluster are the flags that point a command at Knative: where the
// servers run (--on, --via: coldstart run and steady run only), and which
// cluster, namespace and Services (--kubeconfig, --context, --namespace,
// --name-prefix). Build one with NewCluster, bind it with Bind (deploy:
// always on a cluster) or BindOn (run: local unless --on knative), check
// it with Check and make the clients with Clients.
type Cluster struct {
	// On is where the servers run: "local" or "knative".
	On string
	// Via is what --target is on Knative: "ingress" (probes carry the
	// Service's host) or "activator" (Knative's activator; probes carry
	// the revision's host).
	Via string
	// Namespace is the Services' namespace ("" = the kubeconfig
	// context's, else default).
	Namespace string
	// Kubeconfig is the kubeconfig file ("" = $KUBECONFIG, ~/.kube/config,
	// or the in-cluster service account).
	Kubeconfig string
	// Context is the kubeconfig context ("" = current).
	Context string
	// NamePrefix is what coldstart deploy put before each arm's name to
	// make its Service's name (BindOn only; deploy binds its own).
	NamePrefix string
}

// NewCluster returns the cluster flags with their defaults: local, via
// the ingress, and deploy's default name prefix.
func NewCluster() Cluster {
	return Cluster{On: "local", Via: "ingress", NamePrefix: knative.DefaultServiceOptions().NamePrefix}
}

// Bind adds --namespace, --kubeconfig and --context to cmd, for a command
// that always works on a cluster (deploy).
func (k *Cluster) Bind(cmd *cobra.Command) {
	k.bind(cmd, "", "namespace of the Services")
}

// BindOn adds --on and --via, with the command's own help for each, the
// flags Bind adds, and --name-prefix, each of those for --on knative only.
func (k *Cluster) BindOn(cmd *cobra.Command, onHelp, viaHelp string) {
	f := cmd.Flags()
	f.StringVar(&k.On, "on", k.On, onHelp)
	f.StringVar(&k.Via, "via", k.Via, viaHelp)
	f.StringVar(&k.NamePrefix, "name-prefix", k.NamePrefix, "--on knative: the Services' name prefix, as coldstart deploy --name-prefix set it: each --arms arm is the Service PREFIX+ARM, and any arm name deploy took is one")
	k.bind(cmd, "--on knative: ", "the Services' namespace")
}

// BindProbe adds --via and --name-prefix beside the flags Bind adds, for
// a command that always probes Services on a cluster (replay); check
// them with CheckProbe.
func (k *Cluster) BindProbe(cmd *cobra.Command, viaHelp string) {
	f := cmd.Flags()
	f.StringVar(&k.Via, "via", k.Via, viaHelp)
	f.StringVar(&k.NamePrefix, "name-prefix", k.NamePrefix, "the Services' name prefix, as coldstart deploy --name-prefix set it")
	k.bind(cmd, "", "the Services' namespace")
}

// CheckProbe checks --via against target (the command's --target) and
// that every arm's Service name is one Kubernetes takes.
func (k *Cluster) CheckProbe(target string, arms []string) error {
	k.On = "knative"
	if err := k.checkVia(target); err != nil {
		return err
	}
	for _, arm := range arms {
		if err := knative.CheckServiceName(k.ServiceName(arm)); err != nil {
			return fmt.Errorf("--arms %s (--name-prefix %q): %w", arm, k.NamePrefix, err)
		}
	}
	return nil
}

func (k *Cluster) checkVia(target string) error {
	switch k.Via {
	case "ingress":
	case "activator":
		if target == "" {
			return errors.New("--via activator: give the activator's address as --target HOST:PORT (its Service's h2c port is 81)")
		}
	default:
		return fmt.Errorf("--via: %q, want ingress or activator", k.Via)
	}
	return nil
}

func (k *Cluster) bind(cmd *cobra.Command, prefix, namespace string) {
	f := cmd.Flags()
	f.StringVar(&k.Namespace, "namespace", "", prefix+namespace+" (\"\" = the kubeconfig context's, else default)")
	f.StringVar(&k.Kubeconfig, "kubeconfig", "", prefix+"kubeconfig file (\"\" = $KUBECONFIG, ~/.kube/config, or in-cluster)")
	f.StringVar(&k.Context, "context", "", prefix+"kubeconfig context (\"\" = current)")
}

// Knative reports whether the servers are Knative Services (--on knative).
func (k *Cluster) Knative() bool { return k.On == "knative" }

// ServiceName is the name of arm's Service: NamePrefix+arm, as deploy
// names it.
func (k *Cluster) ServiceName(arm string) string { return k.NamePrefix + arm }

// Check checks the flags BindOn added against the shared ones, before
// c.Validate: --on and --via take one of their values; locally none of
// the Knative flags is given; on Knative there is nothing to build or
// start (no PKG, --bin or server arguments), --via activator has its
// address in target (the command's --target), and --arms names deployed
// Services, not builds: any arm whose Service name is a DNS-1035 label.
func (k *Cluster) Check(c *Common, target string) error {
	switch k.On {
	case "local":
		var given []string
		for _, f := range []struct {
			name string
			set  bool
		}{
			{"--namespace", k.Namespace != ""}, {"--kubeconfig", k.Kubeconfig != ""}, {"--context", k.Context != ""},
			{"--via", k.Via != "ingress"}, {"--name-prefix", k.NamePrefix != NewCluster().NamePrefix},
		} {
			if f.set {
				given = append(given, f.name)
			}
		}
		if len(given) > 0 {
			return fmt.Errorf("%s: only with --on knative", strings.Join(given, ", "))
		}
		return nil
	case "knative":
	default:
		return fmt.Errorf("--on: %q, want local or knative", k.On)
	}
	if c.Bin.Given() || c.Pkg != "" || len(c.ServerArgs) > 0 {
		return errors.New("--on knative measures the Services coldstart deploy made (--arms names them): no PKG, --bin or server arguments here; build and push with coldstart build --arms image --push, deploy with coldstart deploy")
	}
	if h := c.HookFlags; h.Setup != "" || h.Prepare != "" || h.Cleanup != "" {
		return errors.New("--setup, --prepare and --cleanup: only with --on local (on Knative the cluster starts the servers)")
	}
	if err := k.checkVia(target); err != nil {
		return err
	}
	c.Arms.services = true
	for _, arm := range c.Arms.Names {
		if err := knative.CheckServiceName(k.ServiceName(arm)); err != nil {
			return fmt.Errorf("--arms %s (--name-prefix %q): %w", arm, k.NamePrefix, err)
		}
	}
	return nil
}

// Clients loads the kubeconfig (--kubeconfig, --context) and makes the
// clients, and returns them with the namespace: --namespace, else the
// context's, else default. wrap, when not nil, wraps each request's
// transport (deploy -v prints them). No request is made yet.
func (k *Cluster) Clients(wrap func(http.RoundTripper) http.RoundTripper) (knative.Clients, string, error) {
	cfg, ns, err := knative.Kubeconfig{Path: k.Kubeconfig, Context: k.Context}.Load()
	if errors.Is(err, knative.ErrNoKubeconfig) {
		return knative.Clients{}, "", fmt.Errorf("%w; or pass --kubeconfig", err)
	}
	if err != nil {
		return knative.Clients{}, "", err
	}
	if k.Namespace != "" {
		ns = k.Namespace
	}
	if wrap != nil {
		cfg.Wrap(wrap)
	}
	c, err := knative.NewClients(cfg)
	if err != nil {
		return knative.Clients{}, "", err
	}
	return c, ns, nil
}
