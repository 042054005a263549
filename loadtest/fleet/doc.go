// Package fleet starts a whole local cellrouter in one process: simulated
// engine pods (package enginesim), a cell per group of pods dialling their
// KV event sockets, and a global router the cells join over gossip. It is
// what `globald --demo` runs, and what tests and benchmarks use to get a
// realistic two-tier system on 127.0.0.1 with no external service.
//
// Pods, cells and the global tier share one tokenizer.json and chat
// template (by default the demo tokenizer of package cachekey/tokenizer), so a
// text prompt or chat is hashed into the same blocks at every tier: the
// pods cache them, the cells index them from the pods' KV events, and the
// global tier finds them in the cells' summaries. Config says whether the
// cells and the global tier load the tokenizer or ask the tier below's
// /tokenize.
package fleet
