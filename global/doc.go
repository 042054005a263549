// Package global is the sparse global tier (globald): many cells behind one
// OpenAI-compatible endpoint, with bounded global state.
//
// # Model
//
// The global tier knows each cell only through what the cell gossips (see
// package gossip): a Bloom-filter summary of a coarse sample of its chained
// block hashes, and its load. For a request it:
//
//  1. tokenizes a text prompt or chat as the cells and engines do (see
//     Tokens below) and hashes the tokens exactly as the cells do (same
//     block size, same seed: model and cache salt);
//  2. searches the summaries (Search, pure): each usable cell's estimated
//     prefix depth turns into a lower bound on what its best pod would cost
//     (see The choice below), and the MaxProbes cells with the lowest
//     bounds are probed;
//  3. probes those cells in parallel with a deadline (CellService.Route,
//     which changes nothing in the cell) for their exact answer: the pod
//     they would pick, its matched depth and load. When the search leaves
//     a single candidate (one usable cell, or one knowing the prefix with
//     no other to weigh it against) the data plane skips the probe, which
//     could change nothing, and hands the request off at once: the cell's
//     picker decides in the hand-off and reports its pick's match in
//     X-Cellrouter-Matched-Blocks (Config.ProbeLone, globald --probe-lone,
//     restores the probe; the dry run always probes). This saves a
//     loopback round trip, the cell's second decision and the gRPC framing
//     of the probe: about 0.2 ms at p50 (the global tier's added p50 on
//     loadtest overhead's path fell from 0.28 to 0.11 ms);
//  4. chooses by cost (Choose, pure): prefill blocks left, what moving a
//     prefix another cell holds costs the fleet (see The move), the pick's
//     load, and the cell's network distance, which matters across regions. The
//     distance is the least of the cell's last 16 probe round trips on an
//     open connection (distances), not this probe's own: a probe that opened
//     its connection measured a TLS handshake, and a busy router's probe
//     may have waited for a CPU; either outweighed short prefixes;
//  5. hands the request to the chosen cell's data plane, whose own picker
//     makes the final choice, and to the next cells while no byte has
//     reached the client (the cell list ends with every other usable cell,
//     least loaded first).
//
// # The choice
//
// The global tier optimises the cells' own cost, the reference KV
// router's: for the pod that serves a request, PrefillWeight * (blocks it
// must prefill) + (its active blocks). One flat router over every pod picks
// the pod of least cost; the two tiers aim to pick the same pod while
// looking at no more than two cells.
//
// Search gives every usable cell a lower bound on its best pod's cost:
// PrefillWeight * (chain length - (estimated depth + Slack)) + the active
// blocks of the cell's least loaded pod, which every cell gossips in its
// load (gossip.Load.LeastPodBlocks). The estimate is the summary's: it may
// fall short of the truth by up to Stride-1 blocks, which Slack covers, and
// over-shoot only on a false positive; the least loaded pod has the least
// load term of any pod; so no pod of the cell costs less than the bound
// while the gossip is current. The cells with the lowest bounds are probed
// (ties to the deeper estimate, then the less loaded cell); a cell with no
// estimate can only enter through its load, so only the least loaded of
// those are looked at, which is what spreads a prefix every cell shares (a
// system prompt) once the cells that hold more of it get busy. The probes
// return each cell's exact best pod and cost, and Choose takes the cheaper
// (plus the round trip, which matters across regions). A cell whose every
// pod was busy says so (RouteResponse.failed_open); its pick's load is in
// its cost like any other's, and it only comes after a pick of equal cost
// that is not busy (see Busy cells). Equal costs then go to the less
// loaded cell, as the flat router's random tie-breaks spread them over
// every pod. The chosen cell's picker then decides with the same cost over
// its own pods.
//
// Why this loses nothing against the flat router: the flat router's pod p
// lies in some cell c, and c's bound is at most p's cost. If c is among the
// probed cells, its probe finds p (or a pod of equal cost) and Choose picks
// it unless another probed cell offers a pod as cheap: the same choice. c
// is left out only when MaxProbes other cells have bounds below p's cost,
// that is, when each of them may hold a cheaper pod, and the probe of the
// best of them then decides with exact figures. What remains is staleness:
// summaries and loads are as old as the last gossip (SummaryInterval, 2 s),
// while the flat router sees every event at once. Loads matter most: a
// burst of requests arriving together (the Mooncake trace's timestamps come
// in bursts of about ten at the same millisecond) all see the same gossiped
// loads, and if each cell's least loaded pod stayed at its gossiped load,
// the whole burst would rank the same cells first and crowd out the ones
// whose pods were now cheaper. So a Router counts the load its own
// hand-offs added to each cell until the cell gossips again
// (CellLoad.Routed): until the cell gossips another load, and at most
// Config.RoutedLoadTTL (5 s) after the first of those hand-offs, since a
// cell whose requests ended between two announcements gossips the same
// load as before and would otherwise carry the added load for as long as
// it stays idle. Cells gossip not only their least loaded pod but
// their gossip.LightestPods (8) least loaded pods' loads: when a probe says
// the cell's pick is one of those, that pod's load grows by the request
// and the next decision sees the cell's next least loaded pod, exactly as
// the cell will; a pick more loaded than all of them (a pod chosen for its
// prefix) leaves them alone. With only the least loaded pod (older cells, or a lone
// candidate handed off unprobed) the least loaded pod's load rises by the
// request's share over the cell's pods. On the conversation trace at 2,000
// ms a token this took the reuse loss from 3.1% to below zero; fresher
// loads alone (a load announcement every 250 ms) did not help, because a
// burst's requests arrive with no time between them.
//
// # The move
//
// The cells' cost weighs a pod's prefill against its load, request by
// request. Across cells that misses what moving a conversation costs: a
// follow-up whose prefix cell A holds, sent to a lighter cell B, is
// prefilled there AND leaves a copy of its prefix in B, taking cache whose
// other prefixes are evicted, while A's copy lingers unused; and its next
// turn finds the prefix only in B. Choose charges that copy:
// MoveWeight (globald --move-weight, 1 by default) per block a cell's pick
// lacks against the deepest answer of the request, on top of the
// prefill. The deepest answer is one number for the whole request, so the
// order is that of (PrefillWeight + MoveWeight) * (blocks to prefill) +
// load (+ distance), a cost of each cell alone (BlockWeight, which the
// search's bounds use too): probing more cells can only add cheaper
// cells, never make the choice fall on a costlier one
// (TestChooseMoreProbesNeverChooseWorse). Without the move, more probes
// lost reuse on cold-heavy traffic (one probe 0.7%, eight 4.5% on a
// held-out trace): every extra probe was one more light cell to outbid
// the prefix's holder by less than the copy cost. A cold prompt matches
// nothing anywhere, so the move costs it nothing and it still goes to the
// lightest pick.
//
// # Cache pressure
//
// The cells' kv-cost charges a pod the cached blocks it is expected to
// evict to store a request (the blocks it lacks times its cache's
// fullness, routing.kv_pressure_weight each; cell/plugins, "Cache
// pressure"), and a probe answer carries its pick's (evict_blocks,
// ProbeAnswer.Evicts). Choose adds them at ChooseConfig.PressureWeight
// (globald --pressure-weight, the cells' default 1): otherwise a cell
// whose pick holds the system prompt on a full pod outbids a cell whose
// pick is an empty pod, and the global tier piles new conversations where
// the cells themselves would not. The search adds the same term to each
// cell's bound, from the cell's mean fullness (cellFullness: its summary's
// sampled hashes times the stride, over its gossiped free plus active
// blocks): with it, a cell full of a shared prefix no longer keeps emptier
// cells out of the probes, which at 4 probes had left 4 of the 8 cells
// unused and their pods empty while the others evicted (conversation
// trace, 20 ms a token, a quarter of the caches: loss +12.0% at 4 probes
// before, +1.7% after). The mean is not the emptiest pod's fullness, so
// with pressure the bound is an estimate rather than a lower bound; no
// gossip field was added for it (the summary's element count already
// travels with it).
//
// # Full cells
//
// The summary counts a block once however many of the cell's pods hold
// it, so the estimate is the cell's distinct blocks over its capacity:
// when every pod is full it reads below 1, by as much as the pods share
// (a system prompt on every pod, conversations copied by moves). Those
// differences carried no news of where a pick would evict, yet they set
// the bounds apart by a few blocks, and the search's load only breaks
// ties. At a quarter of the caches on the conversation trace (20 ms a
// token) every cell read 0.97-0.99, every least loaded pod was idle, and
// the two probes went to the cells that read lowest: the busy ones,
// whose pods had come to share the most. One cell drew six times the
// requests of another, and two probes lost 5.8% to the flat router
// (seed 42, 6,000 requests: cells from 354 to 1,274 requests, loss
// +3.5%). SearchConfig.FullAt (globald --full-at, default 0.9) makes a
// cell that reads that full count as full, scaling the estimate below it:
// full cells then tie on the pressure and their load decides, as the
// flat router's full pods do. The same run then spreads 707-798 requests
// a cell and loses +0.52% (0.95: +0.84%; rounding the estimate to tenths
// instead, a step rather than a scale, +0.09%, but with a jump at every
// tenth). The README's "Measured" has the whole workloads.
//
// The quality benchmark (loadtest hierarchy, its load sweep, its agents
// and cold workloads, each level pooled over three seeds) measures what
// is left (the README has the figures and commands). Over the whole
// workloads (12,000 requests each, seeds 42-44), with the default caches
// and with a quarter of them (--blocks-per-pod 4096, where every level
// but the idle agents evicts millions of blocks), the hierarchy's reuse
// loss against the flat router is at most +0.02% at every level (each
// seed too), with probes p95 2, and the hierarchy evicts fewer blocks
// than the flat router (but on the idle cold level, 0.2% more).
//
// More probes. Before the cache pressure two regimes kept the
// hierarchy's reuse from rising with MaxProbes (1, 2, 4, 8): idle traffic
// behind one shared system prompt (the conversation trace at 20 ms a
// token, 4,000 requests: loss -10.8%, -18.4%, -3.4%, -0.2%), where the
// cells' cost sent every new conversation to the few idle pods holding the
// system prompt (42 of 256 pods served everything at 8 probes) and the
// more cells were probed the surer such a pod was found; and agents at 400
// ms (-13.8%, -12.2%, -10.2%, -9.8%), where more probes found lighter
// picks and moved sessions. The loss was negative because the flat
// reference, the cells' own cost over all pods, piled up worst.
//
// With the pressure (cells, choice and search; whole workloads, seeds
// 42-44 pooled) the flat router itself spreads new prefixes, its reuse
// rising (conversation at 20 ms 0.358, agents at 400 ms 0.700), and the
// hierarchy converges to it as the probes grow: conversation at 20 ms
// +1.78%, +0.02%, -0.06%, -0.05%; with a quarter of the caches +12.3%,
// +5.8%, +1.15%, +0.10%; agents at 400 ms -1.77%, -3.20%, -3.12%,
// -3.45%. The rises there (0.01 point from 4 to 8 on the conversation
// trace, 0.08 from 2 to 4 on agents) are the seeds' noise: over ten seeds
// conversation gives +1.64%, +0.29%, +0.02%, +0.04% and agents -1.86%,
// -3.23%, -3.24%, -3.43%, and each seed's change from 4 to 8 probes on
// the conversation trace averages -0.01 +- 0.06 points over twenty seeds
// (loadtest/hierarchy/doc.go, "Seeds"); the agents' TTFT estimate
// improves with the probes as the choice trades a little prefix for load.
// One probe lost (+1.64% over ten seeds), and with a quarter of the
// caches two probes lost 5.8% to the flat router. Both were the search's
// reading of full cells, not the number of probes (see "Full cells"):
// with FullAt, seeds 42-44, the conversation trace at 20 ms gives +0.22%,
// -0.10%, -0.09%, -0.06% at 1, 2, 4, 8 probes, and with a quarter of the
// caches +0.53%, +0.55%, +1.03%, +0.38% (the last two as at FullAt 1,
// +1.15% and +0.10%, where all or most cells are probed anyway). Over
// twenty seeds (42-61) with a quarter of the caches 1, 2, 4 and 8 probes
// lose +0.26%, +0.45%, +0.79%, +0.39% (+- 0.15-0.19); seed by seed four
// probes lose 0.34 +- 0.18 points more than two (13 seeds of 20) and 0.40
// +- 0.18 more than eight. Logging the decisions of one seed (45, where
// four probes lost 1.7 points more than two) found no choice to blame:
// follow-ups moved off their prefix's cell 41 times at four probes, 46 at
// two, and the truly deepest cell went unprobed for under a block a
// request; the 47,000 blocks between the two runs were lost to what each
// run's placements had evicted earlier, which is the caches' history, not
// one decision. With the default caches, over every workload and level
// (seeds 42-45), the loss falls from 1 to 8 probes everywhere; the steps
// that rise (on the conversation trace only, at most +0.61 +- 0.45
// points) are within the seeds' noise (README, "Measured"), once busy
// picks are weighed by their cost (see Busy cells).
//
// At fleet scale the search must not test every cell's summary: a
// gossip.Bank holds all summaries transposed (one row of cell bits per
// filter bit), so one test covers every cell and the search cost grows with
// the cells that hold a prefix rather than with the fleet. globald's
// GossipDirectory keeps one beside its views (an IndexedDirectory: each
// new generation costs the bank the bits it changed, at most once per
// change of the gossip table), and the Router runs SearchDepths on its
// depths; a directory without one (StaticDirectory) is searched cell by
// cell with Search, to the same candidates (TestRouterSearchesThroughTheIndex).
// loadtest hierarchy --scale measures the search at 1,024 cells, and
// BenchmarkDecideCells the whole decision both ways.
//
// # Busy cells
//
// A cell whose every pod is busy (active blocks above the busy threshold)
// still answers a probe, its pick marked busy (failed_open). Choose used to
// put such a pick after every pick that was not, whatever the costs, as
// the flat router's soft busy filter passes over busy pods. Across cells
// that rule grows with the probes: each probe more is one more chance of a
// cell with room, and the rule then moved a follow-up off its prefix for
// any load gap, however small, where the cost would have kept it. On the
// conversation trace at 5,000 ms a token (whole trace, seeds 42-45), the
// only level of the three workloads where whole cells get busy, the
// reuse loss against the flat router went -5.17%, -3.29%, -1.43%, -2.93%
// at 1, 2, 4 and 8 probes, every seed rising from 1 to 4; on seed 42 at 4
// probes 233 of the 549 follow-ups that left the cell holding their prefix
// left it for this rule alone, carrying 458 blocks of prefix each on
// average. Now the busy pick's load is in its cost like any other's, and
// busy only breaks ties (ChooseConfig.AvoidBusy, globald --avoid-busy,
// restores the rule): -5.17%, -6.87%, -6.27%, -8.55%, and on seed 42 the
// TTFT estimate (4,279 against 4,356 ms at 4 probes) and the requests that
// met a busy pod (2,765 against 2,911) improve too. Busy cells still pay:
// their pick's load, and the wait the cell announces for the request's
// band, the time its flow control would hold the request (see Priority
// bands), are both in the cost. With the default caches the cold and
// agents workloads never fill a whole cell, and their figures are
// unchanged; with a quarter of the caches (two probes, seeds 42-44) the
// conversation trace gains at 2,000 ms (-5.21% to -7.24%) and 5,000 ms
// (-3.46% to -3.98%), and the cold workload at 5,000 ms gives up a
// little of its lead (-4.22% to -3.59%).
//
// # Cold prompts
//
// A request whose prefix no summary knows (a cold prompt) is placed where
// it costs least among the cells a stable hash of its first blocks ranks
// highest (rendezvous hashing over Search.ColdBlocks blocks): MaxProbes of
// them are probed (SearchConfig.ProbeCold, globald --probe-cold, on by
// default from two probes) and Choose takes the cheapest on their exact
// answers, which for a prompt nobody holds is the lightest pick. The
// hand-off counts as the router's own load (noteRouted), so a burst of
// cold prompts between two gossip messages fills the lighter cells and
// then spreads instead of piling onto the cell the gossiped load showed
// lightest. Since the hash is stable, a conversation's follow-up that
// arrives before the summaries show its first turn (turns seconds apart,
// summaries every 2 s) probes the same cells, finds its prefix in the
// one that took the first turn, and stays there by the move's cost. On
// traffic with no shared prefix more than half the requests are cold
// (loadtest hierarchy --workload cold), and unprobed placements by
// gossiped load alone, uncounted, piled cold prefixes into busy cells
// that then evicted the conversations' prefixes. A prompt without tokens
// (a text prompt or chat the global tier could not tokenize: hashed by
// its model and first text), or every cold prompt with ProbeCold off or a
// single probe, goes unprobed to the less loaded of its two hashed cells,
// counted as routed load too.
//
// # Explaining a decision
//
// A dry run with explain (POST /v1/global/route) and every data-plane
// request while the decision ring is on (Config.Decisions, default 100;
// package internal/decisions) hand decide an explainNotes to fill: the
// summaries' estimates the search was given and how many cells of the
// order the search and the probes placed. explain then builds a
// globalv1.Explanation from the Decision and the notes: every cell's
// estimate, gossiped and routed load, the search's bound (searchBound, the
// function the search uses), the probe's answer and round trip, the
// distance and the choice's cost terms (chooseTerms, the function Choose
// uses), rank and role (choice, candidate, fallback). A decision that is
// not explained gets no notes and pays nothing. The ring files each
// request under its X-Request-Id (sent on to the cell, which files it
// under the same id) with the path, cell, probed pod, status and
// durations: GET /v1/global/decisions[/{id}] (admin),
// Global.RecentDecisions and Global.Decision.
//
// # Priority bands
//
// A request's band (internal/auth: critical, standard, sheddable) is
// decided where it enters: its key's tenant's, lowered by the client's
// X-Cellrouter-Priority header (never raised; a header naming no band is
// 400), and sent on to the cell in that header, which the cell trusts from
// globald. Cells gossip, per band, how long a new request would wait in
// their flow control (gossip.BandWaits). The choice charges a probed cell
// BandsConfig.WaitWeight blocks per millisecond of its wait for the
// request's band (as RTTWeight charges the hop: a waiting cell must save
// that much prefill), and a cold prompt's two choices and fallbacks put
// the cells that can take it now first (bands.go; a cell whose waits were
// not refreshed for MaxAge waits for nothing). When every usable cell
// announces a wait above ShedAfter for the sheddable band, a sheddable
// request is refused with 429 (type requests, code fleet_saturated,
// Retry-After the shortest wait) before any probe or wide-area hop, counted
// in cellrouter_global_shed_total; the other bands are never refused here,
// their cells queue them (shed.go).
//
// # Tokens
//
// Nearly every OpenAI client sends text (/v1/completions "prompt") or
// chat messages, so the global tier turns them into the engine's token ids
// itself (Tokenizer), with the tokenizer the cells use, or its summaries
// never match:
//
//   - In process, for the models configured with a tokenizer.json and a
//     built-in chat template (Config.Tokenize.Models, globald --tokenizer
//     MODEL=PATH[,TEMPLATE]), the same files and template names as the
//     cells' routing.tokenizer_json and routing.chat_template. A text
//     prompt gets the model's special tokens, as /v1/completions does; a
//     chat is rendered with the generation prompt and not given special
//     tokens again, as /v1/chat/completions does; the cells do the same.
//     A 1k-token prompt costs tens of microseconds.
//   - Otherwise (no file for the model, no built-in template, or a message
//     the built-in template cannot render exactly, such as a tool result
//     under qwen2.5), a cell's POST /tokenize, which answers with the
//     cell's own tokenizer: its in-process one, or its pods' /tokenize
//     (vLLM's), which applies the model's real template. The global tier
//     asks a cell rather than a pod because it knows no pods, and because
//     a cell's answer is by construction what that cell hashes, whichever
//     way it tokenizes. Of the cells it asks the nearest first (smallest
//     smoothed round trip seen by probes and tokenize calls; a cell never
//     measured is tried once), and a second one if the first fails, all
//     within Tokenize.RemoteTimeout (250 ms): across regions the round
//     trip is the cost, and a cell in the same region answers from its
//     own tokenizer in well under a millisecond. If every attempt fails the
//     request goes the cold path, counted in
//     cellrouter_global_tokenize_errors_total{source="remote"}.
//
// One bounded LRU (tokenizer.TokenCache, Tokenize.CacheBytes, 64 MiB)
// holds what is costly to redo. Chat templates put special tokens around
// every message and tokenizers encode the text between special tokens
// independently, so the in-process tokenizers cache the ids of each such
// segment: a conversation's next turn encodes only its new messages (the
// 8th turn of a 4k-token chat in a quarter to a third of the time; the
// template rendering itself costs a few microseconds). On the Mooncake
// trace made into chats (loadtest hierarchy --prompt chat) a third of the
// segment lookups hit, near the trace's bound (0.37: the share of its
// hash ids seen before). Remote answers are cached
// whole, by a 128-bit hash of model, kind and prompt or messages, so a
// repeated prompt (a retry, a resent request) costs no round trip. Hits
// and misses are in cellrouter_global_tokenize_cache_total.
//
// The cell hands off the original body and tokenizes it again with its
// own tokenizer; its probe carries the global tier's token ids, so a probe
// costs the cell no tokenization. Metrics tell the paths apart:
// cellrouter_global_requests_total{path} is how a request was routed
// (summary, cold, untokenized) and its prompt kind (tokens, text, chat),
// such as "summary_chat"; cellrouter_global_tokenize_seconds{source} times
// each tokenization (local, remote, cache). The global.tokenize span
// traces it.
//
// Dead cells (memberlist's failure detection) and draining cells
// (DrainCell) leave the candidate set. A new cell that joins the gossip pool
// receives traffic as soon as its first summary arrives: nothing is
// reconfigured.
//
// # The endpoint picker
//
// With Config.EPPAddr (globald --epp-addr) globald also serves the Endpoint
// Picker Protocol (package internal/epp) for a global gateway: a request
// the gateway routes through it is parsed, refused and salted exactly as
// on the data plane, and decided by the same code (decideToSend: search,
// probes, choice, the lone candidate unprobed); instead of a hand-off the
// picker answers with the chosen cell's gateway, the host:port the cell
// advertises in gossip (celld gossip.gateway_address,
// gossip.NodeMeta.GatewayAddr), then the gateways of the next cells of the
// decision's order as fallbacks. A cell without a gateway is passed over
// (the first cell with one is the one charged the request's load), and a
// decision none of whose cells has a gateway the subset hint allows is
// answered 503 no_cell_available. The request then crosses the global
// gateway, the cell's gateway and the pod, whose gateway asks the cell's
// own picker: two pickers and no proxy of ours in the data path. The
// response carries X-Cellrouter-Cell (the cell whose gateway served); its
// status class is counted in cellrouter_global_epp_exchanges_total.
//
// # Replicas
//
// A cell may run as several celld replicas (same cell id; see package
// cell/replica): the gossip table holds, per cell, the set of its live
// endpoints (CellView.Endpoints), one summary (any replica's: they hold
// the same index) and one load (they share it). A probe asks one live
// replica, taking them in turn, and the next one when a replica cannot be
// reached (it died before failure detection said so). The hand-off lists,
// for each cell of the decision's order, up to ReplicaAttempts of its
// replicas in turn (round robin) before the next cell, so a dead replica
// costs one refused connection and the request still meets its cache in
// the sibling; the relay's attempts are MaxAttempts x ReplicaAttempts, all
// before the first byte. A replica's death (memberlist leave or dead) only
// shrinks the set, reported in cellrouter_global_cell_endpoints{cell}; the
// cell leaves with its last replica. Round robin rather than least loaded:
// the replicas share their load, so "least loaded replica" carries no
// information, and turns spread the proxying work evenly.
//
// globald itself runs as several replicas side by side with nothing shared
// but the gossip pool: each learns every cell from gossip, so any one can
// answer any request, and a load balancer or DNS spreads the clients (see
// the README's "Replicas" section). A DrainCell issued at one replica is
// sent to the others (a reliable gossip user message) and applied there;
// a replica that starts later does not learn earlier drains.
//
// The decision code (Search, Choose) is pure: a snapshot of cell views in,
// an order out; probing and hand-off live at the edges. Every request is one
// OpenTelemetry trace: global.request, global.summary_lookup, one
// global.probe per probed cell, global.handoff, and the cell's spans under
// it (W3C context crosses the gRPC probe and the HTTP hand-off). The gRPC
// server answers server reflection, and the HTTP server serves the OpenAPI
// document of the REST control plane and the data plane at
// /openapi/global.swagger.json. Each data-plane request gets a sampled
// access and decision log line (package internal/logging) with its route
// path, cell, pod, matched blocks, status and durations.
//
// # Security
//
// With Config.Security.KeyFile every endpoint but health, readiness and the
// OpenAPI document needs an API key with its scope (package internal/edge); the
// tenant's limits apply here, its cache salt joins the request's identity
// (edge.Salt: the body's cache_salt, which the cells hash and the engines
// partition by), and its name goes to the cell in X-Cellrouter-Tenant. With
// Config.Security.TLS every probe, hand-off and tokenize call to a cell is
// mutual TLS, so the cell can believe that name; without it the client's
// key goes along for the cell to check. A request for a model that no cell
// lists (the models the cells advertise in gossip, ModelServed) is
// answered 404 model_not_found here, without a probe.
//
// Memory and prompt bounds: a data-plane body is reserved against the
// process's buffered-bytes budget (edge.Budget, Limits.MaxBufferedBytes)
// before it is read, 503 with Retry-After past it; a prompt longer than its
// model's Config.Prompts is refused with 400 context_length_exceeded, its
// text before it is tokenized, its tokens after (in decide), so that a huge
// prompt costs no tokenizer time.
//
// Status page (status.go, package internal/statuspage): GET /status,
// behind the admin scope like the control plane, renders the router's
// views of the cells (replicas, models, summary generation, age, size and
// estimated false-positive rate, load with the tier's own hand-offs, and
// saturation) with cellStats, the per-cell counts the data plane keeps
// for it (probes and round trips, hand-offs, predicted and realised
// cached tokens; forgotten with the cell when it leaves the directory).
// Its "last decisions" table reads the decision ring
// (statuspage.FromRing; none when decisions are off, and the page says
// so), each row linked to its explanation at GET /v1/global/decisions/{id}.
//
// Dependencies: global uses cachekey/blockhash (hashing), cachekey/tokenizer,
// gossip, the server plumbing under internal/ (the relay internal/proxy,
// shared with the cell; auth, edge, tls, telemetry) and api, and nothing
// under cell/ (the root's TestDependencies enforces it; test files may
// start real cells to test the two tiers together).
package global
