package knative

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"sort"
	"time"

	"github.com/openzipkin/zipkin-go/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"

	"github.com/coldstart-go/coldstart/internal/noise"
	"github.com/coldstart-go/coldstart/prober"
)

// ProbeFunc makes one probe attempt at target (host:port) with the given
// :authority on a channel of its own, and returns nil only for a healthy
// reply. ctx carries the attempt's deadline. Over TLS it also returns the
// attempt's handshake when one completed, whatever the call after it did
// (nil in plaintext, or when no handshake completed).
type ProbeFunc func(ctx context.Context, target, authority string) (*prober.Handshake, error)

// HealthCheck is the default ProbeFunc: prober.Health, i.e. a fresh gRPC
// channel (passthrough target, no DNS resolver, plaintext h2c), one
// fail-fast grpc.health.v1 Check for the whole server, then Close. A fresh
// channel per attempt avoids grpc-go's reconnect backoff (1 s after the
// first failure), which would quantise the measurement.
func HealthCheck(ctx context.Context, target, authority string) (*prober.Handshake, error) {
	return CheckerProbe(prober.Health{Authority: authority})(ctx, target, authority)
}

// CheckerProbe makes a ProbeFunc of any prober.Checker: ready answers are
// success, everything else an error. Each attempt carries the authority
// argument as its :authority (Host for an HTTP probe) unless the Checker
// sets its own: the ingress and the activator route on it. A Checker with
// TLS makes each attempt a new TLS client, its server name that authority
// (WithAuthority); a failure retrying does not mend (a certificate that
// does not verify, a plaintext server) wraps prober.ErrBadProbe.
func CheckerProbe(c prober.Checker) ProbeFunc {
	return func(ctx context.Context, target, authority string) (*prober.Handshake, error) {
		c := WithAuthority(c, authority)
		a, err := c.Check(ctx, prober.Target{Network: "tcp", Address: target})
		if err != nil {
			return a.TLS, err
		}
		if !a.Ready {
			return a.TLS, fmt.Errorf("%s %s: answered, not ready: %s", c.Name(), target, a.Detail)
		}
		return a.TLS, nil
	}
}

// WithAuthority returns c with its :authority (the Host header for an HTTP
// probe) set to authority, unless c sets one already or authority is "".
// Probe kinds without one (tcp) are returned as they are. Over TLS the
// server name sent (SNI) and verified becomes that :authority too, unless
// c's TLS options name one (--tls-server-name): what TLS in front of
// Knative is terminated by, the ingress or a gateway, picks the
// certificate by the Service's host, and a probe URL's own host (loopback)
// names no Service.
func WithAuthority(c prober.Checker, authority string) prober.Checker {
	if authority == "" {
		return c
	}
	switch t := c.(type) {
	case prober.Health:
		if t.Authority == "" {
			t.Authority = authority
		}
		if t.TLS != nil {
			t.TLSName = t.Authority
		}
		return t
	case *prober.GRPCMethod:
		cp := *t
		if cp.Authority == "" {
			cp.Authority = authority
		}
		if cp.TLS != nil {
			cp.TLSName = cp.Authority
		}
		return &cp
	case *prober.HTTP:
		cp := *t
		if cp.Host == "" {
			cp.Host = authority
		}
		if cp.TLS != nil {
			cp.TLSName = cp.Host
		}
		return &cp
	}
	return c
}

// RevisionHost is the cluster-local host name of a revision,
// REVISION.NAMESPACE.svc.cluster.local: Knative's activator routes a
// request with that :authority to the revision (as it does one with the
// Knative-Serving-Revision and -Namespace headers).
func RevisionHost(namespace, revision string) string {
	return revision + "." + namespace + ".svc.cluster.local"
}

// activatorAuthority is the :authority Knative's activator routes to svc's
// latest ready revision by (RevisionHost).
func activatorAuthority(svc *servingv1.Service) (string, error) {
	rev := svc.Status.LatestReadyRevisionName
	if rev == "" {
		return "", fmt.Errorf("probe service %s/%s through the activator: %w: it has no ready revision yet (%s)",
			svc.Namespace, svc.Name, ErrNoTarget, Conditions(svc))
	}
	return RevisionHost(svc.Namespace, rev), nil
}

// MeasureOptions configure ScaleFromZero. Zero durations take the defaults
// named on each field.
type MeasureOptions struct {
	// Noise, when set (on the first options), gets what else this machine
	// did during each round: the prober's machine, which on a single-node
	// cluster also runs the cluster (its kubelet, containerd and pods count
	// as other work there).
	Noise     func(scope string, w noise.Window) error
	Namespace string
	Service   string // the Knative Service's name
	Arm       string // recorded in each Sample
	Budget    string // recorded in each Sample
	// Runs is the number of counted cold starts.
	Runs int
	// Warmup adds an uncounted run 0 first (Sample.Warmup).
	Warmup bool
	// Target is the host:port each probe dials: the ingress address from
	// outside the cluster, e.g. Kourier's load balancer "203.0.113.7:80".
	// "" uses the Service's cluster-local address on port 80 (inside the
	// cluster).
	Target string
	// Authority is the :authority of each probe, which the ingress routes
	// on; "" uses the host of the Service's URL (or, with Activator, the
	// revision's host).
	Authority string
	// Activator says that Target is Knative's activator (its Service, port
	// 81 for h2c), not an ingress: each probe's :authority is then the
	// latest ready revision's RevisionHost, which the activator routes on.
	// The ingress hop is not part of what is measured.
	Activator bool
	// ZeroTimeout bounds each wait until the revision is at zero (0 = 10m;
	// Knative's own scale-down takes its stable window plus
	// scale-to-zero-grace-period, ~40 s with coldstart's annotations).
	ZeroTimeout time.Duration
	// ProbeTimeout bounds one cold start, t0 to first healthy reply (0 = 2m).
	ProbeTimeout time.Duration
	// AttemptTimeout is each attempt's deadline (0 = 1s). The activator
	// holds a request until a pod is ready, so an attempt may wait that
	// long; a later attempt is held again.
	AttemptTimeout time.Duration
	// Gap is the pause between failed attempts (0 = 500µs), so the prober
	// does not busy-spin on a CPU the cluster might share.
	Gap time.Duration
	// PhaseGrace is how long, after the first RPC, to wait for the watch
	// events of phases not yet seen (0 = 2s).
	PhaseGrace time.Duration
	// Traces, when set, receives the spans Knative's components export
	// (config-tracing backend zipkin): each cold start's probes carry a
	// sampled traceparent of a trace of their own, and its sample gains the
	// phases activator_received, activator_released and
	// queue_proxy_received from those spans.
	Traces *TraceCollector
	// TraceGrace is how long, after the first RPC, to wait for the spans
	// (0 = 5s; Knative's Zipkin reporter sends a batch every second).
	TraceGrace time.Duration
	// Container is the server container's name in the pods ("" = the
	// Service's first container's, else any container but queue-proxy).
	Container string
	// Probe makes one attempt (nil = HealthCheck).
	Probe ProbeFunc
	// Log receives progress lines (nil = quiet).
	Log io.Writer
	// roll, for a pull lever's variant, gives the Service a new revision
	// before each run and proves what each start pulled.
	roll *imageRoll
}

func (o *MeasureOptions) defaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.ZeroTimeout, 10*time.Minute)
	def(&o.ProbeTimeout, 2*time.Minute)
	def(&o.AttemptTimeout, time.Second)
	def(&o.Gap, 500*time.Microsecond)
	def(&o.PhaseGrace, 2*time.Second)
	def(&o.TraceGrace, 5*time.Second)
	if o.Probe == nil {
		o.Probe = HealthCheck
	}
}

// ErrNoTarget is returned when neither MeasureOptions.Target nor the
// Service's status gives an address to probe.
var ErrNoTarget = errors.New("no address to probe")

// ScaleFromZero times o.Runs cold starts of one Knative Service (plus a
// warm-up run when o.Warmup). For each run it waits until the Service's
// revisions are truly at zero, as seen by started and synced informers
// (AtZero), takes t0, probes with a fresh gRPC channel per attempt until the
// first healthy reply, and calls record with a prober.Sample holding
// first_rpc_ms, the attempts, and the phases its watch events showed. A cold
// start that gets no healthy reply within ProbeTimeout is recorded with its
// Error set and the run goes on; errors of the cluster or of record end it.
func ScaleFromZero(ctx context.Context, c Clients, o MeasureOptions, record func(prober.Sample) error) error {
	return ScaleFromZeroInterleaved(ctx, c, []MeasureOptions{o}, record)
}

// ScaleFromZeroInterleaved is ScaleFromZero for several Services, arms
// interleaved: round r makes run r of each Service, in the order given
// rotated by r (round 1 starts with the second), so
// that each Service scales down to zero while the others are measured (a
// revision takes its stable window, the scale-to-zero grace period and its
// pod's drain, ~45 s with Knative's defaults, to reach zero), and a drift
// of the cluster over time touches every arm alike. Runs and Warmup come
// from the first options.
func ScaleFromZeroInterleaved(ctx context.Context, c Clients, opts []MeasureOptions, record func(prober.Sample) error) error {
	if len(opts) == 0 {
		return nil
	}
	arms := make([]*armRun, 0, len(opts))
	defer func() {
		for _, a := range arms {
			a.obs.close()
		}
	}()
	for _, o := range opts {
		a, err := prepare(ctx, c, o)
		if err != nil {
			return err
		}
		arms = append(arms, a)
	}
	first := 1
	if opts[0].Warmup {
		first = 0
	}
	for run := first; run <= opts[0].Runs; run++ {
		snap, nerr := noise.Host.Take()
		for i := range arms {
			// Each round starts one arm later, so no arm is always first:
			// the first start of a round found the activator and the
			// autoscaler idle longest.
			if err := arms[(i+run)%len(arms)].measure(ctx, run, record); err != nil {
				return err
			}
		}
		if err := roundNoise(opts[0].Noise, run, snap, nerr); err != nil {
			return err
		}
	}
	return nil
}

// armRun is one Service under measurement: its options, where probes go,
// and the informers that watch its Deployments and pods.
type armRun struct {
	o                 MeasureOptions
	target, authority string
	obs               *observer
	// revAuthority: authority is the latest ready revision's host, which
	// a roll changes.
	revAuthority bool
}

// prepare reads the Service, decides where its probes go and starts
// watching it.
func prepare(ctx context.Context, c Clients, o MeasureOptions) (*armRun, error) {
	o.defaults()
	svc, err := c.Serving.Services(o.Namespace).Get(ctx, o.Service, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get service %s/%s: %w", o.Namespace, o.Service, err)
	}
	revAuthority := o.Activator && o.Authority == ""
	if revAuthority {
		if o.Authority, err = activatorAuthority(svc); err != nil {
			return nil, err
		}
	}
	if o.Activator && o.Target == "" {
		return nil, fmt.Errorf("probe service %s/%s through the activator: %w: pass the activator's address", o.Namespace, o.Service, ErrNoTarget)
	}
	target, authority, err := probeAddress(o, urlString(svc.Status.URL), addressURL(svc.Status.Address))
	if err != nil {
		return nil, fmt.Errorf("probe service %s/%s: %w", o.Namespace, o.Service, err)
	}
	if o.Container == "" && len(svc.Spec.Template.Spec.Containers) > 0 {
		// Not "any but queue-proxy": a mesh may add its own sidecar.
		o.Container = svc.Spec.Template.Spec.Containers[0].Name
	}
	logf(o.Log, "%s: probing %s with :authority %q", o.Service, target, authority)
	obs, err := observe(ctx, c, o.Namespace, o.Service)
	if err != nil {
		return nil, err
	}
	return &armRun{o: o, target: target, authority: authority, obs: obs, revAuthority: revAuthority}, nil
}

// measure waits until the Service is at zero, times one cold start and
// records it as run.
func (a *armRun) measure(ctx context.Context, run int, record func(prober.Sample) error) error {
	o := a.o
	if o.roll != nil {
		if err := o.roll.next(ctx, run); err != nil {
			return fmt.Errorf("service %s/%s run %d: %w", o.Namespace, o.Service, run, err)
		}
		if a.revAuthority {
			a.authority = RevisionHost(o.Namespace, o.roll.revision)
		}
		logf(o.Log, "%s run %d: revision %s, image %s", o.Service, run, o.roll.revision, o.roll.ref)
	}
	if err := a.untilZero(ctx, run, o.Log); err != nil {
		return err
	}
	s, err := coldStart(ctx, a.obs, o, a.target, a.authority)
	if err != nil {
		return fmt.Errorf("service %s/%s run %d: %w", o.Namespace, o.Service, run, err)
	}
	s.Arm, s.Budget, s.Run, s.Warmup = o.Arm, o.Budget, run, run == 0
	if o.roll != nil {
		var bad string
		s.ImagePull, bad = o.roll.proof(s.Warmup)
		if bad != "" && s.Error == "" {
			s.Error = bad
		}
		if err := o.roll.release(ctx); err != nil {
			logf(o.Log, "%s run %d: %v (the registry keeps it in memory)", o.Service, run, err)
		}
	}
	logf(o.Log, "%s run %d: first RPC after %.1f ms, %d attempts %s", o.Service, run, s.FirstRPCMs, s.Attempts, s.Error)
	if err := record(s); err != nil {
		return fmt.Errorf("record run %d of %s: %w", run, o.Service, err)
	}
	return nil
}

// untilZero waits, at most ZeroTimeout, until the Service is at zero,
// writing each new reason it is not to log.
func (a *armRun) untilZero(ctx context.Context, run int, log io.Writer) error {
	zctx, cancel := context.WithTimeout(ctx, a.o.ZeroTimeout)
	defer cancel()
	err := a.obs.waitZero(zctx, func(why string) { logf(log, "%s run %d: waiting for zero: %s", a.o.Service, run, why) })
	if err != nil {
		return fmt.Errorf("service %s/%s run %d: %w", a.o.Namespace, a.o.Service, run, err)
	}
	return nil
}

// roundNoise passes rec what else this machine did since snap, taken at
// the start of round run, when rec is set and snap was taken (nerr nil).
func roundNoise(rec func(scope string, w noise.Window) error, run int, snap noise.Snapshot, nerr error) error {
	if rec == nil || nerr != nil {
		return nil
	}
	w, err := noise.Host.Since(snap)
	if err != nil {
		return nil // a window that cannot be read is left out
	}
	if err := rec(fmt.Sprintf("round %d", run), w); err != nil {
		return fmt.Errorf("record noise: %w", err)
	}
	return nil
}

// coldStart is one measured cold start from t0 to the first healthy reply.
func coldStart(ctx context.Context, obs *observer, o MeasureOptions, target, authority string) (prober.Sample, error) {
	t0 := time.Now()
	if err := obs.startTracking(t0, o.Container); err != nil {
		return prober.Sample{}, err
	}
	return probeFrom(ctx, obs, o, target, authority, t0)
}

// badProbesToBlame is how many attempts in a row must fail for good
// (prober.ErrBadProbe: a certificate that does not verify, a plaintext
// server where TLS was asked for) before a cold start ends with that
// error rather than waiting out ProbeTimeout: one connection closed on a
// ClientHello may be a hop going away, not a server without TLS.
const badProbesToBlame = 3

// badRun counts a probe's attempts in a row that failed for good.
type badRun int

// final records err, an attempt's error, and says whether it ends the
// probing: badProbesToBlame failures for good in a row. Any other
// outcome starts the count again.
func (b *badRun) final(err error) bool {
	if !errors.Is(err, prober.ErrBadProbe) {
		*b = 0
		return false
	}
	*b++
	return *b >= badProbesToBlame
}

// probeFrom probes until the first healthy reply, timed from t0, at which
// obs started tracking, and reads the phases; it stops the tracking. Over
// TLS (the attempts return handshakes) the first completed handshake is
// the tls_handshake phase and the ready attempt's the sample's TLS, as in
// a local run; an attempt that fails for good badProbesToBlame times in a
// row ends the cold start with its error.
func probeFrom(ctx context.Context, obs *observer, o MeasureOptions, target, authority string, t0 time.Time) (prober.Sample, error) {
	defer obs.stopTracking()
	var s prober.Sample
	pctx, cancel := context.WithTimeout(ctx, o.ProbeTimeout)
	defer cancel()
	var trace model.TraceID
	if o.Traces != nil {
		trace = o.Traces.Expect()
		defer o.Traces.Forget(trace)
	}
	var lastErr error
	var handshake *prober.Phase // the first TLS handshake completed
	var bad badRun
	for {
		s.Attempts++
		actx, acancel := context.WithTimeout(pctx, o.AttemptTimeout)
		if o.Traces != nil {
			actx = withTrace(actx, trace) // a new span of the same trace per attempt
		}
		var hs *prober.Handshake
		hs, lastErr = o.Probe(actx, target, authority)
		acancel()
		if hs != nil && handshake == nil {
			handshake = &prober.Phase{Name: prober.PhaseTLSHandshake, Ms: ms(hs.Done.Sub(t0))}
		}
		if lastErr == nil {
			s.FirstRPCMs = ms(time.Since(t0))
			if hs != nil {
				s.TLS = hs.Record()
			}
			break
		}
		if ctx.Err() != nil {
			return s, context.Cause(ctx)
		}
		if bad.final(lastErr) {
			return s, lastErr // it names the server; the caller, the Service
		}
		if pctx.Err() != nil {
			s.Error = fmt.Sprintf("no healthy reply from %s within %s after %d attempts: %v", target, o.ProbeTimeout, s.Attempts, lastErr)
			break
		}
		time.Sleep(o.Gap)
	}
	// Watch events may trail the RPC (the pod's Ready update, say).
	if err := waitPhases(ctx, obs, o.PhaseGrace); err != nil {
		return s, err
	}
	if t := obs.stopTracking(); t != nil {
		s.Phases = t.phases()
	}
	if o.Traces != nil {
		spans, err := o.Traces.Wait(ctx, trace, o.TraceGrace, traceDone)
		if err != nil {
			return s, err
		}
		s.Phases = append(s.Phases, tracePhases(t0, spans)...)
	}
	if handshake != nil {
		s.Phases = append(s.Phases, *handshake)
	}
	if s.Error == "" {
		s.Phases = append(s.Phases, prober.Phase{Name: prober.PhaseFirstRPC, Ms: s.FirstRPCMs})
	}
	// The pod's Ready event may arrive after the first reply, the spans'
	// phases fall between the watch's: all in time order.
	sort.SliceStable(s.Phases, func(i, j int) bool { return s.Phases[i].Ms < s.Phases[j].Ms })
	return s, nil
}

// waitPhases waits up to grace for the watch phases not seen yet.
func waitPhases(ctx context.Context, obs *observer, grace time.Duration) error {
	t := time.NewTimer(grace)
	defer t.Stop()
	for !obs.trackedAll() {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-t.C:
			return nil
		case <-obs.changed:
		}
	}
	return nil
}

func urlString(u *apis.URL) string {
	if u == nil {
		return ""
	}
	return u.String()
}

func addressURL(a *duckv1.Addressable) string {
	if a == nil || a.URL == nil {
		return ""
	}
	return a.URL.String()
}

// probeAddress picks the probe's dial target and :authority from the
// options or the Service's status URLs.
func probeAddress(o MeasureOptions, svcURL, localURL string) (target, authority string, err error) {
	host := func(raw string) string {
		u, err := url.Parse(raw)
		if err != nil {
			return ""
		}
		return u.Hostname()
	}
	target, authority = o.Target, o.Authority
	if authority == "" {
		authority = host(svcURL)
	}
	if target == "" {
		h := host(localURL)
		if h == "" {
			return "", "", fmt.Errorf("%w: pass a target (the ingress address); the service has no status.address", ErrNoTarget)
		}
		target = net.JoinHostPort(h, "80")
	}
	if _, _, err := net.SplitHostPort(target); err != nil {
		return "", "", fmt.Errorf("target %q: want HOST:PORT: %w", target, err)
	}
	return target, authority, nil
}
