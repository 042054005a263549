package telemetry

import (
	"context"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"
)

// Tracer is a named tracer of one part: of the provider the part was given,
// or else of the current global provider. For the global provider it is
// looked up once per provider: a hot path pays one atomic load per span
// instead of the provider's registry lookup, and a provider installed later
// (Telemetry.Install, or a test's recorder) is picked up at once. The zero
// value is not usable; use NewTracer.
type Tracer struct {
	name   string
	fixed  trace.Tracer // of the part's own provider; nil: follow the global one
	cached atomic.Pointer[cachedTracer]
}

type cachedTracer struct {
	provider trace.TracerProvider
	tracer   trace.Tracer
}

// NewTracer returns a Tracer for instrumentation scope name, of provider
// tp, or of the global provider when tp is nil.
func NewTracer(name string, tp trace.TracerProvider) *Tracer {
	t := &Tracer{name: name}
	if tp != nil {
		t.fixed = tp.Tracer(name)
	}
	return t
}

// defaultProvider is the global provider before any was installed: the
// API's delegating placeholder, whose spans record nothing and carry their
// parent's span context.
var defaultProvider = otel.GetTracerProvider()

// Enabled reports whether spans of this tracer may record: false while it
// follows the global provider and none was installed (no
// OTEL_EXPORTER_OTLP_ENDPOINT, no test recorder). A hot path then skips
// its spans and their attributes altogether; the placeholder's spans
// would carry the parent's span context, which stays in the context, so
// what crosses the next hop (W3C traceparent) is the same.
func (t *Tracer) Enabled() bool {
	return t.fixed != nil || otel.GetTracerProvider() != defaultProvider
}

// Start starts a span when the tracer is Enabled; otherwise it returns ctx
// unchanged (its span context is what the next hop gets) and NoopSpan, and
// opts are not looked at. Callers that build options (attributes) only for
// a recording span check Enabled first.
func (t *Tracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if !t.Enabled() {
		return ctx, noopSpan
	}
	return t.Get().Start(ctx, name, opts...)
}

// noopSpan records nothing and belongs to no trace; ending it ends nothing.
var noopSpan = trace.SpanFromContext(context.Background())

// NoopSpan returns a span that records nothing and belongs to no trace,
// for a path that skipped its span (see Enabled).
func NoopSpan() trace.Span { return noopSpan }

// Get returns the tracer.
func (t *Tracer) Get() trace.Tracer {
	if t.fixed != nil {
		return t.fixed
	}
	p := otel.GetTracerProvider()
	if c := t.cached.Load(); c != nil && c.provider == p {
		return c.tracer
	}
	c := &cachedTracer{provider: p, tracer: p.Tracer(t.name)}
	t.cached.Store(c)
	return c.tracer
}
