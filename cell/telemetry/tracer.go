package telemetry

import (
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"
)

// Tracer is a named tracer of the current global provider, looked up once
// per provider: a hot path pays one atomic load per span instead of the
// provider's registry lookup, and a provider installed later (Setup, or a
// test's recorder) is picked up at once. The zero value is not usable; use
// NewTracer.
type Tracer struct {
	name   string
	cached atomic.Pointer[cachedTracer]
}

type cachedTracer struct {
	provider trace.TracerProvider
	tracer   trace.Tracer
}

// NewTracer returns a Tracer for instrumentation scope name.
func NewTracer(name string) *Tracer { return &Tracer{name: name} }

// Get returns the tracer of the current global provider.
func (t *Tracer) Get() trace.Tracer {
	p := otel.GetTracerProvider()
	if c := t.cached.Load(); c != nil && c.provider == p {
		return c.tracer
	}
	c := &cachedTracer{provider: p, tracer: p.Tracer(t.name)}
	t.cached.Store(c)
	return c.tracer
}
