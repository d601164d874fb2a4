// Package knative deploys coldstart's arms as Knative Services and measures
// their scale from zero on a real cluster: it builds one
// serving.knative.dev/v1 Service per arm from Knative's own Go types, creates
// or updates it through Knative's typed client, waits for it to be Ready, and
// times each cold start (revision at zero, then a fresh gRPC channel per
// probe attempt) with the phases read from watch events on the revision's
// Deployment and pods.
package knative

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"knative.dev/serving/pkg/apis/autoscaling"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"

	"github.com/coldstart-go/coldstart/budget"
)

// Labels that mark the objects coldstart creates, so that Delete removes
// only its own Services and never a user's.
const (
	// LabelManagedBy is the standard managed-by label; its value is ManagedBy.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedBy is LabelManagedBy's value on coldstart's Services.
	ManagedBy = "coldstart"
	// LabelArm names the arm a Service runs (default, pgo, static, upx, image).
	LabelArm = "coldstart-go.github.io/arm"
)

// PortName is the container port name Knative reads as "speak HTTP/2
// cleartext": gRPC needs it, "http1" would break streaming RPCs.
const PortName = "h2c"

// AutoInitialScale as ServiceOptions.InitialScale picks 0 where the cluster
// allows a zero initial scale and 1 elsewhere.
const AutoInitialScale = -1

// ErrNoDigest is returned for an image reference without a @sha256: digest.
var ErrNoDigest = errors.New("image reference has no digest")

// Arm is one arm to deploy: its name and its image, by digest.
type Arm struct {
	Name  string
	Image string // REPO@sha256:HEX (a tag may precede the digest)
	// Budget sets the container's CPU and memory requests and limits.
	Budget budget.Budget
	// Lever, when set, makes this the arm's variant under it: the
	// Service Lever.Variant(Name), the arm's own with the lever's change.
	Lever *Lever
	// Copy, from 1, makes this one of the arm's copies for scaling many
	// Services from zero at once: the Service CopyName(Name, Copy), the
	// arm's own under another name (0 = the arm's own).
	Copy int
}

// Variant is the name the arm is deployed and measured by: Name, or
// NAME-LEVER for a lever's variant, NAME-copyK for a copy.
func (a Arm) Variant() string {
	switch {
	case a.Lever != nil:
		return a.Lever.Variant(a.Name)
	case a.Copy > 0:
		return CopyName(a.Name, a.Copy)
	}
	return a.Name
}

// LabelCopy numbers a copy's Service (absent elsewhere).
const LabelCopy = "coldstart-go.github.io/copy"

// CopyName is the name of arm's copy k: ARM-copyK.
func CopyName(arm string, k int) string { return fmt.Sprintf("%s-copy%d", arm, k) }

// WithCopies is arms followed, per arm, by its copies 1 to n.
func WithCopies(arms []Arm, n int) []Arm {
	out := slices.Clone(arms)
	for _, a := range arms {
		for k := 1; k <= n; k++ {
			c := a
			c.Copy = k
			out = append(out, c)
		}
	}
	return out
}

// WithLevers is arms followed, per arm, by its variant under each lever,
// in the order given.
func WithLevers(arms []Arm, levers []Lever) []Arm {
	out := slices.Clone(arms)
	for _, a := range arms {
		for _, l := range levers {
			v := a
			v.Lever = &l
			out = append(out, v)
		}
	}
	return out
}

// EnvVar is one environment variable of the server container: Value as
// it is, or, when Secret is set, the value of Key in the Secret of that
// name in the Service's namespace, which the kubelet reads when it
// starts the pod, so that the value is never in the manifest (nor passes
// through coldstart).
type EnvVar struct {
	Name   string
	Value  string
	Secret string
	Key    string
}

// Check refuses what Kubernetes would: a variable name that is not a C
// identifier-like name, a Secret name that is not a DNS-1123 subdomain,
// a key that is not one a Secret can hold. Errors never quote Value.
func (e EnvVar) Check() error {
	if errs := validation.IsEnvVarName(e.Name); len(errs) > 0 {
		return fmt.Errorf("environment variable %q: %s", e.Name, strings.Join(errs, "; "))
	}
	if e.Secret == "" {
		return nil
	}
	if errs := validation.IsDNS1123Subdomain(e.Secret); len(errs) > 0 {
		return fmt.Errorf("environment variable %s: secret name %q: %s", e.Name, e.Secret, strings.Join(errs, "; "))
	}
	if errs := validation.IsConfigMapKey(e.Key); len(errs) > 0 {
		return fmt.Errorf("environment variable %s: key %q of secret %s: %s", e.Name, e.Key, e.Secret, strings.Join(errs, "; "))
	}
	return nil
}

// ServiceOptions shape the Service of every arm. The zero value is not
// useful; start from DefaultServiceOptions.
type ServiceOptions struct {
	Namespace string
	// NamePrefix prefixes the arm's name to make the Service's name
	// ("coldstart-" gives coldstart-default).
	NamePrefix string
	// Port is the container port, passed to the server as $PORT.
	Port int32
	// Args are the container's arguments (nil = the image's own).
	Args []string
	// Env are the container's environment variables, in order, each a
	// value as it is (it is in the manifest) or a key of a Secret.
	Env []EnvVar

	// MinScale is autoscaling.knative.dev/min-scale.
	MinScale int
	// InitialScale is autoscaling.knative.dev/initial-scale.
	// AutoInitialScale (-1) means 0 where the cluster allows it (Deploy asks
	// the cluster) and 1 otherwise.
	InitialScale int
	// Window is autoscaling.knative.dev/window (0 = leave it out).
	Window time.Duration
	// RetentionPeriod is autoscaling.knative.dev/scale-to-zero-pod-retention-period.
	RetentionPeriod time.Duration
	// TargetBurstCapacity is autoscaling.knative.dev/target-burst-capacity
	// (-1 = activator always in the path).
	TargetBurstCapacity int
	// ContainerConcurrency is the revision's hard concurrency limit (0 = unlimited).
	ContainerConcurrency int64
	// GRPCReadiness makes the readiness probe a gRPC health check on Port
	// instead of Knative's default TCP connect.
	GRPCReadiness bool
	// Annotations are added to the revision template last, overriding any
	// of the above (e.g. autoscaling.knative.dev/max-scale=1).
	Annotations map[string]string
}

// DefaultServiceOptions are the settings that make a cold start happen
// promptly and be measured as one: see NewService for why each is set.
func DefaultServiceOptions() ServiceOptions {
	return ServiceOptions{
		Namespace:           "default",
		NamePrefix:          "coldstart-",
		Port:                8080,
		MinScale:            0,
		InitialScale:        AutoInitialScale,
		Window:              6 * time.Second,
		RetentionPeriod:     0,
		TargetBurstCapacity: 0,
		GRPCReadiness:       true,
	}
}

// ServiceName is the name of arm's Service.
func (o ServiceOptions) ServiceName(arm string) string { return o.NamePrefix + arm }

// CheckServiceName refuses a name Kubernetes would refuse for a Service:
// one that is not a DNS-1035 label (at most 63 lower-case letters, digits
// and '-', starting with a letter and not ending with '-').
func CheckServiceName(name string) error {
	if errs := validation.IsDNS1035Label(name); len(errs) > 0 {
		return fmt.Errorf("service name %q: %s", name, strings.Join(errs, "; "))
	}
	return nil
}

// ParseDigest checks that ref names an image by digest and returns it
// normalised; a tag-only or malformed reference is an error wrapping
// ErrNoDigest.
func ParseDigest(ref string) (string, error) {
	d, err := name.NewDigest(ref)
	if err != nil {
		return "", fmt.Errorf("image %q: %w (want REPO@sha256:HEX, e.g. from `coldstart build --arms image --push`): %v", ref, ErrNoDigest, err)
	}
	return d.String(), nil
}

// NewService builds arm's Knative Service. It returns an error for an image
// without a digest or a name Kubernetes would refuse.
func NewService(arm Arm, o ServiceOptions) (*servingv1.Service, error) {
	img, err := ParseDigest(arm.Image)
	if err != nil {
		return nil, fmt.Errorf("arm %s: %w", arm.Name, err)
	}
	svcName := o.ServiceName(arm.Variant())
	if err := CheckServiceName(svcName); err != nil {
		return nil, fmt.Errorf("arm %s: %w", arm.Variant(), err)
	}
	if o.Port <= 0 || o.Port > 65535 {
		return nil, fmt.Errorf("arm %s: port %d out of range 1-65535", arm.Name, o.Port)
	}

	ann := map[string]string{
		// Scale to zero must be allowed: the cold start from zero is what
		// is measured.
		autoscaling.MinScaleAnnotationKey: strconv.Itoa(o.MinScale),
		// Drop the last pod as soon as the autoscaler decides to scale to
		// zero rather than keeping it warm, so each run reaches zero sooner.
		autoscaling.ScaleToZeroPodRetentionPeriodKey: o.RetentionPeriod.String(),
		// The target burst capacity decides whether the activator stays in
		// the request path: 0 puts it there only while the revision is at
		// zero, so it is in the cold path (as in production) and out of
		// the warm one; Knative's 200 would keep it in both.
		autoscaling.TargetBurstCapacityKey: strconv.Itoa(o.TargetBurstCapacity),
	}
	if o.Window > 0 {
		// The stable window is how long the autoscaler averages traffic
		// before it scales down: the shortest Knative accepts (6s) lets a
		// revision go idle, hence cold, soonest after each probe.
		ann[autoscaling.WindowAnnotationKey] = o.Window.String()
	}
	initial := o.InitialScale
	if initial < 0 {
		initial = 1 // auto, unresolved: what every cluster accepts
	}
	// 0 creates the revision without starting a pod (the cluster must set
	// allow-zero-initial-scale in config-autoscaler), so deploying does not
	// leave a warm pod that must first idle away before the first run.
	ann[autoscaling.InitialScaleAnnotationKey] = strconv.Itoa(initial)
	for k, v := range o.Annotations {
		ann[k] = v
	}

	c := corev1.Container{
		Name:  "server",
		Image: img,
		Args:  o.Args,
		// Knative passes the port to the server as $PORT; the name h2c
		// makes the queue-proxy and the activator speak HTTP/2 cleartext.
		Ports: []corev1.ContainerPort{{Name: PortName, ContainerPort: o.Port, Protocol: corev1.ProtocolTCP}},
	}
	for _, e := range o.Env {
		if err := e.Check(); err != nil {
			return nil, fmt.Errorf("arm %s: %w", arm.Name, err)
		}
		if e.Secret == "" {
			c.Env = append(c.Env, corev1.EnvVar{Name: e.Name, Value: e.Value})
			continue
		}
		c.Env = append(c.Env, corev1.EnvVar{Name: e.Name, ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: e.Secret}, Key: e.Key},
		}})
	}
	if o.GRPCReadiness {
		// The default readiness check is a TCP connect, which succeeds once
		// the kernel accepts, before the gRPC server answers; a gRPC health
		// probe makes Ready mean serving. periodSeconds 0 (unset) keeps
		// Knative's aggressive probing until the first success.
		c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
			GRPC: &corev1.GRPCAction{Port: o.Port},
		}}
	}
	c.Resources = resources(arm.Budget)

	cc := o.ContainerConcurrency
	labels := map[string]string{LabelManagedBy: ManagedBy, LabelArm: arm.Name}
	svc := &servingv1.Service{
		TypeMeta: metav1.TypeMeta{APIVersion: servingv1.SchemeGroupVersion.String(), Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      svcName,
			Namespace: o.Namespace,
			Labels:    labels,
		},
		Spec: servingv1.ServiceSpec{ConfigurationSpec: servingv1.ConfigurationSpec{
			Template: servingv1.RevisionTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels:      map[string]string{LabelManagedBy: ManagedBy, LabelArm: arm.Name},
					Annotations: ann,
				},
				Spec: servingv1.RevisionSpec{
					PodSpec: corev1.PodSpec{
						Containers: []corev1.Container{c},
						// Service links put one set of env variables per
						// Service in the namespace into every pod: a known
						// cold-start cost with many Services.
						EnableServiceLinks: ptr(false),
					},
					// containerConcurrency caps in-flight requests per pod:
					// 0 (unlimited) lets one pod take every probe, as a Go
					// gRPC server multiplexes them, so a burst does not fan
					// out into extra cold starts.
					ContainerConcurrency: &cc,
				},
			},
		}},
	}
	if arm.Lever != nil {
		arm.Lever.apply(svc)
	}
	if arm.Copy > 0 {
		svc.Labels[LabelCopy] = strconv.Itoa(arm.Copy)
		svc.Spec.Template.Labels[LabelCopy] = strconv.Itoa(arm.Copy)
	}
	return svc, nil
}

// resources maps a budget onto requests equal to limits (Guaranteed QoS
// when both are set). The CPU set has no Kubernetes equivalent here (the
// static CPU manager pins whole cores on its own) and is left out.
func resources(b budget.Budget) corev1.ResourceRequirements {
	rl := corev1.ResourceList{}
	if b.Cores > 0 {
		rl[corev1.ResourceCPU] = *resource.NewMilliQuantity(int64(b.Cores*1000+0.5), resource.DecimalSI)
	}
	if b.MemBytes > 0 {
		rl[corev1.ResourceMemory] = *resource.NewQuantity(b.MemBytes, resource.BinarySI)
	}
	if len(rl) == 0 {
		return corev1.ResourceRequirements{}
	}
	return corev1.ResourceRequirements{Requests: rl, Limits: rl.DeepCopy()}
}

// Services builds the Service of each arm, sorted by arm name.
func Services(arms []Arm, o ServiceOptions) ([]*servingv1.Service, error) {
	out := make([]*servingv1.Service, 0, len(arms))
	seen := map[string]bool{}
	for _, a := range arms {
		if seen[a.Variant()] {
			return nil, fmt.Errorf("arm %s: given twice", a.Variant())
		}
		seen[a.Variant()] = true
		s, err := NewService(a, o)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func ptr[T any](v T) *T { return &v }
