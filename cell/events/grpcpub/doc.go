// Package grpcpub is the gRPC transport for engine KV events: the server
// side of cellrouter.events.v1.EventPublisher, which publisher sidecars use
// to stream an engine's KV-cache event batches to its cell.
//
// Each PublishRequest is validated against Limits and converted to an
// events.Batch (Convert), whose slices alias the request's, so a batch costs
// no copying. The Server orders batches per publisher (a pod, or a pod and
// data-parallel rank) through a Sequencer before handing them to an
// events.Sink:
//
//   - the next event_id (or the first one seen) is applied;
//   - an event_id already processed is dropped and acknowledged (duplicate);
//   - an event_id beyond the next is not applied, and the response asks the
//     publisher to resend from the first missing one (gap);
//   - an event_id back at 0 (or a new publisher_epoch) means the engine
//     restarted: the first batch of the new run is delivered with an
//     AllBlocksCleared event in front of its own events.
//
// Before a request is sequenced, Config.Authorize (the cell: the pods its
// caller's key or certificate names) may refuse its pod, which ends the
// stream with PermissionDenied, and Config.Admits (the cell: its
// configured pods) may reject it as an unknown pod, before the server
// keeps any state for the pod.
//
// Every request gets exactly one response, in order. Invalid requests and
// batches the sink refuses are dropped with a reason label, counted, and
// their event_id counts as processed, so one bad batch does not stall a
// publisher. A Server is safe for concurrent streams; the batches of one
// publisher reach the sink one at a time, in order, even across streams.
//
// The Sequencer here is deliberately small: package events has its own
// SeqTracker, and the two can be merged once both settle.
package grpcpub
