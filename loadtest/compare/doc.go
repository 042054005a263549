// Package compare runs the routing comparison: the same slice of the
// Mooncake trace replayed, in one process, through a cell (package cell)
// in front of a simulated fleet (package loadtest/enginesim) under five
// routing modes, and reports what a client sees in each.
//
// # Modes
//
// random picks any healthy pod (the "max-score" picker over no scorers:
// all pods tie and ties break at random); round_robin takes the pods in
// turn ("round-robin-pick"); kv is the cell's default profile, the
// reference KV router (prefix match on the cell's block index, fed by the
// engines' ZMQ KV events, with speculative entries for what was routed but
// not yet reported; its cost is the expected time to first token, queue
// wait from the pod's load plus prefill of the blocks it does not hold,
// from the engines' own timing model, which the cell is told (Config.Cost,
// routing.cost; "blocks" is the reference router's overlap weight x
// blocks to prefill + active blocks); lowest cost wins); kv-nospec is kv
// with speculative entries off (the index knows only
// what events said); approx is kv on a fleet that publishes no KV events,
// the cell's pods configured events "none", so the index holds only what
// the cell learned from its own routing (the approximate index). Each mode
// gets a fresh fleet and a fresh cell, so every mode starts with cold
// caches. Every mode is also set against round_robin (vs_round_robin: TTFT
// speedups, cached-ratio gain, busiest pod over an even share).
//
// # Rate sweep and the cold workload
//
// RunSweep (loadtest compare --rate 1,2,3,4.5) runs the comparison at
// each multiple of the arrival rate (TimeScale / rate) and stops after the
// first where round-robin's TTFT p90 reaches the limit (5 s): issue 24's
// targets hold up to there. Every report carries Saturation: each mode's
// cached ratio over the reachable reuse, kv's TTFT over round-robin's and
// kv-nospec's at p50, p90 and p99, approx's p50 over kv's, and the
// verdicts. Config.Workload "cold" (--workload cold) replays package
// loadtest/workload's cold-heavy conversations instead of the trace, at
// about the trace's pace, sampled the same way.
//
// The stop and the verdicts take TTFT from each request's scheduled
// arrival (ttft_from_arrival_*), not from its send (ttft_*). The replay
// caps the requests in flight (Concurrency, 512); a request that finds
// the cap reached waits in the generator (delayed). Past the rate where
// that happens the replay is a closed loop: every mode's TTFT from the
// send settles near the cap over its throughput, the same at x8 as at
// x12, and a mode that falls behind the schedule hides its backlog in
// the generator. On the cold workload round-robin's TTFT p90 from the
// send stays near 3.4 s at every rate past x5 (75% of the requests
// delayed at x8), so a sweep that stopped on it never stopped; its users
// wait for the backlog too, and counting it is the usual correction for
// coordinated omission in open-loop load generators. The figures from
// the send stay in the JSON beside (Saturation), and are equal to the
// ones from arrival wherever every mode kept the schedule.
//
// SweepConfig.Repeat (--repeat 3) runs each rate that many times and
// judges the medians of the figures (median.go says why); WriteDir's
// requests_<mode>.csv has every request's waits, tokens and pod, for
// analyses of a tail the summary cannot make.
//
// # Traffic around the router
//
// Config.Bypass (loadtest compare --bypass 0.2) sends that share of the
// requests straight to pods, around the cell (bypassFront: a loopback HTTP
// front, the same requests in every mode by a hash of their body, to the
// first BypassPods pods), as in a fleet where some clients address
// engines directly. The cell's own load estimate then misses that
// traffic. With --bypass and no --modes the run sets kv (the router's own
// estimate, engine_metrics off as in every other mode) against kv-engine
// (engine_metrics on: the default profile's engine-active-blocks adds the
// load the engines report and the router did not route), and reports
// their TTFT ratios in the JSON's "bypass" object.
//
// # Slice
//
// SampleConversations keeps whole conversations (the subtrees under a
// request's second hash id) across the whole trace rather than its first
// minutes, which preserves the trace's prefix reuse; TimeScale compresses
// the arrival times (open loop, see package replay). Output is capped
// (MaxTokensCap): decoding is not what routing changes.
//
// # Reachable reuse
//
// ReachableReuse replays the slice in arrival order through ONE engine
// cache model (package engine, leaf-first LRU) with the whole fleet's
// capacity: the cached-token ratio of a router that could pool every
// pod's cache. It is an estimate, not a bound: a real fleet also loses
// hits to follow-ups that arrive while the prompt they extend is still
// being prefilled (the engine stores blocks when the prefill ends), and to
// the load term of the kv cost, which sends a request away from a busy
// pod that holds its prefix.
//
// # Timing
//
// The engines' timing model (DefaultConfig explains the values) makes
// prefill time proportional to uncached prompt tokens, so cache hits show
// in TTFT, and MaxRunning makes a pod queue work beyond a few requests, so
// piling requests on one pod costs time as it does on a GPU. A pod also
// runs only as many requests as its KV cache holds together (package
// enginesim), so long prompts run fewer at once. Every mode's cell is told
// the engines' MaxRunning (flow_control.engine_max_running), from which
// flow control judges the engines' queues and KV use without engine
// metrics.
package compare
