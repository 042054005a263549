// Package restartbench measures what a cell's restart costs with the
// index state of a whole trace: loading a snapshot (package cell/snapshot)
// against starting empty and applying the whole event history again.
//
// The parent (Run) turns the trace into the KV events of a fleet
// (package eventgen), applies them to an index and an applier as celld
// does, writes the snapshot (timed, several times) and an event log of the
// same events, then starts child processes of the same binary, alternating
// the two ways: a "load" child reads, checks and restores the snapshot
// into a fresh index and applier; a "replay" child decodes the event log
// and applies every batch to a fresh index and applier. Each child reports
// its wall time to ready, the blocks it holds (checked against the
// parent's), its peak resident memory (VmHWM) and its Go heap in use at
// the end. Child processes, one at a time, give each measurement a fresh
// heap and its own peak. The figures are medians over the runs.
//
// What it does not include: the listeners and transports of a real celld
// (milliseconds), the network of a JetStream replay, and the catch-up of
// events after the snapshot (those are the same in both ways). Starting
// empty is the best case of that way: in production the engines' replay
// buffers (10,000 batches in vLLM) hold far less than the whole history,
// so an empty start loses the rest instead of taking longer.
package restartbench
