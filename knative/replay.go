package knative

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"knative.dev/serving/pkg/apis/autoscaling"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"
	knconfig "knative.dev/serving/pkg/autoscaler/config"
	"knative.dev/serving/pkg/autoscaler/config/autoscalerconfig"

	"github.com/coldstart-go/coldstart/internal/stats"
	"github.com/coldstart-go/coldstart/prober"
	"github.com/coldstart-go/coldstart/record"
)

// LabelReplay numbers a replay's Service (absent elsewhere).
const LabelReplay = "coldstart-go.github.io/replay"

// ReplayName is the name of arm's Service for a replay's k-th policy:
// ARM-replayK.
func ReplayName(arm string, k int) string { return fmt.Sprintf("%s-replay%d", arm, k) }

// Autoscaling is what a revision's autoscaling annotations set: the
// KPA's stable window, scale-down delay, scale-to-zero pod retention,
// min and initial scale, and concurrency target and utilization. The
// scale-to-zero grace period has no annotation: it is the cluster's
// (config-autoscaler).
type Autoscaling struct {
	Window, Delay, Retention time.Duration
	Min, Initial             int
	Target, Utilization      float64
}

// annotations are a's revision annotations, every one spelled out, so
// that the cluster's config-autoscaler defaults decide nothing but the
// grace period.
func (a Autoscaling) annotations() map[string]string {
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	return map[string]string{
		autoscaling.WindowAnnotationKey:              a.Window.String(),
		autoscaling.ScaleDownDelayAnnotationKey:      a.Delay.String(),
		autoscaling.ScaleToZeroPodRetentionPeriodKey: a.Retention.String(),
		autoscaling.MinScaleAnnotationKey:            strconv.Itoa(a.Min),
		autoscaling.InitialScaleAnnotationKey:        strconv.Itoa(a.Initial),
		autoscaling.TargetAnnotationKey:              f(a.Target),
		autoscaling.TargetUtilizationPercentageKey:   f(a.Utilization),
	}
}

// AutoscalerConfig reads the cluster's config-autoscaler as Knative's
// autoscaler does (its own parser, defaults for what the ConfigMap
// leaves out): the grace period, whether scale to zero is on, and the
// limits a replay's simulation must share.
func AutoscalerConfig(ctx context.Context, c Clients) (*autoscalerconfig.Config, error) {
	cm, err := getAs[corev1.ConfigMap](ctx, c.Kube.Resource(configMapsResource).Namespace(KnativeNamespace), knconfig.ConfigName)
	if err != nil {
		return nil, fmt.Errorf("read %s/%s: %w", KnativeNamespace, knconfig.ConfigName, err)
	}
	cfg, err := knconfig.NewConfigFromMap(cm.Data)
	if err != nil {
		return nil, fmt.Errorf("%s/%s: Knative's own parser refuses it: %w", KnativeNamespace, knconfig.ConfigName, err)
	}
	return cfg, nil
}

// ReplayServices makes one Service per policy from arm's deployed
// Service (PREFIX+ARM, which `coldstart deploy` made): the same image,
// container and pod spec under PREFIX+ReplayName(arm, k), k from 1, with
// the policy's autoscaling annotations. Each carries arm's labels, so
// `coldstart deploy --delete --arms ARM` removes them too.
func ReplayServices(base *servingv1.Service, namePrefix, arm string, policies []Autoscaling) ([]*servingv1.Service, error) {
	if base.Labels[LabelManagedBy] != ManagedBy {
		return nil, fmt.Errorf("service %s/%s: %w: replay copies only a Service coldstart deploy made", base.Namespace, base.Name, ErrNotOurs)
	}
	var out []*servingv1.Service
	for i, p := range policies {
		k := i + 1
		name := namePrefix + ReplayName(arm, k)
		if err := CheckServiceName(name); err != nil {
			return nil, fmt.Errorf("arm %s: %w", arm, err)
		}
		s := &servingv1.Service{
			TypeMeta: metav1.TypeMeta{APIVersion: servingv1.SchemeGroupVersion.String(), Kind: "Service"},
			ObjectMeta: metav1.ObjectMeta{
				Name: name, Namespace: base.Namespace,
				Labels: map[string]string{LabelManagedBy: ManagedBy, LabelArm: arm, LabelReplay: strconv.Itoa(k)},
			},
			Spec: *base.Spec.DeepCopy(),
		}
		s.Spec.Traffic = nil // the latest revision, as deploy's own
		tmpl := &s.Spec.Template
		tmpl.Name = "" // a revision name of the base's would clash
		if tmpl.Labels == nil {
			tmpl.Labels = map[string]string{}
		}
		tmpl.Labels[LabelReplay] = strconv.Itoa(k)
		if tmpl.Annotations == nil {
			tmpl.Annotations = map[string]string{}
		}
		for key, v := range p.annotations() {
			tmpl.Annotations[key] = v
		}
		out = append(out, s)
	}
	return out, nil
}

// DeployReplay creates (or updates) the Services ReplayServices makes from
// the deployed Service of arm and waits until each is Ready, at most
// timeout. On failure it deletes those it created.
func DeployReplay(ctx context.Context, c Clients, namespace, namePrefix, arm string, policies []Autoscaling, timeout time.Duration, log io.Writer) (names []string, err error) {
	baseName := namePrefix + arm
	base, err := c.Serving.Services(namespace).Get(ctx, baseName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("arm %s: no service %s/%s to copy: deploy it first with coldstart deploy --arms %s", arm, namespace, baseName, arm)
	}
	if err != nil {
		return nil, fmt.Errorf("get service %s/%s: %w", namespace, baseName, err)
	}
	svcs, err := ReplayServices(base, namePrefix, arm, policies)
	if err != nil {
		return nil, err
	}
	var created []string
	defer func() {
		if err == nil {
			return
		}
		if derr := DeleteNamed(ctx, c, namespace, created, log, "created by this failed replay"); derr != nil {
			err = errors.Join(err, derr)
		}
	}()
	for _, s := range svcs {
		isNew, err := apply(ctx, c, s)
		if err != nil {
			return nil, err
		}
		if isNew {
			created = append(created, s.Name)
		}
		names = append(names, s.Name)
		logf(log, "replay: service %s/%s with %s", namespace, s.Name, policyText(s.Spec.Template.Annotations))
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for _, n := range names {
		if _, err := WaitReady(wctx, c, namespace, n); err != nil {
			return nil, err
		}
	}
	return names, nil
}

// policyText is a revision's autoscaling annotations on one line, in
// key order, without their group: "initial-scale=0 window=6s".
func policyText(ann map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(ann)) {
		if name, ok := strings.CutPrefix(k, autoscaling.GroupName+"/"); ok {
			parts = append(parts, name+"="+ann[k])
		}
	}
	return strings.Join(parts, " ")
}

// DeleteNamed cleans up Services a call made: it deletes each named
// Service in namespace (one gone already is skipped), on a context of its
// own (the caller's may be what failed) bounded by 30 s, and writes
// "deleted service NS/NAME (why)" to log for each.
func DeleteNamed(ctx context.Context, c Clients, namespace string, names []string, log io.Writer, why string) error {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	var errs []error
	for _, n := range names {
		err := c.Serving.Services(namespace).Delete(dctx, n, metav1.DeleteOptions{PropagationPolicy: ptr(metav1.DeletePropagationBackground)})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("clean up service %s/%s: %w", namespace, n, err))
			continue
		}
		logf(log, "deleted service %s/%s (%s)", namespace, n, why)
	}
	return errors.Join(errs...)
}

// ReplayTarget is one Service a Replay sends the trace to, and the
// policy its revision has, as results name it.
type ReplayTarget struct {
	Policy  string
	Service string
}

// Replay sends one trace's requests, at the trace's times, to every
// target at once: each Service is at zero at t0 (AtZero on synced
// informers), every request is one fail-fast health check on a channel of
// its own, through the activator (or the ingress), and waits for the
// answer as long as RequestTimeout. A pod watch per Service records
// how many pods were Ready when each request was sent, which makes it
// cold or warm, and each pod's life.
type Replay struct {
	Clients   Clients
	Namespace string
	Arm       string
	Targets   []ReplayTarget
	// Arrivals are the requests' times, seconds from t0, ascending;
	// Duration the trace's length, seconds: the replay ends then, or
	// when the last request is answered if that is later.
	Arrivals []float64
	Duration float64
	// Target and Activator are as MeasureOptions'.
	Target    string
	Activator bool
	Checker   prober.Checker
	// RequestTimeout bounds each request (0 = 2m); ZeroTimeout the wait
	// for zero before t0 (0 = 10m).
	RequestTimeout, ZeroTimeout time.Duration
	// Progress receives a line per minute of replay and the waits (nil =
	// quiet).
	Progress io.Writer
}

// ReplayResult is one target's replay: every request and every pod.
type ReplayResult struct {
	Target   ReplayTarget
	Requests []record.ReplayRequest
	Pods     []record.ReplayPod
}

// Run replays the trace and returns one result per target, in order.
func (r Replay) Run(ctx context.Context) ([]ReplayResult, error) {
	if len(r.Targets) == 0 {
		return nil, errors.New("replay: no services")
	}
	if !sort.Float64sAreSorted(r.Arrivals) || (len(r.Arrivals) > 0 && r.Arrivals[0] < 0) {
		return nil, errors.New("replay: arrivals must be ascending seconds from 0")
	}
	checker := r.Checker
	if checker == nil {
		checker = prober.Health{}
	}
	timeout := r.RequestTimeout
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	var runs []*armRun
	defer func() {
		for _, a := range runs {
			a.obs.close()
		}
	}()
	for _, t := range r.Targets {
		a, err := prepare(ctx, r.Clients, MeasureOptions{
			Namespace: r.Namespace, Service: t.Service, Arm: r.Arm, Budget: Budget,
			Target: r.Target, Activator: r.Activator, ZeroTimeout: r.ZeroTimeout, ProbeTimeout: timeout,
			Probe: CheckerProbe(checker),
		})
		if err != nil {
			return nil, err
		}
		runs = append(runs, a)
	}
	for _, a := range runs {
		if err := a.untilZero(ctx, 0, r.Progress); err != nil {
			return nil, err
		}
	}
	t0 := time.Now()
	lives := make([]*podLives, len(runs))
	for i, a := range runs {
		ok, why, err := a.obs.state()
		if err == nil && !ok {
			err = fmt.Errorf("not at zero at t0: %s", why)
		}
		if err != nil {
			return nil, fmt.Errorf("service %s/%s: %w", r.Namespace, a.o.Service, err)
		}
		lives[i] = &podLives{t0: t0, life: map[string]*record.ReplayPod{}}
		a.obs.setOnPod(lives[i].event)
	}
	results := make([]ReplayResult, len(r.Targets))
	for i, t := range r.Targets {
		results[i] = ReplayResult{Target: t, Requests: make([]record.ReplayRequest, len(r.Arrivals))}
	}
	var wg sync.WaitGroup
	nextLog := time.Minute
	for idx, at := range r.Arrivals {
		if at >= r.Duration {
			results = trimRequests(results, idx)
			break
		}
		wait := time.Until(t0.Add(secs(at)))
		if wait > 0 {
			tm := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				tm.Stop()
				wg.Wait()
				return trimRequests(results, idx), context.Cause(ctx)
			case <-tm.C:
			}
		}
		if el := time.Since(t0); el >= nextLog {
			logf(r.Progress, "replay: %s of %s, request %d of %d", el.Truncate(time.Second), secs(r.Duration), idx, len(r.Arrivals))
			nextLog += time.Minute
		}
		for i, a := range runs {
			ready, pods := podCounts(a.obs)
			req := &results[i].Requests[idx]
			*req = record.ReplayRequest{Policy: r.Targets[i].Policy, Service: a.o.Service, Index: idx, AtS: at,
				SentS: time.Since(t0).Seconds(), ReadyPods: ready, Pods: pods, Cold: ready == 0}
			wg.Go(func() {
				sent := time.Now()
				pctx, cancel := context.WithTimeout(ctx, timeout)
				_, err := a.o.Probe(pctx, a.target, a.authority)
				cancel()
				req.LatencyMs = float64(time.Since(sent)) / float64(time.Millisecond)
				if err != nil {
					req.Error = err.Error()
				}
			})
		}
	}
	wg.Wait()
	if rest := time.Until(t0.Add(secs(r.Duration))); rest > 0 {
		select {
		case <-ctx.Done():
		case <-time.After(rest):
		}
	}
	for i, l := range lives {
		runs[i].obs.setOnPod(nil)
		results[i].Pods = l.pods(r.Targets[i].Policy, r.Targets[i].Service)
	}
	return results, context.Cause(ctx)
}

func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// trimRequests keeps each result's first n requests (those sent).
func trimRequests(rs []ReplayResult, n int) []ReplayResult {
	for i := range rs {
		rs[i].Requests = rs[i].Requests[:n]
	}
	return rs
}

// podLives records each pod's life from a Service's observer's pod
// events, timed by this process's clock from t0 (the API's timestamps
// have whole seconds only). Every Service is at zero at t0, so every pod
// it sees appeared after.
type podLives struct {
	t0 time.Time

	mu   sync.Mutex
	life map[string]*record.ReplayPod
}

func (w *podLives) event(at time.Time, p *corev1.Pod, deleted bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := at.Sub(w.t0).Seconds()
	l := w.life[p.Name]
	if l == nil {
		l = &record.ReplayPod{Pod: p.Name, SeenS: s, ReadyS: -1, DeletingS: -1, GoneS: -1}
		w.life[p.Name] = l
	}
	w.note(p, s)
	if deleted && l.GoneS < 0 {
		l.GoneS = s
		if l.DeletingS < 0 {
			l.DeletingS = s
		}
	}
}

// note records p's readiness and deletion as of s.
func (w *podLives) note(p *corev1.Pod, s float64) {
	l := w.life[p.Name]
	if l.ReadyS < 0 && podReady(p) {
		l.ReadyS = s
	}
	if l.DeletingS < 0 && p.DeletionTimestamp != nil {
		l.DeletingS = s
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podCounts is how many of the pods obs holds are Ready and not
// terminating, and how many are not terminating.
func podCounts(obs *observer) (ready, pods int) {
	ps, _ := obs.pods.List(labels.Everything())
	for _, p := range ps {
		if p.DeletionTimestamp != nil {
			continue
		}
		pods++
		if podReady(p) {
			ready++
		}
	}
	return ready, pods
}

// pods are the lives recorded, in order of appearance.
func (w *podLives) pods(policy, service string) []record.ReplayPod {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]record.ReplayPod, 0, len(w.life))
	for _, l := range w.life {
		p := *l
		p.Policy, p.Service = policy, service
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].SeenS != out[j].SeenS {
			return out[i].SeenS < out[j].SeenS
		}
		return out[i].Pod < out[j].Pod
	})
	return out
}

// ReplayTotals sums one target's replay as record.Replay counts it, and
// returns the latencies of its scales from zero for the simulator.
//
// A request is cold when it was sent with no Ready pod in the pod watch
// and it waited: answered slower than the warm bound, the p99 of the
// requests sent with a Ready pod (or it got no answer). The watch's Ready
// trails the activator, which probes a new pod itself and routes to it
// before the kubelet's Ready reaches the API; a request sent in between
// is answered in warm time and counted in AnsweredWarm, not as cold. A
// scale from zero is a request sent when the Service had no pod at all:
// its latency is a whole start.
//
// Pods count from appearing to their deletion (the autoscaler's
// decision) or end, their drain from deletion to gone.
func ReplayTotals(res ReplayResult, end float64) (rp record.Replay, startMs []float64) {
	rp.Policy, rp.Service = res.Target.Policy, res.Target.Service
	var warm, cold []float64
	for _, q := range res.Requests {
		if q.ReadyPods > 0 && q.Error == "" {
			warm = append(warm, q.LatencyMs)
		}
	}
	if len(warm) > 0 {
		rp.WarmBoundMs = stats.Quantile(warm, 0.99)
	}
	for _, q := range res.Requests {
		rp.Requests++
		if q.Error != "" {
			rp.Errors++
		}
		if !q.Cold {
			continue
		}
		rp.ColdByWatch++
		if q.Error == "" && q.LatencyMs <= rp.WarmBoundMs {
			rp.AnsweredWarm++
			continue
		}
		rp.Cold++
		if q.Error == "" {
			cold = append(cold, q.LatencyMs)
			if q.Pods == 0 {
				startMs = append(startMs, q.LatencyMs)
			}
		}
	}
	if len(cold) > 0 {
		rp.ColdMedianMs = stats.Quantile(cold, 0.5)
	}
	for _, p := range res.Pods {
		from := math.Max(p.SeenS, 0)
		if p.SeenS > 0 {
			rp.Starts++
		}
		to := end
		if p.DeletingS >= 0 {
			to = math.Min(p.DeletingS, end)
		}
		rp.PodSeconds += math.Max(0, to-from)
		if p.DeletingS >= 0 && p.DeletingS < end {
			gone := end
			if p.GoneS >= 0 {
				gone = math.Min(p.GoneS, end)
			}
			rp.DrainSeconds += math.Max(0, gone-p.DeletingS)
		}
	}
	return rp, startMs
}
