// Package otlptest is an in-process OTLP/gRPC trace receiver for tests: a
// real OTLP endpoint (the collector's TraceService.Export) on 127.0.0.1:0
// that keeps what exporters send, flattened into spans that carry their
// resource, plus helpers to select one trace and print it as a tree.
//
// Point a process's exporter at it with OTEL_EXPORTER_OTLP_ENDPOINT set to
// Receiver.Endpoint (plain-text gRPC, as the http:// scheme says).
package otlptest
