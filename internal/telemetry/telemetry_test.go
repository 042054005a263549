package telemetry_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/cellrouter/cellrouter/internal/telemetry"
	"github.com/cellrouter/cellrouter/internal/telemetry/otlptest"
)

// keepGlobalProvider restores the process's global tracer provider when
// the test ends.
func keepGlobalProvider(t *testing.T) {
	old := otel.GetTracerProvider()
	t.Cleanup(func() { otel.SetTracerProvider(old) })
}

func TestSetupWithoutEndpointInstallsNoExporter(t *testing.T) {
	keepGlobalProvider(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	if telemetry.Enabled() {
		t.Fatal("Enabled() with no endpoint")
	}
	before := otel.GetTracerProvider()
	tel, err := telemetry.Setup(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := tel.Install(context.Background(), telemetry.Identity{Service: "test"}); err != nil {
		t.Fatal(err)
	}
	if otel.GetTracerProvider() != before {
		t.Fatal("Install set a provider without an endpoint")
	}
	if tp, err := tel.Provider(context.Background(), telemetry.Identity{Service: "test"}); err != nil || tp != before {
		t.Fatalf("Provider without an endpoint = %v, %v; want the global provider", tp, err)
	}
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://127.0.0.1:4317")
	if !telemetry.Enabled() {
		t.Fatal("Enabled() false with a traces endpoint")
	}
}

// TestSetupWithEndpointStarts is the regression test of the daemons that
// exited at start whenever an endpoint was set: the resource merged the
// SDK's default (one semantic-conventions schema) with attributes made
// under another ("conflicting Schema URL").
func TestSetupWithEndpointStarts(t *testing.T) {
	keepGlobalProvider(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1") // nothing listens; no span is sent
	tel, err := telemetry.Setup(context.Background())
	if err != nil {
		t.Fatalf("Setup with an endpoint: %v", err)
	}
	if err := tel.Install(context.Background(), telemetry.Identity{Service: "celld", Instance: "cell-a", Cell: "cell-a"}); err != nil {
		t.Fatalf("Install with an endpoint: %v", err)
	}
	if _, ok := otel.GetTracerProvider().(*sdktrace.TracerProvider); !ok {
		t.Fatalf("global provider is %T, want the SDK's", otel.GetTracerProvider())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tel.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := tel.Provider(ctx, telemetry.Identity{Service: "late"}); err == nil {
		t.Fatal("Provider after Shutdown did not fail")
	}
}

func TestResourceNamesThePartAndHonoursTheEnvironment(t *testing.T) {
	id := telemetry.Identity{Service: "celld", Instance: "cell-7", Cell: "cell-7"}
	tests := []struct {
		name          string
		serviceName   string // OTEL_SERVICE_NAME
		resourceAttrs string // OTEL_RESOURCE_ATTRIBUTES
		want          map[string]string
		wantErr       string
	}{
		{name: "identity", want: map[string]string{"service.name": "celld", "service.instance.id": "cell-7", "cellrouter.cell": "cell-7"}},
		{name: "service name from the environment", serviceName: "edge-cells",
			want: map[string]string{"service.name": "edge-cells", "service.instance.id": "cell-7"}},
		{name: "resource attributes from the environment", resourceAttrs: "deployment.environment.name=prod,service.instance.id=pod-x",
			want: map[string]string{"service.name": "celld", "service.instance.id": "pod-x", "deployment.environment.name": "prod", "cellrouter.cell": "cell-7"}},
		{name: "OTEL_SERVICE_NAME wins over OTEL_RESOURCE_ATTRIBUTES", serviceName: "a", resourceAttrs: "service.name=b",
			want: map[string]string{"service.name": "a"}},
		{name: "malformed attributes", resourceAttrs: "no-equals-sign", wantErr: "OTEL_RESOURCE_ATTRIBUTES"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("OTEL_SERVICE_NAME", tt.serviceName)
			t.Setenv("OTEL_RESOURCE_ATTRIBUTES", tt.resourceAttrs)
			res, err := telemetry.Resource(context.Background(), id)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got error %v, want one naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, kv := range res.Attributes() {
				got[string(kv.Key)] = kv.Value.String()
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q (all: %v)", k, got[k], v, got)
				}
			}
			if got["telemetry.sdk.name"] != "opentelemetry" || got["host.name"] == "" {
				t.Errorf("missing the SDK's or the host's attributes: %v", got)
			}
			// The one schema is the SDK's, so merging with the SDK's own
			// resources (as the provider does) cannot conflict.
			if got, want := res.SchemaURL(), resource.Default().SchemaURL(); got != want {
				t.Errorf("schema URL %q, want the SDK's %q", got, want)
			}
			if _, err := resource.Merge(resource.Default(), res); err != nil {
				t.Errorf("merge with the SDK default: %v", err)
			}
		})
	}
}

// TestProvidersExportThroughOneEndpoint checks the path a process hosting
// several parts takes: each part's provider exports its spans under its
// own resource, through the one exporter, to a real OTLP/gRPC endpoint.
func TestProvidersExportThroughOneEndpoint(t *testing.T) {
	keepGlobalProvider(t)
	rcv := otlptest.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.Endpoint())
	ctx := context.Background()
	tel, err := telemetry.Setup(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ids := []telemetry.Identity{
		{Service: "celld", Instance: "cell-0", Cell: "cell-0"},
		{Service: "celld", Instance: "cell-1", Cell: "cell-1"},
	}
	for _, id := range ids {
		tp, err := tel.Provider(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		_, span := tp.Tracer("test").Start(ctx, "work of "+id.Instance)
		span.End()
	}
	if err := tel.Install(ctx, telemetry.Identity{Service: "globald", Instance: "global/x"}); err != nil {
		t.Fatal(err)
	}
	_, span := otel.Tracer("test").Start(ctx, "work of global/x")
	span.End()
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := tel.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range rcv.Spans() {
		got[s.Name] = s.Service() + " " + s.Instance() + " " + s.Resource["cellrouter.cell"]
	}
	want := map[string]string{
		"work of cell-0":   "celld cell-0 cell-0",
		"work of cell-1":   "celld cell-1 cell-1",
		"work of global/x": "globald global/x ",
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("span %q exported as %q, want %q (all: %v)", name, got[name], w, got)
		}
	}
}

func TestTracerFollowsTheProvider(t *testing.T) {
	keepGlobalProvider(t)
	tr := telemetry.NewTracer("test", nil)
	first := tr.Get()
	if tr.Get() != first {
		t.Fatal("Get did not reuse the tracer of an unchanged provider")
	}
	otel.SetTracerProvider(sdktrace.NewTracerProvider())
	if tr.Get() == first {
		t.Fatal("Get kept the tracer of a replaced provider")
	}
	own := sdktrace.NewTracerProvider()
	fixed := telemetry.NewTracer("test", own)
	before := fixed.Get()
	otel.SetTracerProvider(sdktrace.NewTracerProvider())
	if fixed.Get() != before {
		t.Fatal("a tracer of its own provider followed the global one")
	}
}
