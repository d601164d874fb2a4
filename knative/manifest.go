package knative

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"
	"sigs.k8s.io/yaml"
)

// WriteYAML writes the Services as one multi-document YAML stream, ready
// for kubectl apply -f -. Status and empty creation timestamps are left out.
func WriteYAML(w io.Writer, svcs []*servingv1.Service) error {
	for i, s := range svcs {
		b, err := manifestYAML(s)
		if err != nil {
			return err
		}
		if i > 0 {
			if _, err := io.WriteString(w, "---\n"); err != nil {
				return err
			}
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

func manifestYAML(s *servingv1.Service) ([]byte, error) {
	j, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("marshal service %s: %w", s.Name, err)
	}
	var m map[string]any
	if err := json.Unmarshal(j, &m); err != nil {
		return nil, fmt.Errorf("marshal service %s: %w", s.Name, err)
	}
	delete(m, "status")
	prune(m)
	b, err := yaml.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("yaml service %s: %w", s.Name, err)
	}
	return b, nil
}

// prune drops the null creationTimestamp and the empty objects
// (resources: {}) that Kubernetes' Go types marshal by default.
func prune(v any) bool {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			if x == nil || prune(x) {
				delete(t, k)
			}
		}
		return len(t) == 0
	case []any:
		for _, x := range t {
			prune(x)
		}
	}
	return false
}

// ClusterNotes describes the cluster for a results file's provenance
// notes: Kubernetes and Knative Serving versions, the node kind, and the
// namespace. Facts the credentials may not read are left out.
func ClusterNotes(ctx context.Context, c Clients, namespace string) map[string]string {
	n := map[string]string{"cluster_namespace": namespace}
	if c.Host != "" {
		if u, err := url.Parse(c.Host); err == nil {
			n["cluster_api_host"] = u.Hostname()
		}
	}
	if v := serverVersion(ctx, c); v != "" {
		n["cluster_kubernetes_version"] = v
	}
	if v := knativeVersion(ctx, c); v != "" {
		n["cluster_knative_serving_version"] = v
	}
	if nodes, err := listAs[corev1.Node](ctx, c.Kube.Resource(nodesResource), metav1.ListOptions{}); err == nil {
		n["cluster_nodes"] = strconv.Itoa(len(nodes))
		n["cluster_node_kind"] = nodeKind(nodes)
		if len(nodes) > 0 {
			ni := nodes[0].Status.NodeInfo
			n["cluster_node_kubelet"] = ni.KubeletVersion
			n["cluster_node_runtime"] = ni.ContainerRuntimeVersion
			n["cluster_node_os"] = ni.OSImage + " " + ni.KernelVersion
		}
	}
	return n
}

// knativeVersion reads Knative Serving's release from the version labels
// its install puts on the knative-serving namespace, its controller, or
// the Service CRD.
func knativeVersion(ctx context.Context, c Clients) string {
	keys := []string{"app.kubernetes.io/version", "serving.knative.dev/release"}
	pick := func(l map[string]string) string {
		for _, k := range keys {
			if v := l[k]; v != "" {
				return v
			}
		}
		return ""
	}
	for _, o := range []struct {
		r    dynamic.ResourceInterface
		name string
		note string
	}{
		{c.Kube.Resource(deploymentsResource).Namespace(KnativeNamespace), "controller", ""},
		{c.Kube.Resource(namespacesResource), KnativeNamespace, ""},
		{c.Kube.Resource(crdsResource), "services.serving.knative.dev", " (from the CRD)"},
	} {
		if u, err := o.r.Get(ctx, o.name, metav1.GetOptions{}); err == nil {
			if v := pick(u.GetLabels()); v != "" {
				return v + o.note
			}
		}
	}
	return ""
}

// nodeKind names where the nodes run: the providerID's scheme (gce, aws,
// azure, kind, k3s...) and the instance type label when set.
func nodeKind(nodes []corev1.Node) string {
	if len(nodes) == 0 {
		return "unknown (no nodes visible)"
	}
	kinds := map[string]int{}
	var order []string
	for _, nd := range nodes {
		k := "unknown"
		if p, _, ok := strings.Cut(nd.Spec.ProviderID, "://"); ok && p != "" {
			k = p
		}
		if it := nd.Labels[corev1.LabelInstanceTypeStable]; it != "" {
			k += "/" + it
		}
		if kinds[k] == 0 {
			order = append(order, k)
		}
		kinds[k]++
	}
	parts := make([]string, 0, len(order))
	for _, k := range order {
		parts = append(parts, fmt.Sprintf("%d×%s", kinds[k], k))
	}
	return strings.Join(parts, ", ")
}
