// Package workload generates request traces of a given shape, as the
// records package trace reads from a Mooncake file, so that every benchmark
// that replays a trace (loadtest hierarchy, loadtest compare) can replay
// them too.
//
// Cold (loadtest hierarchy --workload cold) is traffic unlike the committed
// conversation trace, whose requests almost all share one first block (a
// system prompt): there is no shared prefix at all, more than half of the
// requests start with a block no earlier request had, and the reuse there
// is comes from multi-turn conversations whose follow-ups arrive within
// seconds, each extending the last turn's prompt. Its best reachable reuse
// (every earlier prompt cached) is about 0.6. Measure describes a trace by
// those figures (the share of cold first blocks, the reachable reuse with
// an unbounded cache, the gaps between a conversation's turns), so a test
// can check the generator keeps its shape.
//
// Generators are pure and deterministic: the same size and seed give the
// same records. Hash ids of different generators never collide (each owns
// a range above 1<<40; a trace file's ids are small).
package workload
