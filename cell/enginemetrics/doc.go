// Package enginemetrics reads the engines' own account of their load: it
// scrapes each pod's Prometheus endpoint and keeps, per pod, the newest
// snapshot of the requests waiting and running, the KV-cache usage, the
// LoRA adapters loaded and the cache's size.
//
// # Model
//
// The router's own estimate of a pod's load (cell/load: the requests it
// routed there and their blocks) is exact for the traffic it sees and blind
// to the rest: requests sent around the router, another replica's traffic,
// an engine that runs slower than modelled. The engine's metrics see all of
// its traffic but lag by up to one scrape interval. Neither source is a
// superset of the other. The pipeline (cell/plugins, engine_load.go) adds
// to the router's estimate what only the engine saw:
//
//	decode load = router's active blocks now
//	            + max(0, engine's load in blocks - router's active blocks at the scrape)
//
// where the engine's load in blocks is kv_cache_usage x capacity (the KV
// blocks its running requests hold) scaled by (running + waiting) /
// running (the queued requests, at the running requests' mean size, hold
// no KV block yet but will), and the router's count at the scrape is the
// larger of its count before the request and after the answer
// (Hooks.RouterLoad): on a busy cell several of the router's requests end
// during one scrape's round trip, and reading the count only afterwards
// charged them to the pod as unseen traffic (one loadtest compare run at
// --time-scale 0.004 on a CPU-starved machine spiralled to a TTFT p50 15x
// worse); the larger count errs toward the router's own estimate instead. The difference is
// the traffic the router did not route; the router's current count covers
// what it routed since. This is max(router's, engine's) when nothing
// changed since the scrape, and fixes that simpler rule's lag: with a
// scrape up to one interval old, max() charges a pod for requests that
// have finished since (the router already forgot them, the stale engine
// reading still holds them), which steered requests away from the pods
// that had just served their prefix and cost cache hits (in loadtest
// compare --bypass runs, TTFT p50 1.3-1.5x worse than without engine
// signals). Not a plain sum: the router's traffic is in both numbers.
//
// # Parsing
//
// Parse reads the Prometheus text exposition format line by line and keeps
// only the few families it was asked for, without building the whole
// metric set: a vLLM /metrics page is 50-150 KB of histograms, scraped
// every 200 ms from up to 256 pods, and a general parser would spend a
// core on it. A malformed line of a family it keeps is an error; other
// lines are skipped unread. Series of one family are combined: counts
// (waiting, running) add up over data-parallel engines, usage is their
// mean, cache capacities add up; of vllm:lora_requests_info, a gauge whose
// value is a timestamp, the newest series wins.
//
// # Staleness
//
// A Scraper runs one owned goroutine per cell that scrapes every target
// each interval with bounded concurrency, and publishes an immutable View
// after each round. A snapshot older than stale_after (no successful
// scrape since) is stale: View.Load reports it as not fresh, and the
// plug-ins fall back to the router's own estimate for that pod. A failing
// scrape keeps the last good snapshot until it turns stale.
package enginemetrics
