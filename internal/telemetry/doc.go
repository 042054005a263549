// Package telemetry sets up OpenTelemetry tracing for the daemons the
// standard way: when OTEL_EXPORTER_OTLP_ENDPOINT (or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set, spans are exported over
// OTLP/gRPC, configured by the exporter's standard OTEL_* variables;
// otherwise no provider is installed and tracing costs nothing. W3C trace
// context (traceparent, tracestate) and baggage are the propagation format
// on every HTTP and gRPC hop.
//
// Each part that emits spans names itself with an Identity: the daemon
// (service.name "celld" or "globald"), its instance (the cell id, or the
// global replica's node name) and, for a cell, the cell id again as the
// resource attribute cellrouter.cell. The standard OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES variables override those defaults. A process
// that hosts several parts (globald --demo) gives each its own provider
// with Telemetry.Provider, all exporting through one OTLP connection, so a
// backend tells the cells apart.
//
// The global tier shares this package with the cell (one setup for both
// daemons); it depends on nothing else of the cell.
package telemetry
