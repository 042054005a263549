// Package ingestbench benchmarks the cell's event ingest path end to end:
// engine KV events published over loopback ZMQ in vLLM's wire protocol,
// received by one zmqsub.Subscriber, decoded, and applied to a real
// events.Applier over a real index.Index.
//
// # Workload
//
// The Mooncake trace's requests are split at random across Pods engine pods
// and each pod's share runs through the loadtest/engine prefix-cache model
// (BlocksPerPod blocks of EngineBlockSize tokens, LRU over leaves). Hash ids
// are expanded to token ids (trace.AppendTokens), so every BlockStored event
// carries real token ids, its block hashes and its parent hash, and the
// applier rehashes the tokens into router blocks as it does for real
// engines. Only a prompt's full blocks are cached, as in vLLM; decode-phase
// blocks are not modelled (the trace names no output tokens).
//
// Events are grouped into batches the way vLLM publishes them: one batch per
// engine step. Each pod is modelled as a backlogged engine doing chunked
// prefill: a step computes at most StepTokens new prompt tokens (vLLM's
// max_num_batched_tokens, 8192 by default), taken from its queued requests
// in arrival order, so a step covers the chunk of one request or the tails
// and heads of several. For each request chunk in a step the batch holds the
// evictions that made room (BlockRemoved; one event per evicted block, as
// vLLM's block pool emits them, or one per chunk with RemovalsPerChunk) and
// then one BlockStored event with the chunk's new blocks. Every payload is
// encoded with vllmwire (array form by default) before anything is timed.
//
// # Measurement
//
// One vllmpub.Publisher per pod (its PUB socket and replay socket bound on
// loopback) is dialed by the Subscriber (zmqsub's dial mode: one socket and
// goroutine per pod). After every publisher sees the subscription, one
// goroutine per pod publishes its pre-encoded payloads back to back
// (saturation) or paced at an offered rate. A wrapper around the applier
// records when each (pod, seq) batch was applied: from then on it is
// visible to index queries. Lag is apply time minus the time the publisher
// handed the batch to its socket. Throughput is the block events the
// applier counted (engine blocks stored and removed) over the time from the
// first publish to the last batch applied.
//
// At saturation the publishers queue everything at once, so lag there is
// mostly queueing; Run therefore also replays the workload paced at a
// fraction of the measured maximum (PacedFraction) and reports that lag.
//
// # Verification
//
// Each run must apply every batch (none dropped, no decode error, no gap).
// With Verify, the same payloads are also decoded and applied directly to a
// reference applier and index, and the two indexes are compared block by
// block, holders mapped to pod ids.
package ingestbench
