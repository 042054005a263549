// Package natsjs is the NATS JetStream transport of the cell's event layer:
// engines (or a sidecar beside them) publish their KV-cache event batches to
// a JetStream stream, and a Consumer feeds them to an events.Sink (the
// cell's events.Applier) through a durable consumer. Fleets that already run
// a NATS fabric use it instead of one ZMQ socket per pod.
//
// # Wire format
//
// One NATS message carries one engine batch:
//
//	subject  <prefix>.<pod token>           prefix default "kv.events"
//	headers  Kv-Pod: <pod id>               required
//	         Kv-Model: <served model>       optional; absent = unknown
//	         Kv-Seq: <decimal uint64>       required
//	         Kv-Dp-Rank: <decimal 0..65535> optional
//	         Nats-Msg-Id: <id>              optional; JetStream dedup
//	payload  the vLLM msgpack EventBatch    exactly what vllmwire.DecodePayload reads
//
// The headers are authoritative; the subject only routes. The pod token is
// the pod id with every byte outside [A-Za-z0-9_-] written as %XX (uppercase
// hex): "10.0.0.5:8000" publishes on kv.events.10%2E0%2E0%2E5%3A8000. NATS
// reserves '.', '*', '>' and whitespace in subjects; the escape is
// injective, so two pods never share a subject (PodToken, Subject).
//
// Kv-Seq counts from 0 when the publisher starts and increases by one per
// batch, separately for each publisher identity: a pod, or one data-parallel
// rank of a pod (the applier's holder, "pod#rank"), as vLLM's ZMQ publisher
// numbers each engine's batches. Kv-Dp-Rank, when present, must agree with
// the payload's data_parallel_rank if that is present too; either one sets
// the batch's rank. Header names are case-sensitive (they are their own
// canonical MIME forms). Publisher and NewMsg produce this format.
//
// # Delivery and order
//
// The Consumer uses one durable pull consumer (explicit acks, filter
// <prefix>.>) and handles messages one at a time, in delivery order, on the
// goroutine that called Run; each message is acknowledged only after the
// sink's ApplyBatch returned. The default MaxAckPending of 1 makes the
// server deliver the stream strictly in order even across redeliveries: it
// cannot deliver message n+1 before message n is settled. The cost is one
// round trip per message (see the benchmark); the gain is that a publisher's
// batches reach the applier in the order they were stored, so a Kv-Seq gap
// has exactly one cause: the batches never reached the stream. A larger
// MaxAckPending is allowed (more throughput); a redelivered message can then
// arrive after later ones, which the consumer handles as described under
// gaps.
//
// # Outcomes
//
//   - Applied, or dropped by the applier as a duplicate (a redelivery of a
//     batch applied before its ack was lost, or a restart of Run over the
//     same applier): Ack. The applier's per-holder sequence tracking is what
//     makes redelivery idempotent.
//   - Headers that ParseHeaders rejects, or a payload that does not decode:
//     counted under ReasonHeader or vllmwire.Reason's label, logged at a
//     bounded rate, and Term: poison is never redelivered.
//   - Dropped by the applier for good (invalid, unknown model, no slot):
//     counted under the events.DropReason label, logged, Term.
//   - A Kv-Seq gap (events.GapError): JetStream is durable, so the missing
//     batches are not somewhere waiting: the publisher lost them before
//     publishing, or the stream's limits discarded them unread. Re-reading
//     the stream cannot help; the consumer gives the gap up at once
//     (GapGiver: the applier clears the holder, marks it healthy again and
//     takes this batch as the new baseline) and applies the batch. The pod
//     is DEGRADED only between the two calls. With MaxAckPending above 1 the
//     message is first sent back GapRetries times (GapDelay apart) in case
//     the missing batches are redeliveries still to come; the holder's later
//     messages are sent back too and may come back in another order, so
//     after such a gap the holder's view can lag (the index under-reports)
//     until its blocks are stored again. Keep MaxAckPending at 1 unless the
//     throughput is needed.
//   - The sink failed otherwise (not a drop): Nak after NakDelay, up to the
//     server's MaxDeliver.
//   - Run's context ended: Nak at once, so the next instance gets it without
//     waiting AckWait.
//
// # Restarts
//
// A celld process keeps its index in memory, so a restarted celld starts
// empty. With Config.Replay (the default) its first attach deletes and
// recreates the durable consumer, which then delivers everything the stream
// retains (StreamMaxAge, StreamMaxBytes): the index is rebuilt from history.
// Batches older than the retention are gone; the applier takes a holder's
// first batch as its baseline and drops stores whose parent it never saw,
// so the index under-reports (safe) rather than invents. Within one process,
// the durable consumer is what survives: when the connection, the server or
// the consumer fails, Run attaches again and resumes after the last
// acknowledged message, and a Consumer created with Replay false resumes
// too (for a sink that still holds what was acknowledged). A message applied
// whose ack was lost comes again and is dropped as a duplicate. The durable
// name must be unique per celld instance.
//
// A celld restored from a snapshot (package cell/snapshot) knows the stream
// sequence it had handled when the snapshot was taken (Position, with
// MaxAckPending 1) and calls ResumeAfter: the first attach recreates the
// durable consumer to deliver from the next sequence, neither from the
// beginning (the snapshot has that) nor from the durable's ack floor
// (messages acknowledged after the snapshot are not in it).
//
// # Readiness
//
// Ready closes once the consumer is attached and has caught up: a handled
// message reported no further pending messages, or the server reports
// nothing pending and nothing unacknowledged for the consumer.
package natsjs
