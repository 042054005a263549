package plugins

// DefaultPressureWeight is kv-cost's pressure_weight when a profile does
// not set it, and the default of the cell's routing.kv_pressure_weight.
//
// # Cache pressure
//
// The reference cost, overlap_weight * prefill_blocks + active_blocks,
// counts what a pod saves this request and what it makes it wait, but not
// what storing the request's new blocks costs the requests that come
// after: on a pod whose cache is full every stored block evicts a cached
// one, and the prefix it belonged to (another conversation's next turn) is
// prefilled again later. So at the trace's own pace, where load is nearly
// zero, the reference cost sent every new conversation to an idle pod that
// already held the system prompt: a few pods took them all and evicted
// each other's conversations while most pods stayed empty (42 of 256 pods
// served everything in loadtest hierarchy's flat router).
//
// kv-cost therefore adds pressure_weight times the blocks the pod is
// expected to evict (pipeline.Candidate.Evicts: the blocks it lacks times
// its fullness, HeldBlocks / TotalBlocks, from the index's per-pod count
// and the pod's kv_blocks). A pod of unknown size pays none. On full pods
// the term is pressure_weight * prefill_blocks, a stronger overlap weight:
// a follow-up stays with its prefix, as copying it evicts as much again.
// On pods with room it prefers the emptier cache for a new prefix, long
// before any pod evicts.
//
// The default, 1, was chosen by measurement (loadtest hierarchy, README
// "hierarchy"): against 0 it raised the flat router's reuse on the
// conversation trace at 20 ms a token from 0.232 to 0.316 (no block
// evicted instead of 1.9M) and on the agents workload at 400 ms from 0.555
// to 0.653; 0.5 gave within a few tenths of a percent of the same.
const DefaultPressureWeight = 1.0
