package global

import (
	"github.com/cellrouter/cellrouter/cell/telemetry"
	"go.opentelemetry.io/otel/trace"
)

// globalTracer follows the global provider (telemetry.Setup, or a test's).
var globalTracer = telemetry.NewTracer("github.com/cellrouter/cellrouter/global")

func tracer() trace.Tracer { return globalTracer.Get() }
