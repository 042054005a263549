// Package index is a cell's exact KV block index: for every block hash, the
// set of the cell's pods (up to 256) whose engines hold that block, and a
// query that tells, for a request's chain of block hashes, how deep each live
// pod's cached prefix goes.
//
// # Model
//
// A pod occupies a Slot (0..255) from Register until its sweep after Kill.
// A block's holders are a set of slots. Blocks are identified by chained
// hashes (package blockhash), so a block hash stands for its whole prefix.
//
// Contract: per pod, holders are prefix-closed. A caller stores a block for a
// pod only when the pod holds its parent, and when a pod drops a block the
// caller also removes that pod's descendants of it. Engines evict leaves
// first, and an engine cannot hit a block whose parent is gone, so this is
// what the engine can actually reuse; the event layer (package events)
// enforces it. Under the contract the pods holding chain[d] are a subset of
// those holding chain[d-1], so Match finds each pod's depth by bisecting for
// the depths where the set shrinks: about K log(N/K) lookups for K distinct
// depths in a chain of N blocks, independent of the number of pods, issued
// in about log N rounds whose lookups overlap in memory. Without the
// contract no sub-linear exact answer exists (a single hole anywhere changes
// it); Match then returns the bisection's estimate.
//
// # Layout
//
// 256 shards, the shard of a hash being the top 8 bits of hash*0x9E3779B97F4A7C15
// (Fibonacci hashing, because chained hashes are not uniform). Each shard is
// an open-addressing table of 16-byte slots: the key, and a holder word
// with up to seven slots inline; blocks with more holders point into the
// shard's overflow array of 32-byte HostBitmaps. Most blocks have one or a
// few holders, so a block costs 16 bytes divided by the table's load
// (between 3/8 and 3/4), instead of the ~100 bytes a Go map from hash to a
// four-word bitmap costs.
//
// Tables double when 3/4 full. Doubling rehashes the whole shard, one
// random write per block, which is as much again as the stores that filled
// it: on the trace replay an index growing from empty spends about 40% of
// its write throughput on it. Config.ExpectedBlocks (celld: the sum of the
// pods' kv_blocks) sizes the tables for the fleet's capacity at start
// instead and keeps them from shrinking below that, for about 32 bytes per
// expected block reserved up front (loadtest index --expected-blocks -1
// shows the difference).
//
// # The paged layout
//
// Config.Layout chooses between the layout above (LayoutBlock, this
// package's zero value) and LayoutPaged (celld's default, since it won on
// threshold throughput, bytes per block and query latency side by side),
// built for the query's memory rounds: a query
// over the block layout bisects over positions, one random lookup each, so
// the trace's p99 query takes 64 lookups in 8 dependent rounds, and on a
// machine where a dependent miss costs 160-260 ns that bounds its latency.
//
// The paged layout cuts a chain into pages of PageSize (32) positions,
// [32k, 32k+32), and keeps the blocks of a page together under a page key.
// A shard (chosen by the page key) has a directory, an open-addressing
// table of one 128-byte slot per page: the key, a pointer to the page's
// bucket, and a summary: the holder sets of the page's first block and of
// one block at its last offset, with that block's hash, copied from the
// bucket by every write that changes them. The
// bucket is one allocation of 16-byte entries (block hash, holder word with
// the block's offset in its page in byte 6, so up to six inline holders),
// holding the page's blocks of every chain through it; it doubles when full
// and halves when a quarter full, and a deleted entry takes the last one's
// place.
//
// Match bisects over pages instead of positions: every page key of the
// query is known in advance (the hash at each page start), a page read
// tells the holders of every position of the page, and the bisection only
// has to find the pages with drops (about K log4(N/32K) page reads in
// log4(N/32) + 1 rounds: on the full trace the p99 query takes 22 page
// reads in 5 rounds, against 61 lookups in 8). A page whose holders do not
// change inside it is answered by its directory slot alone (first and last
// position from the summary, as full bitmaps, so no overflow lookup); a
// page with a drop inside costs a second access, all of the bucket's lines
// loaded together, then a bisection over its positions in cache. A bucket
// whose entries are in offset order (a chain's blocks as they arrive) is
// flagged ordered: the block at offset o is entry o+1 or absent, for a
// query and for a write alike; only a bucket with branches or a removal in
// its middle is scanned, once per page read or write. So a block's place
// must be the same in every op for it.
//
// Departure from the proposal in the block-index issue ("pages keyed by the
// hash before the page"): a page is keyed by the hash of its own first
// block. Both stand for the same prefix, but chains that share a prefix
// diverge most often right after a page boundary (the trace's 512-token
// units are exactly one page at 16-token blocks), and keyed by the hash
// before it every continuation of a popular prefix would pile into one
// bucket; keyed by the first block, each continuation gets its own page,
// and page 0 needs no key for the empty prefix.
//
// What it costs the writers: a block's page cannot be found from its hash,
// so every Op carries its place in its chain (Op.Pos, Op.Page; Op.SetPlace
// fills both from a chain), and the paged layout counts an op without a
// consistent place as stale. The event applier tracks the place of every
// engine block in its chain forest, the learner keeps each learned block's
// page key, Dump and Export report each block's place, and a snapshot
// carries them (package snapshot) to restore into a paged index. Index.Store takes its chain to start
// at position 0 there, and Index.Remove, which gives hashes only, cannot
// remove from a paged index (use Apply). Every other contract holds as in
// the block layout (idempotent batched writes, prefix-closed holders,
// two-phase removal with the sweeper rebuilding directories and buckets,
// tiers, learned holdings); the reference-model tests of the index, the
// learner and the tiers run against both layouts, and FuzzPagedMatchesBlock
// drives the two with the same writes and compares every answer.
//
// Memory: a full page costs its 32 entries of 16 bytes, 1/32 of a
// 128-byte directory slot at the directory's load, and its bucket's slack.
// ExpectedBlocks reserves directory slots for full pages (about 8 bytes per
// expected block). On the full trace (loadtest index --layout both) that is
// 29.7 bytes per block against 45.4 for the block layout with tables
// reserved for the fleet.
//
// Measured on the 2-core development machine (shared with other sessions,
// load average 2 to 4), six runs of loadtest index --layout both, medians
// of the per-run ratios paged / block: threshold 2.58 (29.5M against
// 12.2M block-ops/s), query under load at each one's threshold p50 0.73
// and p99 0.42 (13.3 against 58 us; 7.7 to 110 us over the runs, the
// machine's preemptions included), idle query p50 0.70 and p99 0.66, each
// query's best of five runs p50 0.80 and p99 0.83 (1.85 and 4.9 us against
// 3.1 and 8.0 us), bytes per block 0.65. What bounds the idle p99 now: the
// p99 query still needs 5 dependent rounds, each a cache and TLB miss on a
// directory of tens of megabytes (160 to 260 ns here), and 22 page reads;
// pprof of BenchmarkMatchTrace puts 40% of Match on the directory slot's
// load and 22% on loading the query's own chain at the page starts (cold
// in the benchmark, hot in a cell that just hashed it), the rest in the
// bisection's CPU.
//
// # Concurrency
//
// Departure from the design page: each shard has its own lock for writers,
// but readers do not take it (both layouts: a paged query validates each
// page read against its shard's sequence, and reads it again, or under the
// lock after readSpinTime, when a writer moved it). A shard is a sequence lock: writers make its
// counter odd while they change the table, readers read the counter, read
// the table with atomic loads (plain MOVs on amd64) and retry if the counter
// was odd or moved. A read lock would make every lookup write the lock's
// reader count, so two cores querying would bounce that cache line (the
// design page measured 3.0M lookups/s on two threads against 4.6M on one).
// Tables are replaced, never resized in place, so a reader holding an old
// table reads valid memory and simply retries.
//
// The alive bitmap lives outside the shards and is updated with atomic
// And/Or. Every query intersects with it, so a killed pod drops out at once
// (phase 1). The index's single background goroutine, the sweeper, clears
// dead slots from every shard with bounded concurrency, deletes blocks nobody
// holds, frees the pod's tier map and only then frees the slot (phase 2).
//
// Writes are idempotent (storing a held block, removing an absent one,
// killing a dead pod change nothing) and batched: Apply groups ops by shard
// and takes each shard lock once.
//
// # Learned holdings
//
// A Learner (NewLearner) adds what a cell learns from its own routing:
//
//   - speculative blocks: when a request is routed to a pod, its blocks
//     count as the pod's (Speculate) until the engine's events store them
//     (the learner forgets them: they are exact now) or SpeculativeTTL
//     (2 s) passes. They close the window of a few hundred milliseconds
//     between a routing decision and the engine's first BlockStored, in
//     which a burst sharing a new prefix would otherwise spread over pods
//     that all prefill it;
//   - approximate blocks: a slot in approximate mode (SetApproximate: a pod
//     that publishes no events) holds a request's blocks from its first
//     token (Touch) until ApproximateTTL (120 s) passes without another
//     request using them, within a bound per slot, least recently used
//     dropped first. An exact write to such a slot means the pod publishes
//     now: the slot leaves approximate mode and its approximate blocks go.
//
// Each kind has the bound to itself: approximate blocks stand for the
// engine's cache, which evicts when a prefill ends and stores its blocks
// (Touch), not when a request is routed there; speculative blocks are
// prefills still running. Counted against one bound, the speculative
// blocks of the requests in flight to a busy pod (up to 3,040 of its 8,192
// on the cold workload at three times its rate) dropped stored blocks the
// engine still held (TestSpeculativeBlocksDoNotEvictStoredOnes).
//
// Where they live, and a departure from both obvious designs. A tier or TTL
// flag inside the holder word would make every holder word wider and every
// lookup decode it; a side structure merged at query time makes every query
// pay a second search (BenchmarkMatchOverlay: about twice BenchmarkMatch)
// whenever any learned block exists, which under load is always. Instead learned blocks are ordinary holder bits of
// their pod's slot, so Match reads them with no extra work at all, and the
// Learner keeps beside the index, per slot, which of the slot's bits are
// learned: a forest of the learned blocks (parent links, so that removing
// one removes its learned descendants), their expiry, and one recency list
// per kind ordered deepest first within an operation, so that the head of
// a list is a leaf and dropping from it keeps the holdings prefix-closed.
// Exact writes (Apply) for a slot take the slot's learner lock and are
// reconciled right after: a store confirms a learned block (it stays held,
// the learner lets go of it), a removal cuts the learned blocks below the
// removed one (the pod cannot reuse them). Because a learned block is never
// also exact, the learned blocks of a chain are a suffix of what the slot
// holds of it, which is why SplitLearned can find where a pod's exact depth
// ends by bisection. Likewise a block of a slot in approximate mode becomes
// approximate only with every learned block above it, so the approximate
// blocks of a chain come before its speculative ones, and StoredDepth finds
// what such a pod has stored (a request's first token stored it), short of
// the speculative blocks of prefills still running there, by bisection too.
// Idempotency and the prefix-closed contract hold for
// the union of exact and learned holdings; TestLearnerMatchesReferenceModel
// checks both against a naive model.
//
// Costs (BenchmarkMatch*, BenchmarkSpeculate, BenchmarkTouch): Match is
// unchanged, plus one bitmap test with a learner attached; SplitLearned
// costs a lock and a map lookup per pod asked about that has learned
// blocks; Speculate of a 512-block request that is new to the pod about
// 35 µs, of one it holds already a bisection; an exact Apply one uncontended
// lock per slot written. A learned block costs about 100 bytes in the
// learner besides its holder bit. Expire, which the cell calls every
// quarter TTL (at most every second), removes what ran out.
//
// # Tiers and memory
//
// A block a pod holds only on the GPU costs nothing beyond its holder bit.
// Blocks on other tiers (CPU, storage) are kept in a per-pod map that Match
// never reads; TierOf consults it for the winner's cache hint. The number of
// distinct blocks is capped by Config.MaxBlocks; past it new blocks are
// refused and counted (see Config). The event layer keeps each pod within
// its own bound and, when a store is refused, has the pods over their fair
// share of MaxBlocks evict (package events), so that one pod's flood does
// not refuse the others' blocks.
//
// # Held counts
//
// Held(slot) is how many blocks a live pod holds, on any tier, as its
// events told the index (learned holdings apart): with the pod's cache size
// it is how full the cache is, which routing weighs as cache pressure
// (cell/plugins, "Cache pressure"). Apply keeps one counter per slot from
// what its writes do to the holder bits (a store that sets the slot's bit
// adds one, a remove that clears it subtracts one; idempotent writes and
// refused stores change nothing), adding a batch's changes once per run of
// one pod's ops; Register and ClearPod reset it, and a slot that is not
// alive reads 0. The counters are packed, eight to a cache line, because a
// decision reads every pod's: one atomic load each. The reference test
// checks them against the reference model's held sets in both layouts.
package index
