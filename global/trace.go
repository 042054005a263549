package global

import (
	"go.opentelemetry.io/otel/trace"
)

// tracerName is the instrumentation scope of the global tier's spans.
const tracerName = "github.com/cellrouter/cellrouter/global"

// Option sets what New and NewDaemon take beyond the Config.
type Option func(*options)

type options struct {
	tracerProvider trace.TracerProvider
}

// WithTracerProvider gives the global router its own tracer provider (for a
// process that hosts other parts too). Without it the router uses the
// process's global provider (telemetry.Telemetry.Install), looked up at
// each span, so a provider installed after New is used.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *options) { o.tracerProvider = tp }
}

func buildOptions(opts []Option) options {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	return o
}
