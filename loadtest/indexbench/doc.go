// Package indexbench is the trace-replay benchmark of the cell's block index
// (cell/index), run side by side with a naive baseline in the same process.
//
// # Method
//
// It follows the published KV-indexer benchmark method:
//
//  1. Read a Mooncake trace (package trace). Split the requests at random
//     (Config.Seed, 42 by default) across Config.Workers engine workers (256).
//  2. Expand every hash id to 512 tokens (trace.AppendTokens; the partial
//     last block of a prompt is expanded to 512 tokens too, as the method
//     says) and hash them with cachekey/blockhash at the engine block size
//     (Config.BlockSize, 16), which must divide 512. A request's chain is the
//     chained hash of every block of its prompt.
//  3. Replay each worker's share through the engine model (package engine) with
//     a budget of Config.BlocksPerWorker blocks. At a request's arrival time
//     t the model reports its prefix hit, evicts (BlockRemoved) and stores
//     (BlockStored). There is no prefill delay: at one instant the request's
//     query comes first, then its Removed event, then its Stored event, and
//     requests keep their trace order. So the timeline is already merged.
//  4. Compress the timeline: at a nominal offered rate R (block-ops/s) the
//     whole trace would last D = BlockOps/R, and an op of trace time t is
//     due at t*D/T (T = the trace's span). A step replays the ops due within
//     min(Config.Window, D) into a fresh index. The rate is swept down in log
//     steps (Config.StepsPerDecade per decade), from Config.StartFactor times
//     the rate an unpaced pilot run reached, until a step passes; then
//     Config.Refine more steps bisect between that rate and the failing one
//     above it. Each step starts from a fresh, empty index built with the
//     capacity hint Config.ExpectedBlocks (by default the fleet's capacity,
//     Workers * BlocksPerWorker, as celld sizes its index from its pods'
//     kv_blocks): cell/index pre-sizes its tables for it and the naive map
//     is made with it. With --expected-blocks -1 the tables grow during
//     the step instead, as an index without the hint would after a restart.
//  5. A step passes when achieved >= Config.MinRatio (95%) of offered. The
//     threshold is the highest offered rate that passes. The run is valid when
//     no more than Config.MaxBacklog (5%) of the step's block-ops were still
//     queued at the end of its window. See FindThreshold.
//
// # What counts
//
// A block-op is one block in a Stored event, one block in a Removed event, or
// one block of a query's chain: BlockOps = StoredBlocks + RemovedBlocks +
// QueryBlocks. Events/s counts engine events (one Stored or Removed event of
// one pod, whatever its size); queries/s counts Match calls.
//
// # How it runs
//
// Everything (chains, ops, schedules) is built before timing. Events are
// applied by Config.Appliers goroutines (GOMAXPROCS by default), each owning
// the pods p with p % Appliers == its number, so every pod's events apply in
// order. An applier applies the events that are due in one Apply call, up to
// Config.MaxBatchOps ops (whole events), like a consumer draining its queue.
// Queries run on Config.Queriers goroutines of their own, and every Match is
// timed with time.Now around it (the timer's own cost, a few tens of
// nanoseconds, is reported as timer_overhead_ns and not subtracted). Right
// after every Match the querier also times a fixed CPU-only loop of about a
// microsecond (noise_p50_ns, noise_p99_ns): when the query p99 is far above
// that control's p99, the tail comes from the indexer, not from the machine.
// Each step also reports the fraction of time the appliers and queriers
// spent inside Apply and Match (applier_busy, querier_busy), and the report
// carries the machine's load average, because timings taken while other
// processes compete for the cores are noisy.
//
// At low rates a step covers only the first part of the trace (what falls
// due within the window), where the engines' caches are still filling; this
// favours the slower indexer, which is measured on the smaller state.
//
// # Memory
//
// bytes_per_block is the growth of the live heap (runtime.ReadMemStats after
// runtime.GC) caused by creating a fresh index and loading the final state
// of the replay (every worker's cached blocks at the end, parents first),
// divided by the number of distinct block hashes in that state. It includes
// what the capacity hint reserved up front: tables sized for the fleet's
// capacity but holding the smaller final state count in full.
//
// # Layouts
//
// Config.Layout (loadtest index --layout) picks cell/index's storage layout:
// block (the default), paged, or both, which benchmarks the block layout
// and then the paged one in the same run on the same workload (the report's
// top level is the block layout's, "paged" the paged one's, and
// "paged_vs_block" their ratios). Every op carries its place in its chain
// (index.Op Pos and Page), which the paged layout needs: stores take it
// from the request's chain, removals from the engine model
// (engine.Cache.SetPageSize), the final state from engine.Cache.PlaceOf.
// Verify checks every query of every cell/index layout.
//
// The idle pass also times each sampled query five times and reports the
// percentiles of each query's fastest run (idle_best_p50_ns, p99): on a
// shared machine a single run's p99 is mostly preemption. It reports the
// reads (block lookups, or page reads) and dependent rounds per query too,
// which do not depend on the machine.
//
// # Baseline
//
// The naive indexer (Naive) is one map from block hash to a slice of pod
// slots behind one sync.Mutex; its Match walks the chain pod by pod until
// the first miss. Both indexers sit behind the Indexer interface, and a
// sequential verification pass checks that they agree with each other and
// with the engine model's prefix hits on every query before timing starts.
package indexbench
