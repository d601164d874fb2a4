package knative

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"knative.dev/serving/pkg/apis/autoscaling"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"
)

// LabelLever names the lever a variant's Service sets (absent on an arm's
// own Service).
const LabelLever = "coldstart-go.github.io/lever"

// A Lever is one platform setting a service owner can change on a Knative
// Service, measured as a variant of an arm: the arm's image and Service
// with that one setting changed from what Deploy sets, deployed as the
// Service PREFIX+ARM-NAME and compared against the arm's own, round by
// round, by `run --on knative --lever NAME`.
type Lever struct {
	// Name is the lever as given, KIND or KIND=VALUE ("no-token",
	// "runtime=crun"); its Service name suffix is Slug.
	Name string
	// Sets says what it changes, as results record it.
	Sets string
	// Control sets nothing: the arm's Service under another name, which
	// must come out "no difference" against the arm.
	Control bool
	kind    leverKind
	value   string
}

// leverKind is one kind of lever: how it is named, what it sets and how
// it changes a Service.
type leverKind struct {
	name string
	// value names the value a KIND=VALUE lever takes ("" = none).
	value string
	help  string
	// sets describes the change for value.
	sets func(value string) string
	// check refuses a value Kubernetes or Knative would.
	check func(value string) error
	apply func(s *servingv1.Service, value string)
}

// leverKinds are the levers there are. Each changes one field from what
// NewService sets, which is what a Knative cluster does by default unless
// the field says otherwise.
var leverKinds = []leverKind{
	{
		name: "control",
		help: "nothing: the arm's Service under another name, which must come out no difference (an A/A check of the cluster's noise)",
		sets: func(string) string { return "nothing (control)" },
	},
	{
		name: "service-links",
		help: "enableServiceLinks: true, Kubernetes' default: one set of environment variables per Service in the namespace in every pod (Knative and coldstart turn them off)",
		sets: func(string) string { return "enableServiceLinks: true" },
		apply: func(s *servingv1.Service, _ string) {
			s.Spec.Template.Spec.EnableServiceLinks = ptr(true)
		},
	},
	{
		name: "no-token",
		help: "automountServiceAccountToken: false: the kubelet mounts no service-account token volume into the pod",
		sets: func(string) string { return "automountServiceAccountToken: false" },
		apply: func(s *servingv1.Service, _ string) {
			s.Spec.Template.Spec.AutomountServiceAccountToken = ptr(false)
		},
	},
	{
		name: "tcp-readiness",
		help: "the readiness probe is Knative's default TCP connect, not a gRPC health check: Ready as soon as the port accepts",
		sets: func(string) string { return "readinessProbe: tcpSocket (Knative's default)" },
		apply: func(s *servingv1.Service, _ string) {
			c := &s.Spec.Template.Spec.Containers[0]
			port := c.Ports[0].ContainerPort
			c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
				TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(port)},
			}}
		},
	},
	{
		name:  "readiness-period",
		value: "SECONDS",
		help:  "readiness probe periodSeconds SECONDS: the kubelet probes at that period instead of the queue-proxy's own probing until the first success (periodSeconds 0)",
		sets:  func(v string) string { return "readinessProbe.periodSeconds: " + v },
		check: func(v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return fmt.Errorf("want a whole number of seconds, at least 1 (Kubernetes' minimum periodSeconds)")
			}
			return nil
		},
		apply: func(s *servingv1.Service, v string) {
			n, _ := strconv.Atoi(v)
			c := &s.Spec.Template.Spec.Containers[0]
			if c.ReadinessProbe == nil {
				c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
					TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(c.Ports[0].ContainerPort)},
				}}
			}
			c.ReadinessProbe.PeriodSeconds = int32(n)
		},
	},
	{
		name: "activator-always",
		help: "autoscaling.knative.dev/target-burst-capacity: -1: the activator stays in the request path when pods run, as well as at zero",
		sets: func(string) string { return autoscaling.TargetBurstCapacityKey + ": -1" },
		apply: func(s *servingv1.Service, _ string) {
			s.Spec.Template.Annotations[autoscaling.TargetBurstCapacityKey] = "-1"
		},
	},
	{
		name:  "pull",
		value: "BANDWIDTH|cached",
		help: "the image is pulled at every start: run rolls the variant to a new revision before each round, of the arm's image with every layer salted anew, served by coldstart's own registry on this machine at BANDWIDTH (10Mbit, 1Gbit, max), so no node has any of it; pull=cached rolls a new revision of one image pulled at the warm-up round, the control that leaves the pull out. " +
			"The cluster's nodes must be this machine and allow-zero-initial-scale set (each new revision starts no pod before its measured start)",
		sets: func(v string) string {
			if v == pullCached {
				return "a new revision every start, its image cached on the node (initial-scale 0)"
			}
			return "a new revision every start, its image pulled at " + v + " (initial-scale 0)"
		},
		check: checkPullValue,
		apply: func(s *servingv1.Service, _ string) {
			s.Spec.Template.Annotations[autoscaling.InitialScaleAnnotationKey] = "0"
		},
	},
	{
		name:  "runtime",
		value: "CLASS",
		help:  "runtimeClassName: CLASS: the pod's containers run under that RuntimeClass's handler (e.g. crun), which the cluster must have, with Knative's kubernetes.podspec-runtimeclassname feature enabled",
		sets:  func(v string) string { return "runtimeClassName: " + v },
		check: func(v string) error {
			if errs := validation.IsDNS1123Subdomain(v); len(errs) > 0 {
				return fmt.Errorf("RuntimeClass name %q: %s", v, strings.Join(errs, "; "))
			}
			return nil
		},
		apply: func(s *servingv1.Service, v string) {
			s.Spec.Template.Spec.RuntimeClassName = ptr(v)
		},
	},
}

// LeverNames are the levers' names, as ParseLever takes them.
func LeverNames() []string {
	var out []string
	for _, k := range leverKinds {
		n := k.name
		if k.value != "" {
			n += "=" + k.value
		}
		out = append(out, n)
	}
	return out
}

// ParseLever reads one lever, KIND or KIND=VALUE.
func ParseLever(s string) (Lever, error) {
	name, value, hasValue := strings.Cut(s, "=")
	i := slices.IndexFunc(leverKinds, func(k leverKind) bool { return k.name == name })
	if i < 0 {
		return Lever{}, fmt.Errorf("lever %q: unknown, want one of %s", s, strings.Join(LeverNames(), ", "))
	}
	k := leverKinds[i]
	switch {
	case k.value == "" && hasValue:
		return Lever{}, fmt.Errorf("lever %q: %s takes no value", s, name)
	case k.value != "" && (!hasValue || value == ""):
		return Lever{}, fmt.Errorf("lever %q: want %s=%s", s, name, k.value)
	}
	if k.check != nil {
		if err := k.check(value); err != nil {
			return Lever{}, fmt.Errorf("lever %q: %w", s, err)
		}
	}
	return Lever{Name: s, Sets: k.sets(value), Control: k.name == "control", kind: k, value: value}, nil
}

// ParseLevers reads each lever, refusing one given twice.
func ParseLevers(names []string) ([]Lever, error) {
	var out []Lever
	seen := map[string]bool{}
	for _, n := range names {
		l, err := ParseLever(n)
		if err != nil {
			return nil, err
		}
		if seen[l.Slug()] {
			return nil, fmt.Errorf("lever %q: given twice", n)
		}
		seen[l.Slug()] = true
		out = append(out, l)
	}
	return out, nil
}

// Slug is the lever as a name suffix: KIND, or KIND-VALUE with the value
// in lower case and its dots made dashes ("runtime=crun" is runtime-crun,
// "pull=2.5Gbit" pull-2-5gbit), as Kubernetes names must be.
func (l Lever) Slug() string {
	if l.value == "" {
		return l.kind.name
	}
	return l.kind.name + "-" + strings.ReplaceAll(strings.ToLower(l.value), ".", "-")
}

// Variant is the name arm's variant under l is measured and deployed by:
// ARM-SLUG.
func (l Lever) Variant(arm string) string { return arm + "-" + l.Slug() }

// apply changes s as l says and labels it with the lever.
func (l Lever) apply(s *servingv1.Service) {
	if l.kind.apply != nil {
		l.kind.apply(s, l.value)
	}
	s.Labels[LabelLever] = l.Slug()
	s.Spec.Template.Labels[LabelLever] = l.Slug()
}

// checkLevers refuses levers the cluster cannot run, before anything is
// deployed: a RuntimeClass it does not have, or runtimeClassName while
// Knative's kubernetes.podspec-runtimeclassname feature is off (Knative
// would refuse the Service with a less direct message), or a pull lever
// where a new revision cannot start at zero.
func checkLevers(ctx context.Context, c Clients, levers []Lever) error {
	if i := slices.IndexFunc(levers, Lever.IsPull); i >= 0 && !allowsZeroInitialScale(ctx, c) {
		l := levers[i]
		return fmt.Errorf("lever %s: each round's new revision must start no pod before its measured start (initial-scale 0), which Knative allows only with allow-zero-initial-scale: \"true\" in %s/config-autoscaler; set it", l.Name, KnativeNamespace)
	}
	for i, l := range levers {
		if l.kind.name != "runtime" || slices.ContainsFunc(levers[:i], func(m Lever) bool { return m.Slug() == l.Slug() }) {
			continue // another arm's variant under the same lever asked already
		}
		_, err := getAs[nodev1.RuntimeClass](ctx, c.Kube.Resource(runtimeClasses), l.value)
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("lever %s: the cluster has no RuntimeClass %s: create one whose handler is a runtime the nodes' containerd or CRI-O has configured (kubectl get runtimeclass lists those there are)", l.Name, l.value)
		}
		if err != nil {
			return fmt.Errorf("lever %s: read RuntimeClass %s: %w", l.Name, l.value, err)
		}
		cm, err := getAs[corev1.ConfigMap](ctx, c.Kube.Resource(configMapsResource).Namespace(KnativeNamespace), "config-features")
		if err != nil {
			return fmt.Errorf("lever %s: read %s/config-features: %w", l.Name, KnativeNamespace, err)
		}
		if v := cm.Data["kubernetes.podspec-runtimeclassname"]; v != "enabled" && v != "allowed" {
			return fmt.Errorf("lever %s: Knative refuses runtimeClassName while kubernetes.podspec-runtimeclassname is %q in %s/config-features; set it to enabled", l.Name, v, KnativeNamespace)
		}
	}
	return nil
}
