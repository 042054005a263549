package telemetry

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

func TestSetupWithoutEndpointInstallsNoExporter(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	if Enabled() {
		t.Fatal("Enabled() with no endpoint")
	}
	before := otel.GetTracerProvider()
	shutdown, err := Setup(context.Background(), "test")
	if err != nil {
		t.Fatal(err)
	}
	if otel.GetTracerProvider() != before {
		t.Fatal("Setup installed a provider without an endpoint")
	}
	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://127.0.0.1:4317")
	if !Enabled() {
		t.Fatal("Enabled() false with a traces endpoint")
	}
}

func TestTracerFollowsTheProvider(t *testing.T) {
	tr := NewTracer("test")
	first := tr.Get()
	if tr.Get() != first {
		t.Fatal("Get did not reuse the tracer of an unchanged provider")
	}
	old := otel.GetTracerProvider()
	defer otel.SetTracerProvider(old)
	otel.SetTracerProvider(sdktrace.NewTracerProvider())
	if tr.Get() == first {
		t.Fatal("Get kept the tracer of a replaced provider")
	}
}
