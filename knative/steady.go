package knative

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"knative.dev/serving/pkg/apis/serving"

	"github.com/coldstart-go/coldstart/steady"
)

// SteadyTarget is one Knative Service as a steady target: the address and
// :authority `coldstart run --on knative` probes it through (the ingress
// address, or the Service's cluster-local address on port 80, and the
// host of its URL), named for arm, with its running pods counted at each
// window's edges. ingress and authority override the Service's own, as
// MeasureOptions.Target and Authority do.
//
// With activator set, ingress is Knative's activator and the :authority
// is the latest ready revision's host (as `coldstart run --via activator`).
func SteadyTarget(ctx context.Context, c Clients, namespace, service, arm, ingress, authority string, activator bool) (steady.Target, error) {
	svc, err := c.Serving.Services(namespace).Get(ctx, service, metav1.GetOptions{})
	if err != nil {
		return steady.Target{}, fmt.Errorf("get service %s/%s: %w", namespace, service, err)
	}
	if activator && authority == "" {
		if authority, err = activatorAuthority(svc); err != nil {
			return steady.Target{}, err
		}
	}
	addr, auth, err := probeAddress(MeasureOptions{Target: ingress, Authority: authority}, urlString(svc.Status.URL), addressURL(svc.Status.Address))
	if err != nil {
		return steady.Target{}, fmt.Errorf("load service %s/%s: %w", namespace, service, err)
	}
	t, err := steady.ParseTarget(addr)
	if err != nil {
		return steady.Target{}, fmt.Errorf("load service %s/%s: %w", namespace, service, err)
	}
	return steady.Target{
		Name:      arm,
		Addr:      t,
		Authority: auth,
		// The cluster is the target named on purpose: its ingress need
		// not be loopback.
		AllowRemote: true,
		Pods: func(ctx context.Context) (int, error) {
			return RunningPods(ctx, c, namespace, service)
		},
	}, nil
}

// RunningPods counts the Service's pods that are Running and not being
// deleted (label serving.knative.dev/service=NAME).
func RunningPods(ctx context.Context, c Clients, namespace, service string) (int, error) {
	sel := labels.Set{serving.ServiceLabelKey: service}.String()
	pods, err := listAs[corev1.Pod](ctx, c.Kube.Resource(podsResource).Namespace(namespace), metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return 0, fmt.Errorf("list pods of service %s/%s: %w", namespace, service, err)
	}
	n := 0
	for _, p := range pods {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			n++
		}
	}
	return n, nil
}
