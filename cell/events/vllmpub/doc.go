// Package vllmpub is a KV-event publisher that speaks the vLLM protocol on
// the wire, for tests, the engine simulator and the ingest benchmark.
//
// # What it does
//
// A Publisher owns two ZMQ sockets, as a vLLM engine does:
//
//   - a PUB socket that sends every batch as three frames [topic, seq,
//     payload], where the topic is kv@<pod>@<model>, seq an 8-byte big-endian
//     counter from 0 at each start, and payload the msgpack EventBatch in the
//     configured form (package vllmwire encodes it). The socket binds its
//     endpoint, or connects to it when the subscriber binds (Config.Connect);
//   - an optional ROUTER replay socket that serves the last BufferSize
//     batches (vLLM keeps 10,000): a client sends the 8-byte start seq
//     (after an empty delimiter frame, as a REQ socket or a DEALER emulating
//     one does; a bare 8-byte frame is accepted too) and receives [seq,
//     payload] for every buffered batch from there on, then the end marker
//     seq = vllmwire.ReplayEndSeq with an empty payload. Replies carry the
//     delimiter when the request did.
//
// A connecting PUB socket whose subscriber goes away (a restarted cell) is
// redialed after a pause, as libzmq's reconnect interval does; zmq4's own
// immediate redial can attach to the dying listener of the old subscriber.
//
// Config.Skip numbers and buffers a batch without sending it, which is how
// tests and the simulator inject lost messages that only a replay repairs.
// Closing a Publisher and starting a new one on the same endpoints is an
// engine restart: its sequence starts again at 0 with an empty buffer.
//
// # Concurrency
//
// Publish may be called from several goroutines; batches are numbered,
// buffered and queued on the socket in one critical section, so sequence
// order and send order agree. Sending never blocks on a slow subscriber (the
// PUB socket queues). The replay socket is served by one goroutine the
// Publisher owns; Close stops it and waits.
package vllmpub
