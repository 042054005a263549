// Package eventsv1 is the generated Go code of cellrouter.events.v1
// (events.proto): the EventPublisher gRPC service through which publisher
// sidecars stream engine KV-cache events to a cell. The server side lives in
// cell/events/grpcpub. Regenerate with api/generate.sh; do not edit the
// *.pb.go files.
package eventsv1
