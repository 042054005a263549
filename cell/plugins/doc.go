// Package plugins holds the in-tree plug-ins of the cell's routing
// pipeline, one concept per file: preparers (token ids, block hashes,
// prefix match, session and hash keys), filters (healthy, role, concurrency
// cap, busy threshold), scorers (KV cost, cache affinity, least load,
// round-robin, session affinity, locality, route-template affinity) and
// pickers (max score, softmax, round-robin, sticky session, consistent hash
// with bounded load). Register adds all their factories to a registry; it is
// the one place that says what a cell can load.
package plugins
