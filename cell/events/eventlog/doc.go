// Package eventlog reads and writes recorded KV event logs: a file of
// engine messages, each the pod, model and sequence number of a batch and its
// vLLM msgpack EventBatch payload, in publishing order. Tools record logs
// from the trace replay's engine model (cmd/loadtest eventlog) and tests
// replay them through any transport to prove that replays, duplicates and
// two transports at once leave the index the same.
//
// Format: the magic "CRKVLOG1", then records of
//
//	uvarint len(pod) | pod | uvarint len(model) | model | uvarint seq | uvarint len(payload) | payload
//
// until the end of the file.
package eventlog
