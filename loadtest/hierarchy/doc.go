// Package hierarchy is the quality benchmark of the global tier: it replays
// a Mooncake trace through hierarchical routing (cells of pods under the
// global tier) and through one flat exact index over the same pods, in the
// same process, and compares the prefix reuse they realise, the probes the
// hierarchy spends, and how evenly each spreads the requests.
//
// # Method
//
//  1. Read the trace (loadtest/trace), expand every hash id to 512 tokens
//     (trace.AppendTokens, as the index benchmark does) and hash the prompt
//     with cell/blockhash at Config.BlockSize (16), seeded with the model.
//  2. Two fleets of Cells*PodsPerCell pods (8x32 = 256), each pod an engine
//     cache model (loadtest/engine) of Config.BlocksPerPod blocks (16,384,
//     small enough that pods evict: the report counts evicted blocks). Every
//     admission's removed and stored blocks are applied to the exact index
//     (cell/index) of the pod's pool as ops, as the pod's KV events would be.
//  3. Flat: one index over all pods and one selector of the cell's default
//     profile (plugins.DefaultProfile, built with pipeline and plugins as the
//     cell builds it) picks the pod.
//  4. Hierarchical: one index and one selector per cell. Every
//     Config.SummaryInterval of trace time, each cell rebuilds its summary
//     from every block it holds (gossip.Builder with the block's depth in
//     its chain) and publishes it (gossip.Publisher); the global tier only
//     sees the latest generation, so summaries lag the truth. Per request:
//     global.Search over the summaries; on the cold path (no summary knows
//     the first block) the first of its two hashed choices takes the
//     request unprobed, as global.Router does; otherwise each candidate is
//     probed by running its selector in-process (what CellService.Route
//     does, changing nothing) and global.Choose orders the answers; then the
//     chosen cell's selector decides again (the hand-off) and its pick
//     serves the request. A cell's gossiped load names its least loaded
//     pods (gossip.Load.Lightest, as celld's does), and until the next
//     generation the global tier counts the load its hand-offs added to
//     each cell, from the probe's pick (global.CellLoad.Routed), as
//     global.Router does. With Config.LoadInterval (--load-interval) the
//     cells also announce their load between generations.
//  5. A request's realised reuse is the engine model's prefix hit on the
//     pod that served it (Admission.Matched); reuse is matched blocks over
//     prompt blocks, and reuse_loss is (flat - hier) / flat.
//
// Both routers replay the requests in timestamp order with the same load
// model (load.go): a request holds its pod for output_length *
// DecodeMsPerToken of trace time, counting one active request and its
// prompt plus output blocks. Every selector pass for request i draws its
// randomness from a generator seeded (Seed, i), so with one cell the
// hierarchical router makes exactly the flat router's decisions (a test
// checks it).
//
// # Seeds
//
// One replay is a chaotic system: a different tie-break early on sends the
// caches of both routers down different paths, and one seed's flat reuse
// moves by up to a percent against another's (three flat replays at 2,000
// ms a token differed from seed 42's by 0.3 to 1.4%). That is the size of
// the 1% target, so every level replays Config.Seeds seeds (3 by default,
// --seeds; two at a time on two cores), each seed driving both routers, and
// pools their matched blocks: reuse_loss is the pooled figure, and
// seed_runs gives each seed's. The other figures are the first seed's.
//
// # Text prompts
//
// With Config.Prompt "text" or "chat" (loadtest hierarchy --prompt chat),
// requests carry text instead of token ids: every hash id becomes about
// 512 tokens of English words (trace.AppendText), concatenated into a
// completion prompt or made one chat message each (system first, then
// user and assistant in turn). The engine models cache the blocks of the
// engine's tokenization (package cell/tokenizer with Config.TokenizerJSON,
// by default the demo tokenizer, and its chat template); the global tier
// tokenizes with global.Tokenizer (its segment cache included) to search
// the summaries, and its probes carry its token ids, as globald's do; the
// serving cell's selector tokenizes the text again at the hand-off, as
// celld's Tokens preparer does. The report counts the requests whose chain
// at the global tier or at the serving cell differs from the engine's
// (tokenize.mismatches, which must be 0) and times the global tier's
// tokenization.
//
// # Load sweep
//
// With Config.Loads (loadtest hierarchy --loads 20,400,2000,5000, the
// command's default run) the replay runs once per load level, each with
// fresh fleets: the level is DecodeMsPerToken, from the trace's own pace
// (20 ms a token: about 23 requests running over 256 pods) to 5,000 ms
// (about 5,800 running, past the 95% busy threshold of the favourite
// cell's pods). Every level reports the same fields as a single run, in
// Report.Levels; the top-level fields are the level at DecodeMsPerToken.
// Besides reuse and probes, a level counts the requests routed to a pod
// that was already busy (queued_flat, queued_hier: they would wait; the
// busy filter is soft, so nothing is refused) and a TTFT estimate from one
// model for both routers (outcome.go: the blocks the pod did not hold,
// PrefillMsPerBlock each, shared with the requests running on the pod).
//
// # Agents
//
// Config.Workload "agents" (--workload agents) replaces the trace with
// generated agent sessions (AgentsTrace): two dozen long system prompts of
// Zipf popularity and tool-call loops whose turns follow each other within
// seconds, each extending the last by one block of 512 tokens. It stresses
// what the conversation trace does not: a hot shared prefix several
// thousand tokens long, and follow-ups faster than the summaries refresh.
//
// # Fleet scale
//
// RunScale (--scale) is a lighter model for 64 to 1,024 cells and more (see
// ScaleConfig): many tenants replay the trace with their own cache salts
// and time offsets; each cell is one engine cache; the global tier is the
// real one (summaries through the gossip codec, gossip.Bank,
// global.SearchDepths, global.Choose over exact probe answers); the flat
// reference is an exact oracle, the deepest prefix any cell holds at that
// moment. It reports reuse loss against the oracle, probes, summary and
// gossip bytes, the decision's p50/p99 without probes (and the linear
// search's on a sample, side by side), and the global tier's state size.
//
// A false probe is a probed cell whose exact best match (the deepest prefix
// any of its pods holds, from the probe's index match) is zero or below the
// summary's estimate. Gossip bytes are counted with the real codec: per
// cell and generation, the header plus the catch-up message a replica one
// generation behind would receive (a roaring-bitmap delta, or a snapshot
// for the first generation and changes of filter shape).
package hierarchy
