package global

import (
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"
)

// globalTracer is looked up once: otel's global provider delegates to a
// provider installed later, so caching the tracer is safe and saves a
// registry lookup per span.
var globalTracer = otel.Tracer("github.com/cellrouter/cellrouter/global")

func tracer() trace.Tracer { return globalTracer }
