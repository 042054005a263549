package global

import (
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

func tracer() trace.Tracer { return otel.Tracer("github.com/cellrouter/cellrouter/global") }

func withAttrs(kv ...attribute.KeyValue) trace.SpanStartOption { return trace.WithAttributes(kv...) }
