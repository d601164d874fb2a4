package knative

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openzipkin/zipkin-go/model"
	zipkinhttp "github.com/openzipkin/zipkin-go/reporter/http"
	"go.opencensus.io/trace"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"knative.dev/pkg/tracing"
	tracingconfig "knative.dev/pkg/tracing/config"

	"github.com/coldstart-go/coldstart/prober"
)

// Knative's own tracing code (knative.dev/pkg/tracing: OpenCensus with its
// Zipkin exporter, as the activator runs it, sample-rate 0) traces a probe
// that carries withTrace's sampled traceparent, exports the spans to a
// TraceCollector, and the phases come out in order; a probe without a
// traceparent is not traced, and spans of traces nobody expected are
// dropped.
func TestTracesFromKnativeTracing(t *testing.T) {
	tc, err := ListenTraces("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()

	oct := tracing.NewOpenCensusTracer(tracing.WithExporterFull(activatorService, "127.0.0.1", zap.NewNop().Sugar()))
	defer oct.Shutdown(context.Background())
	if err := oct.ApplyConfig(&tracingconfig.Config{Backend: tracingconfig.Zipkin, ZipkinEndpoint: tc.Endpoint(), SampleRate: 0}); err != nil {
		t.Fatal(err)
	}

	// An activator in miniature: its tracing middleware around a handler
	// that holds the request in a throttler_try span, as
	// activator/handler.go does, then serves gRPC health.
	gs := grpc.NewServer()
	healthpb.RegisterHealthServer(gs, health.NewServer())
	const held = 30 * time.Millisecond
	h := tracing.HTTPSpanMiddleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, try := trace.StartSpan(r.Context(), "throttler_try")
		time.Sleep(held)
		try.End()
		gs.ServeHTTP(w, r)
	}))
	srv := &http.Server{Handler: h, Protocols: new(http.Protocols)}
	srv.Protocols.SetUnencryptedHTTP2(true)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()

	id := tc.Expect()
	t0 := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := HealthCheck(withTrace(ctx, id), ln.Addr().String(), "rev.ns.svc.cluster.local"); err != nil {
		t.Fatalf("probe: %v", err)
	}
	first := ms(time.Since(t0))
	// Queue-proxy's span, from another service, through zipkin-go's own
	// HTTP reporter (what Knative's exporter uses).
	rep := zipkinhttp.NewReporter(tc.Endpoint())
	rep.Send(model.SpanModel{
		SpanContext:   model.SpanContext{TraceID: id, ID: 7},
		Name:          "/grpc.health.v1.Health/Check",
		Kind:          model.Server,
		Timestamp:     time.Now(),
		Duration:      time.Millisecond,
		LocalEndpoint: &model.Endpoint{ServiceName: "echo-default-00001-deployment-abc"},
	})
	// A span of a trace nobody expected.
	rep.Send(model.SpanModel{SpanContext: model.SpanContext{TraceID: model.TraceID{Low: 42}, ID: 8}, Kind: model.Server, Timestamp: time.Now()})
	rep.Close()

	spans, err := tc.Wait(ctx, id, 5*time.Second, traceDone)
	if err != nil {
		t.Fatal(err)
	}
	if !traceDone(spans) {
		t.Fatalf("after 5s the trace has %d spans without all phases: %+v", len(spans), spans)
	}
	ph := tracePhases(t0, spans)
	var names []string
	at := map[string]float64{}
	for _, p := range ph {
		names = append(names, p.Name)
		at[p.Name] = p.Ms
	}
	if got, want := strings.Join(names, ","), "activator_received,activator_released,queue_proxy_received"; got != want {
		t.Errorf("phases %s, want %s", got, want)
	}
	if r := at[PhaseActivatorReceived]; r < 0 || r > first {
		t.Errorf("activator_received at %.1f ms: want within the probe (first RPC at %.1f ms)", r, first)
	}
	if d := at[PhaseActivatorReleased] - at[PhaseActivatorReceived]; d < ms(held) {
		t.Errorf("activator held the request %.1f ms, want ≥ %v", d, held)
	}

	// Untraced: no traceparent, sample-rate 0, so no span. The probe's
	// spans would arrive within the reporter's 1 s batch interval.
	if _, err := HealthCheck(ctx, ln.Addr().String(), ""); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if st := tc.Stats(); st.Foreign != 1 || st.Bad != 0 {
		t.Errorf("stats %+v: want the one foreign span, none refused", st)
	}
}

// The collector refuses what is not a JSON array of spans, and keeps a
// bounded number of spans per trace.
func TestTraceCollectorRefuses(t *testing.T) {
	tc, err := ListenTraces("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	for _, body := range []string{"not json", `{"traceId":"1"}`, `[{"traceId":"zz","id":"1"}]`, "[" + strings.Repeat(" ", maxSpanBody) + "]"} {
		resp, err := http.Post(tc.Endpoint(), "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("POST %.20q: %s, want 400", body, resp.Status)
		}
	}
	if st := tc.Stats(); st.Bad != 4 || st.Posts != 0 {
		t.Errorf("stats %+v, want 4 refused, 0 read", st)
	}
	id := tc.Expect()
	var b strings.Builder
	b.WriteString("[")
	for i := 0; i < maxSpansByTrace+10; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"traceId":"` + id.String() + `","id":"000000000000000` + string(rune('1'+i%9)) + `","kind":"SERVER","timestamp":1700000000000000}`)
	}
	b.WriteString("]")
	resp, err := http.Post(tc.Endpoint(), "application/json", strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if n := len(tc.Spans(id)); n != maxSpansByTrace {
		t.Errorf("kept %d spans of one trace, want the cap %d", n, maxSpansByTrace)
	}
	tc.Forget(id)
	if n := len(tc.Spans(id)); n != 0 {
		t.Errorf("after Forget %d spans", n)
	}
}

// A throttler_try that ended in an error (the activator annotates it) is
// not the release: the later one that let the request through is.
func TestSpanPhasesThrottlerError(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	act := &model.Endpoint{ServiceName: activatorService}
	spans := []model.SpanModel{
		{Name: "/x", Kind: model.Server, Timestamp: t0.Add(10 * time.Millisecond), LocalEndpoint: act},
		{Name: "throttler_try", Timestamp: t0.Add(11 * time.Millisecond), Duration: time.Second, LocalEndpoint: act,
			Annotations: []model.Annotation{{Timestamp: t0.Add(time.Second), Value: "ThrottlerTry"}}},
		{Name: "/x", Kind: model.Server, Timestamp: t0.Add(1100 * time.Millisecond), LocalEndpoint: act},
		{Name: "throttler_try", Timestamp: t0.Add(1101 * time.Millisecond), Duration: 400 * time.Millisecond, LocalEndpoint: act},
	}
	got := tracePhases(t0, spans)
	want := []prober.Phase{{Name: PhaseActivatorReceived, Ms: 10}, {Name: PhaseActivatorReleased, Ms: 1501}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("phases %+v, want %+v", got, want)
	}
	if traceDone(spans) {
		t.Error("done without queue-proxy's span")
	}
}

// CheckTracing names the ConfigMap and what to set when the cluster does
// not export Zipkin spans, and returns the endpoint when it does.
func TestCheckTracing(t *testing.T) {
	cm := func(data map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "config-tracing", Namespace: KnativeNamespace}, Data: data}
	}
	for _, tt := range []struct {
		name    string
		objs    []runtime.Object
		want    string
		wantErr string
	}{
		{"zipkin", []runtime.Object{cm(map[string]string{"backend": "zipkin", "zipkin-endpoint": "http://10.233.0.1:9411/api/v2/spans"})}, "http://10.233.0.1:9411/api/v2/spans", ""},
		{"none", []runtime.Object{cm(map[string]string{"backend": "none"})}, "", `knative-serving/config-tracing has backend "none": the cluster does not send trace spans here: set backend: zipkin and zipkin-endpoint: http://10.233.0.1:9411/api/v2/spans`},
		{"default", []runtime.Object{cm(nil)}, "", `has backend ""`},
		{"missing", nil, "", "read knative-serving/config-tracing"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := Clients{Kube: fakeKube(tt.objs...)}
			got, err := CheckTracing(context.Background(), c, "10.233.0.1:9411")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("CheckTracing = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}
