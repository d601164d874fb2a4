package knative

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"
	servingclient "knative.dev/serving/pkg/client/clientset/versioned/typed/serving/v1"
)

// Conditions callers branch on; check them with errors.Is.
var (
	// ErrNoKubeconfig: no Kubeconfig.Path, $KUBECONFIG, ~/.kube/config,
	// and not running in a cluster.
	ErrNoKubeconfig = errors.New("no kubeconfig")
	// ErrUnreachable: the API server did not answer.
	ErrUnreachable = errors.New("cluster unreachable")
	// ErrNoKnative: the cluster does not serve serving.knative.dev/v1 Services.
	ErrNoKnative = errors.New("knative serving not installed")
	// ErrNoNamespace: the namespace does not exist.
	ErrNoNamespace = errors.New("namespace not found")
)

// Clients are the clients coldstart uses. They are the few it needs rather
// than client-go's and Knative's clientsets, which would bring every API
// group's typed client, informers and scheme into each build of the
// commands.
type Clients struct {
	// Kube reads and watches the Kubernetes objects coldstart looks at
	// (namespaces, nodes, ConfigMaps, Deployments, pods), which are
	// converted into the k8s.io/api types as they are read.
	Kube dynamic.Interface
	// Serving is Knative Serving's typed v1 client: Services.
	Serving servingclient.ServingV1Interface
	// REST makes the requests no resource client covers (/version); nil
	// with fakes, where Preflight does not ping and ClusterNotes leave the
	// version out.
	REST rest.Interface
	// Host is the API server's URL, for messages ("" with fakes).
	Host string
}

// Kubeconfig says where the cluster credentials come from.
type Kubeconfig struct {
	// Path is an explicit kubeconfig file; "" follows clientcmd's rules:
	// $KUBECONFIG, then ~/.kube/config, then the in-cluster service account.
	Path string
	// Context picks a kubeconfig context ("" = current).
	Context string
}

// Load resolves the kubeconfig into a REST config and the context's
// namespace ("default" when the context names none).
func (k Kubeconfig) Load() (*rest.Config, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = k.Path
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{CurrentContext: k.Context})
	cfg, err := cc.ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) {
			return nil, "", fmt.Errorf("load kubeconfig: %w: set $KUBECONFIG or create ~/.kube/config (or run inside a cluster)", ErrNoKubeconfig)
		}
		where := k.Path
		if where == "" {
			where = strings.Join(rules.Precedence, ":")
		}
		return nil, "", fmt.Errorf("load kubeconfig %s: %w", where, err)
	}
	ns, _, err := cc.Namespace()
	if err != nil || ns == "" {
		ns = "default"
	}
	return cfg, ns, nil
}

// NewClients builds the clients for cfg, sharing one HTTP client (and so
// one connection pool) between them.
func NewClients(cfg *rest.Config) (Clients, error) {
	if cfg.WarningHandler == nil {
		// The API server's warnings (Knative's webhook warns of every
		// Service without a securityContext) once each per process, not
		// once per write: a pull lever writes its Services every round.
		cfg = rest.CopyConfig(cfg)
		cfg.WarningHandler = rest.NewWarningWriter(os.Stderr, rest.WarningWriterOptions{Deduplicate: true})
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return Clients{}, fmt.Errorf("http client for %s: %w", cfg.Host, err)
	}
	kc, err := dynamic.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return Clients{}, fmt.Errorf("kubernetes client for %s: %w", cfg.Host, err)
	}
	sc, err := servingclient.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return Clients{}, fmt.Errorf("knative client for %s: %w", cfg.Host, err)
	}
	return Clients{Kube: kc, Serving: sc, REST: sc.RESTClient(), Host: cfg.Host}, nil
}

// Preflight checks, in order, that the API server answers, that it serves
// Knative Services, and that namespace exists, so that a deploy fails with
// one clear error before it creates anything. Knative counts as installed
// unless listing its Services in namespace is NotFound, the API server's
// answer for a resource it does not serve; credentials that may not list
// them leave the question to the requests that follow.
func Preflight(ctx context.Context, c Clients, namespace string) error {
	host := c.Host
	if host == "" {
		host = "the cluster"
	}
	if err := ping(ctx, c); err != nil {
		return fmt.Errorf("reach %s: %w: %v", host, ErrUnreachable, err)
	}
	gv := servingv1.SchemeGroupVersion.String()
	_, err := c.Serving.Services(namespace).List(ctx, metav1.ListOptions{Limit: 1})
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("find %s services on %s: %w (install Knative Serving: https://knative.dev/docs/install/)", gv, host, ErrNoKnative)
	case err != nil && !apierrors.IsForbidden(err):
		return fmt.Errorf("list %s services in %s on %s: %w", gv, namespace, host, err)
	}
	if _, err := c.Kube.Resource(namespacesResource).Get(ctx, namespace, metav1.GetOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("namespace %q: %w (kubectl create namespace %s)", namespace, ErrNoNamespace, namespace)
		}
		if !apierrors.IsForbidden(err) { // may list services without reading namespaces
			return fmt.Errorf("get namespace %q: %w", namespace, err)
		}
	}
	return nil
}

// pingTimeout bounds the first request to the API server, so an address
// that drops packets fails in seconds rather than at the TCP timeout.
const pingTimeout = 15 * time.Second

// ping asks the API server for its version, within pingTimeout.
func ping(ctx context.Context, c Clients) error {
	if c.REST == nil { // fakes
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	_, err := c.REST.Get().AbsPath("/version").DoRaw(ctx)
	return err
}

// serverVersion is the API server's Kubernetes version (the GitVersion
// of /version), "" when it cannot be read.
func serverVersion(ctx context.Context, c Clients) string {
	if c.REST == nil {
		return ""
	}
	b, err := c.REST.Get().AbsPath("/version").DoRaw(ctx)
	if err != nil {
		return ""
	}
	var v version.Info
	if json.Unmarshal(b, &v) != nil {
		return ""
	}
	return v.GitVersion
}

// allowsZeroInitialScale reads allow-zero-initial-scale from Knative's
// config-autoscaler ConfigMap; unreadable counts as "no".
func allowsZeroInitialScale(ctx context.Context, c Clients) bool {
	cm, err := getAs[corev1.ConfigMap](ctx, c.Kube.Resource(configMapsResource).Namespace(KnativeNamespace), "config-autoscaler")
	if err != nil {
		return false
	}
	return strings.EqualFold(strings.TrimSpace(cm.Data["allow-zero-initial-scale"]), "true")
}

// KnativeNamespace is where Knative Serving's control plane and config live.
const KnativeNamespace = "knative-serving"
