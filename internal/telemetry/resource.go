package telemetry

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// CellKey is the attribute that names a cell: on a cell's resource, and on
// the cell's spans when one process hosts several cells.
const CellKey = attribute.Key("cellrouter.cell")

// Identity names a part that emits spans.
type Identity struct {
	// Service is the default service.name: "celld" or "globald".
	Service string
	// Instance is service.instance.id: the cell id, or the global
	// replica's node name. Empty: none.
	Instance string
	// Cell is the cellrouter.cell resource attribute, set for cells.
	// Empty: none.
	Cell string
}

// Resource describes the part id names to a tracing backend: the SDK's own
// attributes (telemetry.sdk.*) and host.name, then id's, then whatever
// OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME say, which win over id.
//
// Only the SDK's detectors carry a schema URL (the semantic conventions
// the SDK is built on); the attributes added here and from the environment
// are schemaless, so the merged resource can never hold two schema URLs,
// whatever version of the SDK the module uses.
func Resource(ctx context.Context, id Identity) (*resource.Resource, error) {
	attrs := []attribute.KeyValue{semconv.ServiceName(id.Service)}
	if id.Instance != "" {
		attrs = append(attrs, semconv.ServiceInstanceID(id.Instance))
	}
	if id.Cell != "" {
		attrs = append(attrs, CellKey.String(id.Cell))
	}
	res, err := resource.New(ctx,
		resource.WithTelemetrySDK(),
		resource.WithHost(),
		resource.WithAttributes(attrs...),
		resource.WithFromEnv(),
	)
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource (OTEL_RESOURCE_ATTRIBUTES, OTEL_SERVICE_NAME): %w", err)
	}
	return res, nil
}
