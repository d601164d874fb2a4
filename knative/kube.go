package knative

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
)

// The Kubernetes resources coldstart reads through Clients.Kube.
var (
	namespacesResource  = corev1.SchemeGroupVersion.WithResource("namespaces")
	nodesResource       = corev1.SchemeGroupVersion.WithResource("nodes")
	configMapsResource  = corev1.SchemeGroupVersion.WithResource("configmaps")
	podsResource        = corev1.SchemeGroupVersion.WithResource("pods")
	deploymentsResource = appsv1.SchemeGroupVersion.WithResource("deployments")
	crdsResource        = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	runtimeClasses      = nodev1.SchemeGroupVersion.WithResource("runtimeclasses")
)

// fromUnstructured converts an object the dynamic client read into T, the
// k8s.io/api type of its kind.
func fromUnstructured[T any](u *unstructured.Unstructured) (*T, error) {
	t := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.UnstructuredContent(), t); err != nil {
		return nil, fmt.Errorf("read %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return t, nil
}

// getAs reads the object name from r as a T.
func getAs[T any](ctx context.Context, r dynamic.ResourceInterface, name string) (*T, error) {
	u, err := r.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return fromUnstructured[T](u)
}

// listAs lists r's objects as Ts.
func listAs[T any](ctx context.Context, r dynamic.ResourceInterface, opts metav1.ListOptions) ([]T, error) {
	l, err := r.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(l.Items))
	for i := range l.Items {
		t, err := fromUnstructured[T](&l.Items[i])
		if err != nil {
			return nil, err
		}
		out = append(out, *t)
	}
	return out, nil
}

// typed is an informer's transform into *T: its cache, listers and event
// handlers then hold k8s.io/api types, as a typed informer's would. A
// deletion tombstone's object has been transformed already and passes
// through, as does anything that is not unstructured.
func typed[T any]() cache.TransformFunc {
	return func(obj any) (any, error) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return obj, nil
		}
		return fromUnstructured[T](u)
	}
}
