package knative

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/serving/pkg/apis/autoscaling"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"

	"github.com/coldstart-go/coldstart/internal/noise"
	"github.com/coldstart-go/coldstart/prober"
	"github.com/coldstart-go/coldstart/record"
)

// ColdStart configures the scale-from-zero campaign on Knative, as
// campaign.ColdStart does the local one: one Service per arm, the arms
// interleaved, each cold start a prober.Sample and each arm a summary.
type ColdStart struct {
	Clients   Clients
	Namespace string
	// Arms are the arms measured, in order; arm A is the Service
	// NamePrefix+A, as Deploy names it (ServiceOptions.ServiceName).
	Arms       []string
	NamePrefix string
	// Levers add, after each arm, its variant under each lever: the
	// Service NamePrefix+ARM-LEVER that `coldstart deploy --lever` made,
	// measured in the same rounds and compared against the arm.
	Levers []Lever
	// PullImages are the arms' images the pull levers serve, by arm (an
	// arm not here: the image its Service runs, read from its registry).
	PullImages map[string]v1.Image
	// Runs is the number of counted cold starts per arm, after one
	// uncounted warm-up round.
	Runs int
	// Target is the host:port probes dial ("" = each Service's
	// cluster-local address, from inside the cluster); with Activator it
	// is Knative's activator, not an ingress (MeasureOptions).
	Target    string
	Activator bool
	// ProbeTimeout bounds one cold start (0 = MeasureOptions' default).
	ProbeTimeout time.Duration
	// Checker decides readiness (nil = grpc.health.v1 Check).
	Checker prober.Checker
	// Confidence is the level of each median's interval.
	Confidence float64
	// Traces, when set, adds the phases from Knative's spans (StartTraces).
	Traces *TraceCollector
	// Progress receives progress lines (nil = quiet).
	Progress io.Writer
	// Noise, when set, gets what else this machine did during each round.
	Noise func(scope string, w noise.Window) error
}

// Budget is what the samples and summaries of a Knative campaign carry
// as their budget: the pods' requests and limits are the Services'.
const Budget = "knative"

// Notes are the results file's notes for the campaign: the cluster's
// provenance (ClusterNotes), the probes' path, and where the trace phases
// come from when Traces is set.
func (c ColdStart) Notes(ctx context.Context) map[string]string {
	notes := ClusterNotes(ctx, c.Clients, c.Namespace)
	notes["probe_via"] = "ingress"
	if c.Activator {
		notes["probe_via"] = "activator"
		notes["probe_path"] = "prober -> activator Service " + c.Target + " -> revision pod (queue-proxy -> server); no ingress hop"
	}
	for _, l := range c.Levers {
		notes["lever_"+l.Slug()] = l.Sets
	}
	if c.Traces != nil {
		notes["trace_phases"] = "activator_received, activator_released, queue_proxy_received: from the Zipkin spans the cluster's config-tracing sends to " + c.Traces.sentTo + " (received at " + c.Traces.listen + "), the components' own clocks"
	}
	return notes
}

// Run measures the arms' Services, interleaved (ScaleFromZeroInterleaved:
// each Service scales to zero while the others are measured), passing
// every sample to record as it comes, and returns one summary per arm that
// has samples, in arm order, also when it fails part way.
func (c ColdStart) Run(ctx context.Context, rec func(prober.Sample) error) ([]record.Summary, error) {
	checker := c.Checker
	if checker == nil {
		checker = prober.Health{}
	}
	var mos []MeasureOptions
	variants := map[string]record.Variant{}
	var measured []string
	rolls := map[string]*imageRoll{}
	regs := pullRegistries{}
	defer regs.close()
	if i := slices.IndexFunc(c.Levers, Lever.IsPull); i >= 0 {
		if err := checkNodesHere(ctx, c.Clients, c.Levers[i]); err != nil {
			return nil, err
		}
	}
	for _, arm := range c.Arms {
		measured = append(measured, arm)
		var src v1.Image // arm's image for its pull levers, read once
		for _, l := range c.Levers {
			v := l.Variant(arm)
			svc, err := c.checkVariant(ctx, arm, l)
			if err != nil {
				return nil, err
			}
			variants[v] = record.Variant{Of: c.leverBaseline(arm, l), Platform: []string{l.Sets}, Control: l.Control}
			measured = append(measured, v)
			if !l.IsPull() {
				continue
			}
			if rolls[v], err = c.pullRoll(ctx, arm, l, svc, &src, regs); err != nil {
				return nil, err
			}
		}
	}
	for i, arm := range measured {
		mo := MeasureOptions{
			Namespace: c.Namespace, Service: c.NamePrefix + arm, Arm: arm, Budget: Budget,
			Runs: c.Runs, Warmup: true, Target: c.Target, Activator: c.Activator, ProbeTimeout: c.ProbeTimeout,
			Probe: CheckerProbe(checker), Log: c.Progress, Traces: c.Traces, roll: rolls[arm],
		}
		if i == 0 {
			mo.Noise = c.Noise
		}
		mos = append(mos, mo)
	}
	samples := map[string][]prober.Sample{}
	err := ScaleFromZeroInterleaved(ctx, c.Clients, mos, func(s prober.Sample) error {
		samples[s.Arm] = append(samples[s.Arm], s)
		return rec(s)
	})
	var sums []record.Summary
	for _, arm := range measured {
		if len(samples[arm]) == 0 {
			continue
		}
		s := record.SummarizeAt(samples[arm], c.Confidence)
		s.Arm, s.Budget, s.Probe, s.Variant = arm, Budget, checker.Name(), variants[arm]
		sums = append(sums, s)
	}
	return sums, err
}

// leverBaseline is what arm's variant under l is compared against: the
// arm, but for pull=BANDWIDTH beside pull=cached, which is compared
// against the cached variant, so that the pull's own cost stands apart
// from a new revision's (both start a new revision every round).
func (c ColdStart) leverBaseline(arm string, l Lever) string {
	if !l.IsPull() || l.value == pullCached {
		return arm
	}
	for _, m := range c.Levers {
		if m.IsPull() && m.value == pullCached {
			return m.Variant(arm)
		}
	}
	return arm
}

// pullRoll prepares the rounds of arm's variant svc under the pull lever
// l: the variant must start each new revision at zero; *src is the arm's
// image, read here the first time one of its pull levers needs it.
func (c ColdStart) pullRoll(ctx context.Context, arm string, l Lever, svc *servingv1.Service, src *v1.Image, regs pullRegistries) (*imageRoll, error) {
	if v := svc.Spec.Template.Annotations[autoscaling.InitialScaleAnnotationKey]; v != "0" {
		return nil, fmt.Errorf("lever %s of arm %s: service %s/%s has initial-scale %q, so each new revision would start a pod, and pull its image, before the measured start: redeploy it with coldstart deploy --arms %s --lever %s",
			l.Name, arm, c.Namespace, svc.Name, v, arm, l.Name)
	}
	if *src == nil {
		img, err := pullSource(ctx, c.Clients, c.Namespace, c.NamePrefix+arm, c.PullImages[arm])
		if err != nil {
			return nil, fmt.Errorf("lever %s of arm %s: %w; give the arm's image as a file with --pull-image %s=PATH", l.Name, arm, err, arm)
		}
		*src = img
	}
	reg, err := regs.get(l.pullBandwidth())
	if err != nil {
		return nil, fmt.Errorf("lever %s: %w", l.Name, err)
	}
	return newImageRoll(c.Clients, c.Namespace, svc.Name, l, *src, reg)
}

// checkVariant refuses to measure arm's variant under l unless its
// Service is the one `coldstart deploy --lever` made for that arm and
// lever: measuring another Service under the lever's name would put a
// wrong label on a figure.
func (c ColdStart) checkVariant(ctx context.Context, arm string, l Lever) (*servingv1.Service, error) {
	name := c.NamePrefix + l.Variant(arm)
	svc, err := c.Clients.Serving.Services(c.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("lever %s of arm %s: no service %s/%s: deploy it with coldstart deploy --arms %s --lever %s", l.Name, arm, c.Namespace, name, arm, l.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("lever %s of arm %s: get service %s/%s: %w", l.Name, arm, c.Namespace, name, err)
	}
	if svc.Labels[LabelArm] != arm || svc.Labels[LabelLever] != l.Slug() {
		return nil, fmt.Errorf("lever %s of arm %s: service %s/%s is labelled arm %q, lever %q, not %q, %q: redeploy it with coldstart deploy --arms %s --lever %s",
			l.Name, arm, c.Namespace, name, svc.Labels[LabelArm], svc.Labels[LabelLever], arm, l.Slug(), arm, l.Name)
	}
	return svc, nil
}
