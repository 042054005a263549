package telemetry

import (
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
