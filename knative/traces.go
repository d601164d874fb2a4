package knative

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/openzipkin/zipkin-go/model"
	corev1 "k8s.io/api/core/v1"

	"github.com/coldstart-go/coldstart/prober"
)

// Phases of a Knative cold start read from the spans Knative's own
// components export when config-tracing sends them to a TraceCollector.
// Unlike the watch phases they are the components' own timestamps (the
// same machine's clock for a single-node cluster; another node's clock
// otherwise, as good as the cluster's time sync).
const (
	// PhaseActivatorReceived: the activator's HTTP handler began the
	// request (its server span started).
	PhaseActivatorReceived = "activator_received"
	// PhaseActivatorReleased: the activator's throttler let the request
	// through to a pod it saw ready (its throttler_try span ended without
	// an error); until then it held the request.
	PhaseActivatorReleased = "activator_released"
	// PhaseQueueProxyReceived: the pod's queue-proxy began the request
	// (its server span started).
	PhaseQueueProxyReceived = "queue_proxy_received"
)

// activatorService is the service name in the activator's spans
// (networking.ActivatorServiceName); queue-proxy names its spans after
// its pod.
const activatorService = "activator-service"

// Limits on what a TraceCollector keeps: spans come from the cluster and
// are not trusted.
const (
	maxSpanBody     = 4 << 20 // bytes of one POST
	maxSpansByTrace = 256
)

// TraceCollector receives spans in Zipkin's v2 JSON format (POST
// /api/v2/spans), as Knative's components export them when their
// config-tracing has backend "zipkin" and zipkin-endpoint
// http://ADDR/api/v2/spans. It keeps only the spans of traces coldstart
// started (Expect), so that a cluster tracing other traffic to it costs
// nothing but the parsing.
type TraceCollector struct {
	ln  net.Listener
	srv *http.Server

	// listen is the address asked for and sentTo the zipkin-endpoint the
	// cluster's config-tracing names (StartTraces), for the notes.
	listen, sentTo string

	mu      sync.Mutex
	traces  map[model.TraceID][]model.SpanModel
	changed chan struct{} // closed and replaced when spans of an expected trace arrive
	posts   int           // POSTs read, for Stats
	foreign int           // spans of traces nobody expected
	bad     int           // POSTs refused (not JSON spans, too large)
}

// ListenTraces starts a TraceCollector on addr (host:port). The cluster's
// pods must be able to reach it: on the project's single-node cluster that
// is the node's bridge address.
func ListenTraces(addr string) (*TraceCollector, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen for Knative's trace spans on %s: %w", addr, err)
	}
	c := &TraceCollector{ln: ln, traces: map[model.TraceID][]model.SpanModel{}, changed: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v2/spans", c.receive)
	c.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second}
	go c.srv.Serve(ln)
	return c, nil
}

// Endpoint is the zipkin-endpoint to put in config-tracing.
func (c *TraceCollector) Endpoint() string { return "http://" + c.ln.Addr().String() + "/api/v2/spans" }

// Close stops receiving.
func (c *TraceCollector) Close() error { return c.srv.Close() }

// TraceStats says what a TraceCollector received.
type TraceStats struct {
	Posts   int // POSTs of spans read
	Foreign int // spans of traces coldstart did not start, dropped
	Bad     int // POSTs refused as malformed or too large
}

// Stats returns what was received so far.
func (c *TraceCollector) Stats() TraceStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return TraceStats{Posts: c.posts, Foreign: c.foreign, Bad: c.bad}
}

func (c *TraceCollector) receive(w http.ResponseWriter, r *http.Request) {
	body := io.Reader(http.MaxBytesReader(w, r.Body, maxSpanBody))
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(body)
		if err != nil {
			c.refuse(w, err)
			return
		}
		defer zr.Close()
		body = io.LimitReader(zr, maxSpanBody+1)
	}
	var spans []model.SpanModel
	if err := json.NewDecoder(body).Decode(&spans); err != nil {
		c.refuse(w, err)
		return
	}
	c.mu.Lock()
	c.posts++
	woke := false
	for _, s := range spans {
		have, ok := c.traces[s.TraceID]
		if !ok {
			c.foreign++
			continue
		}
		if len(have) < maxSpansByTrace {
			c.traces[s.TraceID] = append(have, s)
			woke = true
		}
	}
	if woke {
		close(c.changed)
		c.changed = make(chan struct{})
	}
	c.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
}

func (c *TraceCollector) refuse(w http.ResponseWriter, err error) {
	c.mu.Lock()
	c.bad++
	c.mu.Unlock()
	http.Error(w, "want a JSON array of Zipkin v2 spans: "+err.Error(), http.StatusBadRequest)
}

// Expect starts a new trace whose spans c keeps until Forget.
func (c *TraceCollector) Expect() model.TraceID {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		id := model.TraceID{High: rand.Uint64(), Low: rand.Uint64()}
		if _, ok := c.traces[id]; !ok && !id.Empty() {
			c.traces[id] = nil
			return id
		}
	}
}

// Forget drops a trace's spans.
func (c *TraceCollector) Forget(id model.TraceID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.traces, id)
}

// Spans returns a copy of the spans of trace id received so far.
func (c *TraceCollector) Spans(id model.TraceID) []model.SpanModel {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]model.SpanModel(nil), c.traces[id]...)
}

// Wait waits until done says the trace's spans are all there, ctx ends,
// or grace passes, and returns the spans it has.
func (c *TraceCollector) Wait(ctx context.Context, id model.TraceID, grace time.Duration, done func([]model.SpanModel) bool) ([]model.SpanModel, error) {
	t := time.NewTimer(grace)
	defer t.Stop()
	for {
		c.mu.Lock()
		spans := append([]model.SpanModel(nil), c.traces[id]...)
		changed := c.changed
		c.mu.Unlock()
		if done(spans) {
			return spans, nil
		}
		select {
		case <-ctx.Done():
			return spans, context.Cause(ctx)
		case <-t.C:
			return spans, nil
		case <-changed:
		}
	}
}

// TraceParent is a W3C traceparent header value for a new span of trace
// id, sampled: Knative's components (OpenCensus, which honours a sampled
// parent at any sample-rate) then trace the request even with
// sample-rate 0.
func TraceParent(id model.TraceID) string {
	return fmt.Sprintf("00-%s-%016x-01", id, rand.Uint64()|1)
}

// withTrace returns ctx whose probes carry a new traceparent of trace id.
func withTrace(ctx context.Context, id model.TraceID) context.Context {
	return prober.WithHeader(ctx, "traceparent", TraceParent(id))
}

// traceDone says whether spans hold every phase a traced cold start that
// reached the server should show: the activator's server span, a
// throttler_try that let the request through, and a queue-proxy server
// span.
func traceDone(spans []model.SpanModel) bool {
	p := spanPhases(spans)
	_, a := p[PhaseActivatorReceived]
	_, r := p[PhaseActivatorReleased]
	_, q := p[PhaseQueueProxyReceived]
	return a && r && q
}

// spanPhases reads the trace phases from spans: each phase's earliest
// time.
func spanPhases(spans []model.SpanModel) map[string]time.Time {
	out := map[string]time.Time{}
	first := func(name string, at time.Time) {
		if at.IsZero() {
			return
		}
		if have, ok := out[name]; !ok || at.Before(have) {
			out[name] = at
		}
	}
	for _, s := range spans {
		service := ""
		if s.LocalEndpoint != nil {
			service = s.LocalEndpoint.ServiceName
		}
		switch {
		case s.Kind == model.Server && service == activatorService:
			first(PhaseActivatorReceived, s.Timestamp)
		case s.Kind == model.Server:
			first(PhaseQueueProxyReceived, s.Timestamp)
		case s.Name == "throttler_try" && service == activatorService && !throttlerFailed(s):
			first(PhaseActivatorReleased, s.Timestamp.Add(s.Duration))
		}
	}
	return out
}

// throttlerFailed says whether a throttler_try span ended in an error
// (the activator annotates it "ThrottlerTry" with the error, e.g. the
// request's deadline passing while it was held).
func throttlerFailed(s model.SpanModel) bool {
	for _, a := range s.Annotations {
		if a.Value == "ThrottlerTry" {
			return true
		}
	}
	_, ok := s.Tags["activator.throttler.error"]
	return ok
}

// tracePhases returns spans' phases in milliseconds from t0, in time
// order.
func tracePhases(t0 time.Time, spans []model.SpanModel) []prober.Phase {
	var out []prober.Phase
	for name, at := range spanPhases(spans) {
		out = append(out, prober.Phase{Name: name, Ms: ms(at.Sub(t0))})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Ms != out[j].Ms {
			return out[i].Ms < out[j].Ms
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// StartTraces checks that the cluster exports Knative's trace spans
// (CheckTracing) and starts a TraceCollector on listen (host:port) to
// receive them. Close it when done.
func StartTraces(ctx context.Context, c Clients, listen string) (*TraceCollector, error) {
	endpoint, err := CheckTracing(ctx, c, listen)
	if err != nil {
		return nil, err
	}
	tc, err := ListenTraces(listen)
	if err != nil {
		return nil, err
	}
	tc.listen, tc.sentTo = listen, endpoint
	return tc, nil
}

// ErrNoTracing is returned when a TraceCollector is given but the
// cluster's config-tracing does not send spans to it.
var ErrNoTracing = errors.New("the cluster does not send trace spans here")

// CheckTracing reads Knative's config-tracing and returns its
// zipkin-endpoint, or an error wrapping ErrNoTracing that says what to set
// when the components do not export Zipkin spans (its backend is not
// zipkin). A sampled traceparent on each probe makes them trace the
// probes at any sample-rate. Queue-proxy takes the config when its
// revision is created: deploy after setting it.
func CheckTracing(ctx context.Context, c Clients, listen string) (string, error) {
	cm, err := getAs[corev1.ConfigMap](ctx, c.Kube.Resource(configMapsResource).Namespace(KnativeNamespace), "config-tracing")
	if err != nil {
		return "", fmt.Errorf("read %s/config-tracing: %w", KnativeNamespace, err)
	}
	if b := strings.TrimSpace(cm.Data["backend"]); b != "zipkin" {
		return "", fmt.Errorf("%s/config-tracing has backend %q: %w: set backend: zipkin and zipkin-endpoint: http://%s/api/v2/spans (an address its pods reach), then deploy again",
			KnativeNamespace, b, ErrNoTracing, listen)
	}
	return strings.TrimSpace(cm.Data["zipkin-endpoint"]), nil
}
