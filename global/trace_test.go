package global

import (
	"sync"
	"testing"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/cellrouter/cellrouter/cell/telemetry"
)

// TestOneTraceAcrossBothTiers sends a request through the global tier to a
// cell and checks that every hop is a span of the client's one trace: the
// global request, the summary lookup, each probe (and the cell's answer to
// it), the hand-off, and the cell's request, stages and upstream call.
func TestOneTraceAcrossBothTiers(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	old := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(telemetry.Propagator)
	t.Cleanup(func() { otel.SetTracerProvider(old) })

	hits := &sync.Map{}
	a, b := startTestCell(t, "cell-a", hits), startTestCell(t, "cell-b", hits)
	toks := tokens(21, 32*16)
	a.hold(t, "cell-a-pod0", toks, 20)
	g := startGlobal(t, StaticDirectory{a.view(t), b.view(t)})
	resp, body := post(t, "http://"+g.HTTPAddr()+"/v1/completions", map[string]any{"model": "m", "prompt": toks, "max_tokens": 1})
	if resp.StatusCode != 200 {
		t.Fatalf("status %d %s", resp.StatusCode, body)
	}
	var root string
	count := map[string]int{}
	for _, s := range rec.Ended() {
		if s.Name() == "global.request" {
			root = s.SpanContext().TraceID().String()
		}
	}
	if root == "" {
		t.Fatal("no global.request span")
	}
	for _, s := range rec.Ended() {
		if s.SpanContext().TraceID().String() == root {
			count[s.Name()]++
		}
	}
	for name, min := range map[string]int{"global.summary_lookup": 1, "global.probe": 2, "global.handoff": 1,
		"cell.request": 1, "cell.stage.prepare": 3, "cell.upstream": 1} {
		if count[name] < min {
			t.Errorf("trace has %d %q spans, want at least %d (all: %v)", count[name], name, min, count)
		}
	}
}
