package cell

import "go.opentelemetry.io/otel/trace"

// Option sets what New takes beyond the Config: things a YAML file cannot
// hold.
type Option func(*options)

type options struct {
	tracerProvider trace.TracerProvider
}

// WithTracerProvider gives the cell its own tracer provider, for a process
// that hosts several cells (globald --demo, tests) and wants each one's
// spans under its own resource. Without it the cell uses the process's
// global provider (telemetry.Telemetry.Install).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *options) { o.tracerProvider = tp }
}
