package cell

import (
	"strings"
	"testing"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/cellrouter/cellrouter/internal/telemetry"
)

// TestTraceSpansEveryHop checks that one request makes one trace: the
// cell's request span, a span per pipeline stage and one for the upstream
// call, with the W3C trace context passed to the pod.
func TestTraceSpansEveryHop(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	old := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(telemetry.Propagator)
	t.Cleanup(func() { otel.SetTracerProvider(old) })

	p := newFakePod(t, "a")
	c := cellWithPods(t, []*fakePod{p}, nil)
	traceparent := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	resp, body := completion(t, "http://"+c.HTTPAddr(), promptTokens(9), false, map[string]string{"traceparent": traceparent})
	if resp.StatusCode != 200 {
		t.Fatalf("status %d %s", resp.StatusCode, body)
	}
	got := p.last().header.Get("Traceparent")
	if !strings.HasPrefix(got, "00-4bf92f3577b34da6a3ce929d0e0e4736-") {
		t.Fatalf("pod got traceparent %q, want the client's trace id", got)
	}
	names := map[string]bool{}
	for _, s := range rec.Ended() {
		if s.SpanContext().TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
			t.Errorf("span %s is in trace %s, not the client's", s.Name(), s.SpanContext().TraceID())
		}
		names[s.Name()] = true
	}
	for _, want := range []string{"cell.request", "cell.stage.prepare", "cell.stage.filter", "cell.stage.score", "cell.stage.pick", "cell.upstream"} {
		if !names[want] {
			t.Errorf("no span %q; got %v", want, names)
		}
	}
}
