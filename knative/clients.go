package knative

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"
	servingclient "knative.dev/serving/pkg/client/clientset/versioned"
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

// Clients are the typed clients coldstart uses: Kubernetes (Deployments,
// pods, discovery) and Knative Serving.
type Clients struct {
	Kube    kubernetes.Interface
	Serving servingclient.Interface
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

// NewClients builds the clients for cfg.
func NewClients(cfg *rest.Config) (Clients, error) {
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return Clients{}, fmt.Errorf("kubernetes client for %s: %w", cfg.Host, err)
	}
	sc, err := servingclient.NewForConfig(cfg)
	if err != nil {
		return Clients{}, fmt.Errorf("knative client for %s: %w", cfg.Host, err)
	}
	return Clients{Kube: kc, Serving: sc, Host: cfg.Host}, nil
}

// Preflight checks, in order, that the API server answers, that it serves
// Knative Services, and that namespace exists, so that a deploy fails with
// one clear error before it creates anything.
func Preflight(ctx context.Context, c Clients, namespace string) error {
	host := c.Host
	if host == "" {
		host = "the cluster"
	}
	if err := ping(ctx, c); err != nil {
		return fmt.Errorf("reach %s: %w: %v", host, ErrUnreachable, err)
	}
	gv := servingv1.SchemeGroupVersion.String()
	rl, err := c.Kube.Discovery().ServerResourcesForGroupVersion(gv)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("find %s services on %s: %w (install Knative Serving: https://knative.dev/docs/install/)", gv, host, ErrNoKnative)
		}
		return fmt.Errorf("discover %s on %s: %w", gv, host, err)
	}
	found := false
	for _, r := range rl.APIResources {
		if r.Name == "services" && r.Kind == "Service" {
			found = true
		}
	}
	if !found {
		return fmt.Errorf("find %s services on %s: %w (the group is served, the Service kind is not)", gv, host, ErrNoKnative)
	}
	if _, err := c.Kube.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{}); err != nil {
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
	rc := c.Kube.Discovery().RESTClient()
	if rc == nil { // fakes
		_, err := c.Kube.Discovery().ServerVersion()
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	_, err := rc.Get().AbsPath("/version").DoRaw(ctx)
	return err
}

// allowsZeroInitialScale reads allow-zero-initial-scale from Knative's
// config-autoscaler ConfigMap; unreadable counts as "no".
func allowsZeroInitialScale(ctx context.Context, c Clients) bool {
	cm, err := c.Kube.CoreV1().ConfigMaps(KnativeNamespace).Get(ctx, "config-autoscaler", metav1.GetOptions{})
	if err != nil {
		return false
	}
	return strings.EqualFold(strings.TrimSpace(cm.Data["allow-zero-initial-scale"]), "true")
}

// KnativeNamespace is where Knative Serving's control plane and config live.
const KnativeNamespace = "knative-serving"
