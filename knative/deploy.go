package knative

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/client-go/util/retry"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"
)

// ErrNotReady is returned when a Service does not become Ready in time.
var ErrNotReady = errors.New("service not ready")

// ErrNotOurs is returned for an existing Service with the wanted name that
// coldstart did not create: it is never updated or deleted.
var ErrNotOurs = errors.New("service not created by coldstart")

// DeployOptions configure Deploy.
type DeployOptions struct {
	Service ServiceOptions
	// Timeout bounds the wait for all Services to be Ready (0 = do not wait).
	Timeout time.Duration
	// Log receives progress lines (nil = quiet).
	Log io.Writer
}

// Deployed is one arm's Service after Deploy.
type Deployed struct {
	Arm string `json:"arm"`
	// Lever is the lever the Service is the arm's variant under ("" =
	// the arm's own Service).
	Lever     string `json:"lever,omitempty"`
	Service   string `json:"service"`
	Namespace string `json:"namespace"`
	Created   bool   `json:"created"` // false: an existing Service was updated
	Ready     bool   `json:"ready"`
	// URL is the Service's external URL (status.url).
	URL string `json:"url"`
	// Address is the cluster-local URL (status.address.url).
	Address  string `json:"address"`
	Revision string `json:"revision"` // latest ready revision
}

// Deploy creates or updates one Service per arm in o.Service.Namespace and,
// with a Timeout, waits until each is Ready. It checks the cluster first
// (Preflight) and builds every Service before touching the cluster; on any
// failure it deletes the Services this call created (an updated Service
// keeps its new spec) and returns the error.
func Deploy(ctx context.Context, c Clients, arms []Arm, o DeployOptions) (out []Deployed, err error) {
	ns := o.Service.Namespace
	if err := Preflight(ctx, c, ns); err != nil {
		return nil, err
	}
	so := o.Service
	if so.InitialScale == AutoInitialScale {
		so.InitialScale = 1
		if allowsZeroInitialScale(ctx, c) {
			so.InitialScale = 0
		}
		logf(o.Log, "initial-scale %d (allow-zero-initial-scale in %s/config-autoscaler: %v)",
			so.InitialScale, KnativeNamespace, so.InitialScale == 0)
	}
	svcs, err := Services(arms, so)
	if err != nil {
		return nil, err
	}
	var levers []Lever
	for _, a := range arms {
		if a.Lever != nil {
			levers = append(levers, *a.Lever)
		}
	}
	if err := checkLevers(ctx, c, levers); err != nil {
		return nil, err
	}

	var created []string
	defer func() {
		if err == nil || len(created) == 0 {
			return
		}
		if derr := DeleteNamed(ctx, c, ns, created, o.Log, "created by this failed deploy"); derr != nil {
			err = errors.Join(err, derr)
		}
	}()

	for _, want := range svcs {
		isNew, err := apply(ctx, c, want)
		if err != nil {
			return nil, err
		}
		if isNew {
			created = append(created, want.Name)
			logf(o.Log, "created service %s/%s", ns, want.Name)
		} else {
			logf(o.Log, "updated service %s/%s", ns, want.Name)
		}
		out = append(out, Deployed{Arm: want.Labels[LabelArm], Lever: want.Labels[LabelLever], Service: want.Name, Namespace: ns, Created: isNew})
	}
	if o.Timeout <= 0 {
		return out, nil
	}
	wctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	for i := range out {
		svc, err := WaitReady(wctx, c, ns, out[i].Service)
		if err != nil {
			if wctx.Err() != nil && ctx.Err() == nil {
				err = fmt.Errorf("%w (waited %s)", err, o.Timeout)
			}
			return nil, err
		}
		out[i].Ready = true
		fillStatus(&out[i], svc)
		logf(o.Log, "service %s/%s ready at %s", ns, out[i].Service, out[i].URL)
	}
	return out, nil
}

func fillStatus(d *Deployed, svc *servingv1.Service) {
	if svc.Status.URL != nil {
		d.URL = svc.Status.URL.String()
	}
	if svc.Status.Address != nil && svc.Status.Address.URL != nil {
		d.Address = svc.Status.Address.URL.String()
	}
	d.Revision = svc.Status.LatestReadyRevisionName
}

// apply creates want, or updates the existing Service of that name if
// coldstart created it. It reports whether it created the Service.
func apply(ctx context.Context, c Clients, want *servingv1.Service) (created bool, err error) {
	sc := c.Serving.Services(want.Namespace)
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		have, err := sc.Get(ctx, want.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = sc.Create(ctx, want, metav1.CreateOptions{FieldManager: ManagedBy})
			if err == nil {
				created = true
			}
			return err
		}
		if err != nil {
			return err
		}
		if have.Labels[LabelManagedBy] != ManagedBy {
			return fmt.Errorf("%w: it lacks the label %s=%s; delete it or pick another name prefix",
				ErrNotOurs, LabelManagedBy, ManagedBy)
		}
		upd := have.DeepCopy()
		upd.Spec = want.Spec
		if upd.Labels == nil {
			upd.Labels = map[string]string{}
		}
		for k, v := range want.Labels {
			upd.Labels[k] = v
		}
		_, err = sc.Update(ctx, upd, metav1.UpdateOptions{FieldManager: ManagedBy})
		return err
	})
	if err != nil {
		return false, fmt.Errorf("apply service %s/%s: %w", want.Namespace, want.Name, err)
	}
	return created, nil
}

// WaitReady watches the Service until it is Ready for its current
// generation. When ctx ends first, the error wraps ErrNotReady and lists the
// Service's last conditions.
func WaitReady(ctx context.Context, c Clients, namespace, name string) (*servingv1.Service, error) {
	sc := c.Serving.Services(namespace)
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	lw := &cache.ListWatch{
		ListFunc: func(lo metav1.ListOptions) (runtime.Object, error) {
			lo.FieldSelector = sel
			return sc.List(ctx, lo)
		},
		WatchFunc: func(lo metav1.ListOptions) (watch.Interface, error) {
			lo.FieldSelector = sel
			return sc.Watch(ctx, lo)
		},
	}
	var last *servingv1.Service
	_, err := watchtools.UntilWithSync(ctx, lw, &servingv1.Service{}, nil, func(ev watch.Event) (bool, error) {
		s, ok := ev.Object.(*servingv1.Service)
		if !ok || s.Name != name {
			return false, nil
		}
		if ev.Type == watch.Deleted {
			return false, fmt.Errorf("wait for service %s/%s: deleted while waiting", namespace, name)
		}
		last = s
		return s.IsReady(), nil
	})
	if err == nil {
		return last, nil
	}
	if ctx.Err() == nil && !errors.Is(err, watchtools.ErrWatchClosed) {
		return nil, err
	}
	// Report what the Service said last, read fresh when possible.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if s, gerr := sc.Get(rctx, name, metav1.GetOptions{}); gerr == nil {
		last = s
	}
	return nil, fmt.Errorf("wait for service %s/%s: %w: %s", namespace, name, ErrNotReady, Conditions(last))
}

// Conditions renders a Service's status conditions on one line, e.g.
// "Ready=False (RevisionFailed: image pull failed); RoutesReady=Unknown".
func Conditions(s *servingv1.Service) string {
	if s == nil {
		return "service not seen"
	}
	if len(s.Status.Conditions) == 0 {
		return fmt.Sprintf("no conditions (generation %d, observed %d): is the Knative controller running?",
			s.Generation, s.Status.ObservedGeneration)
	}
	parts := make([]string, 0, len(s.Status.Conditions))
	for _, cd := range s.Status.Conditions {
		p := fmt.Sprintf("%s=%s", cd.Type, cd.Status)
		if cd.Reason != "" || cd.Message != "" {
			p += fmt.Sprintf(" (%s: %s)", cd.Reason, cd.Message)
		}
		parts = append(parts, p)
	}
	if s.Status.ObservedGeneration != s.Generation {
		parts = append(parts, fmt.Sprintf("observed generation %d of %d", s.Status.ObservedGeneration, s.Generation))
	}
	return strings.Join(parts, "; ")
}

// Delete removes coldstart's Services in namespace: only those labelled
// app.kubernetes.io/managed-by=coldstart, and of those only the given arms
// (none = all arms). It returns the names it deleted, sorted.
func Delete(ctx context.Context, c Clients, namespace string, arms []string) ([]string, error) {
	if err := Preflight(ctx, c, namespace); err != nil {
		return nil, err
	}
	sel := labels.NewSelector()
	req, err := labels.NewRequirement(LabelManagedBy, selection.Equals, []string{ManagedBy})
	if err != nil {
		return nil, err
	}
	sel = sel.Add(*req)
	if len(arms) > 0 {
		req, err := labels.NewRequirement(LabelArm, selection.In, arms)
		if err != nil {
			return nil, fmt.Errorf("select arms %v: %w", arms, err)
		}
		sel = sel.Add(*req)
	}
	sc := c.Serving.Services(namespace)
	list, err := sc.List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, fmt.Errorf("list services %s in %s: %w", sel, namespace, err)
	}
	var names []string
	for _, s := range list.Items {
		if !sel.Matches(labels.Set(s.Labels)) { // fakes ignore selectors
			continue
		}
		err := sc.Delete(ctx, s.Name, metav1.DeleteOptions{PropagationPolicy: ptr(metav1.DeletePropagationBackground)})
		if err != nil && !apierrors.IsNotFound(err) {
			return names, fmt.Errorf("delete service %s/%s: %w", namespace, s.Name, err)
		}
		names = append(names, s.Name)
	}
	sort.Strings(names)
	return names, nil
}

func logf(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format+"\n", args...)
	}
}
