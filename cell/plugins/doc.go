// Package plugins holds the in-tree plug-ins of the cell's routing
// pipeline, one concept per file: preparers (token ids, block hashes,
// prefix match, session and hash keys), filters (healthy, role, concurrency
// cap, busy threshold), scorers (KV cost, cache affinity, least load,
// round-robin, session affinity, locality, route-template affinity), the
// engine-load plug-ins (the engine-load preparer and the
// engine-active-blocks, kv-usage, queue-depth and lora-affinity scorers,
// fed by the engines' own metrics) and pickers (max score, softmax,
// round-robin, sticky session, consistent hash with bounded load). Register
// adds all their factories to a registry; it is the one place that says
// what a cell can load.
//
// # Engine load
//
// The router's active blocks (cell/load) count only what it routed. The
// engine-load preparer puts the engines' own metrics (cell/enginemetrics)
// in a slot, and engine-active-blocks adds to kv-cost's decode term the
// part of the engine's load the router did not route, so that with both
// at weight 1 a pod's cost is
//
//	overlap_weight * prefill_blocks + active_blocks
//	  + max(0, engine_blocks - router's active blocks when the engine was scraped)
//
// (see enginemetrics' doc for why this form and not max(active, engine)). The default profile has
// both, and lora-affinity at engine_metrics.lora_affinity_weight blocks,
// when engine_metrics is enabled (WithEngineLoad). They are safe on by
// default because a pod without a fresh scrape scores as if they were
// absent: engine-active-blocks adds nothing, lora-affinity prefers
// nothing, and kv-usage and queue-depth (for profiles that weigh
// normalised scorers) use the router's own counts.
package plugins
