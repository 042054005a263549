package telemetry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Propagator is the W3C trace-context and baggage propagator every hop uses.
var Propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// Enabled reports whether the environment asks for OTLP export.
func Enabled() bool {
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Telemetry is a process's tracing: one OTLP exporter, shared by the
// tracer providers it makes (one per part the process hosts). The zero
// value is not usable; use Setup. Its methods may be called concurrently.
type Telemetry struct {
	exp sdktrace.SpanExporter // nil: tracing is off

	mu        sync.Mutex
	providers []*sdktrace.TracerProvider
	closed    bool
}

// Setup installs the propagator and reads the environment. When Enabled,
// it opens the OTLP exporter (the connection is made lazily) and checks
// OTEL_RESOURCE_ATTRIBUTES, so that a misconfiguration stops the daemon at
// start. No provider is installed yet: call Install once the daemon knows
// its identity.
func Setup(ctx context.Context) (*Telemetry, error) {
	otel.SetTextMapPropagator(Propagator)
	t := &Telemetry{}
	if !Enabled() {
		return t, nil
	}
	if _, err := resource.New(ctx, resource.WithFromEnv()); err != nil {
		return nil, fmt.Errorf("telemetry: OTEL_RESOURCE_ATTRIBUTES or OTEL_SERVICE_NAME: %w", err)
	}
	exp, err := otlptracegrpc.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("telemetry: otlp exporter: %w", err)
	}
	t.exp = exp
	return t, nil
}

// Enabled reports whether t exports spans.
func (t *Telemetry) Enabled() bool { return t.exp != nil }

// Provider returns a tracer provider for the part id names, exporting
// through t's exporter with a batching processor. When t is not enabled it
// returns the global provider (a no-op unless something installed one),
// so callers need not tell the cases apart.
func (t *Telemetry) Provider(ctx context.Context, id Identity) (trace.TracerProvider, error) {
	if t.exp == nil {
		return otel.GetTracerProvider(), nil
	}
	res, err := Resource(ctx, id)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, errShutDown
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(sharedExporter{t.exp}), sdktrace.WithResource(res))
	t.providers = append(t.providers, tp)
	return tp, nil
}

// Install makes a provider for id (see Provider) the process's global
// provider, which every part without its own provider uses. It does
// nothing when t is not enabled.
func (t *Telemetry) Install(ctx context.Context, id Identity) error {
	if t.exp == nil {
		return nil
	}
	tp, err := t.Provider(ctx, id)
	if err != nil {
		return err
	}
	otel.SetTracerProvider(tp)
	return nil
}

// ForceFlush exports the spans every provider t made has ended so far.
func (t *Telemetry) ForceFlush(ctx context.Context) error {
	t.mu.Lock()
	providers := t.providers
	t.mu.Unlock()
	var errs []error
	for _, tp := range providers {
		errs = append(errs, tp.ForceFlush(ctx))
	}
	return errors.Join(errs...)
}

// Shutdown flushes every provider t made, then closes the exporter. Spans
// ended after it are dropped.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t.exp == nil {
		return nil
	}
	t.mu.Lock()
	providers := t.providers
	already := t.closed
	t.closed = true
	t.mu.Unlock()
	if already {
		return nil
	}
	var errs []error
	for _, tp := range providers {
		errs = append(errs, tp.Shutdown(ctx))
	}
	errs = append(errs, t.exp.Shutdown(ctx))
	return errors.Join(errs...)
}

// errShutDown is returned by Provider after Shutdown.
var errShutDown = errors.New("telemetry: shut down")

// sharedExporter lets several providers' batch processors use one
// exporter: each processor shuts its exporter down with it, so the shared
// one ignores that and Telemetry.Shutdown closes it after all of them.
type sharedExporter struct{ sdktrace.SpanExporter }

func (sharedExporter) Shutdown(context.Context) error { return nil }
