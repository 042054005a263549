// Package cell is the cell daemon (celld): it owns up to 256 engine pods,
// keeps the exact block index of what their KV caches hold, fed by the
// pods' KV events over any of the event transports, and serves the cell's
// state, health and metrics.
//
// Run wires the parts in this order and tears them down in reverse:
//
//	index.Index          the block index (cell/index), with its Learner: blocks learned
//	                     from routing (speculative entries, the approximate index of
//	                     pods with events "none"; run_learned.go gives such pods a slot)
//	podset.Set           the live pod set: the static pods and those discovery finds
//	                     (cell/podset, cell/discovery; run_discovery.go applies its
//	                     changes to the registry, the index and the subscriptions; the
//	                     router's candidates and the proxy's targets read it directly)
//	events.Registry      the pods and their states (cell/events)
//	events.Applier       the one Sink every transport feeds
//	transports           vLLM ZMQ (zmqsub), NATS JetStream (natsjs), gRPC Publish (grpcpub)
//	servers              gRPC (EventPublisher, CellService, server reflection) and HTTP
//	                     (/metrics, /healthz, /readyz, REST through grpc-gateway,
//	                     its OpenAPI document at /openapi/cell.swagger.json;
//	                     a sampled access line per request, internal/logging)
//	flowcontrol          the queue between Pick and Execute (cell/flowcontrol;
//	                     run_flowcontrol.go judges pods saturated from the load
//	                     the cell knows, re-picks a request that waited, answers
//	                     429 past its deadline)
//	loops                registry ticks (kill silent pods), pod health checks,
//	                     expiry of learned blocks, flow control's recheck
//
// The files are grouped by prefix, so that a reader finds each part
// without scrolling:
//
//	cell.go, loops.go, options.go   New, Run and the owned loops
//	config*.go                      Config, its sections, defaults and Validate
//	api_*.go                        what the cell serves: the OpenAI data plane
//	                                (api_inference.go, api_models.go, api_tokenize.go),
//	                                the CellService (api_state.go, api_route.go,
//	                                api_snapshot.go) and the one error mapping (api_errors.go)
//	metrics*.go                     the Prometheus collector, per-stage observers,
//	                                the saturation gauge autoscalers target
//	run_*.go                        the wiring of each running part: router,
//	                                transports, gossip, replicas, snapshots, security,
//	                                tokenizer, learned pods, drop diagnostics
//
// The state API stays in this package rather than a sub-package of its
// own: its handlers read the router, registry, applier and drains the
// daemon owns, and an interface layer between them would be new code for
// no new concept. The parts that are concepts of their own are the leaf
// packages beside it (index, events, pipeline, plugins, load, replica,
// snapshot).
//
// Every goroutine Run starts is owned by Run: it stops when Run's context
// ends, and Run returns only after all of them returned.
//
// Readiness: /readyz answers 200 only after every configured transport
// reported ready (connected, and caught up with the initial replay or the
// stream's backlog), so a load balancer does not route to a cell that is
// still filling its index. A cell alone in its gossip pool stays ready
// (it serves its own clients without the global tier); its /readyz body
// says "degraded" and why, and cellrouter_gossip_alone is 1, while its
// gossip node rejoins its seeds and the members it knew
// (run_gossip_pool.go).
//
// Snapshots (run_snapshots.go, package cell/snapshot): with snapshot.dir, an
// owned loop writes the index state every snapshot.interval (and after
// snapshot.every_events batches), and Run writes a last one after every
// writer stopped. New builds the index, learner, registry and applier
// together and restores into them the newest valid snapshot, else one
// streamed from a live replica (snapshot.bootstrap_from,
// CellService.StreamSnapshot), before the listeners open; when a restore
// fails the whole set is thrown away and rebuilt empty, so the cell never
// starts half-loaded. The transports then resume each restored pod after
// its saved sequence number (zmqsub asks Applier.Resume at the first
// contact; natsjs recreates its durable at the snapshot's stream
// position), and /readyz waits for them as above. A departure from the
// design page, which has the cell start empty: the engines' replay buffers
// (10,000 batches in vLLM) hold only the recent past, so an empty start
// loses most of a busy pod's cache; the snapshot keeps it.
//
// Picker mode (run_epp.go, api_epp.go): with epp_addr the cell also serves
// the Endpoint Picker Protocol (package internal/epp) to a gateway that
// carries requests to the pods itself. Both data planes share one plan
// (Cell.plan: model, prompt limits, tenant salt, the pipeline, among the
// gateway's subset hint in picker mode) and one call bookkeeping
// (api_call.go: the load tracker, speculative entries, sessions, first
// token, usage, metrics), driven by the proxy's hooks in proxy mode and by
// what the gateway reports of the response (served endpoint, status, body,
// end or cancellation) in picker mode. A served fallback is a retry, as
// when the proxy moves to the next target. Both modes hold the request the
// same way for flow control and the prefix wait: proxy mode before it
// sends, picker mode before it answers the gateway, whose cancellation
// ends the call as a client's does.
//
// The prefix wait (prefix_wait.go, config_prefixwait.go,
// routing.prefix_wait): the call records each prompt the pod is still
// prefilling (load.Prefills, until its first token); a request whose pod
// is prefilling more of its prefix than it holds waits for that prefill to
// end before it is sent (proxy mode) or before the gateway gets its
// destination (picker mode), when the engine model of
// routing.cost expects it to end before the request would have queued and
// computed those blocks itself, and at most that long. An engine stores a
// prompt's blocks only when its prefill ends, so without the wait a
// follow-up sent there moments after its previous turn runs beside it and
// computes the prefix again. What a pod "holds" here is what it has
// stored (index.StoredDepth): its exact blocks, or for a pod without
// events its approximate ones, never the speculative blocks of a prefill
// still running, which the same bookkeeping counts as the prefill's own
// work (the tracker's pending prefill). Counting them as held made a pod
// without events look idle to a burst of one new prefix and made the
// third turn of a conversation wait for the first rather than the second,
// then start beside the second (on the cold workload the approx mode lost
// 0.06-0.10 of its prompt tokens that way, kv 0.001-0.018).
//
// Tracing: a data-plane request is the span cell.request (continuing the
// caller's W3C context), with a span per pipeline stage (cell.stage.*), one
// for the tokenization of a text prompt inside prepare (cell.tokenize: the
// tokenizer's kind, the tokens made, whether the cache of remote answers
// hit) and one per upstream call (cell.upstream), whose context reaches the
// pod. Every span names the cell (cellrouter.cell). The spans go to the
// process's global provider, or to the cell's own (WithTracerProvider).
//
// Security (run_security.go, package internal/edge): with auth.key_file every
// endpoint but health, readiness and the OpenAPI document needs an API key
// with its scope (inference, admin, events); with tls, both servers speak
// mutual TLS, and a caller with a certificate of the CA (globald) is a
// peer whose tenant (X-Cellrouter-Tenant) the cell believes, its limits and
// cache salt having been applied where the request entered. A request
// authenticated here gets its tenant's cache salt in its body, so the pod
// partitions its cache the same way. Server limits (body, headers, slow
// bodies, idle connections, concurrent streams) wrap every handler; the
// data plane's bodies are reserved against the process's buffered-bytes
// budget (limits.max_buffered_bytes, 503 past it), and a prompt over its
// model's routing.prompt_limits is refused with 400
// context_length_exceeded (its text before the cell tokenizes it, its
// tokens after the pipeline did). The
// cell reads its pods' model lists and advertises them in gossip, so the
// global tier refuses a model no pod serves; tls.pods makes the calls to
// the pods HTTPS. Key files, TLS files and the gossip keyring are reloaded
// when they change.
//
// Text prompts and chats are tokenized by the cell's tokenizer (cellTokenizer):
// in process with routing.tokenizer_json (and routing.chat_template for
// chats), else through a healthy pod's /tokenize. POST /tokenize serves the
// same tokenizer in vLLM's shape, so that the global tier, for a model it
// has no tokenizer file for, hashes exactly what the cell hashes.
//
// Replicas (run_replicas.go, package cell/replica): several celld with the same
// cell_id and distinct replica.id (--replica-id; default $NODE_NAME,
// $POD_NAME or the host name) serve one cell with no single point of
// failure. Each consumes every event itself: each dials every pod's ZMQ
// PUB socket (a PUB socket fans out to every subscriber), each has its own
// JetStream durable consumer (nats.durable empty derives
// celld-<cell_id>-<replica.id>; a shared durable would split the events),
// and a gRPC publisher sidecar must stream to every replica. So each holds
// the full index. Their gossip nodes are cell/<cell_id>/<replica.id>, peers
// of each other; over memberlist user messages they share the changes of
// their active-request load (route, first token, done: load.Tracker's
// observer, applied at the peers with the replica as origin, sent again
// every replica.load_resync_interval so a lost change heals, bounded by
// replica.load_lease and dropped when the replica dies) and their pod
// drains.
// The global tier sees one cell with one endpoint per live replica.
//
// Decisions are explained (explain.go, decisions.go): the dry run
// (POST /v1/cell/route with explain) turns on the pipeline's recording
// (pipeline.Context.SetExplain) and explainDecision turns what Filter,
// Score and Pick recorded, with the candidates and the prefix match the
// scorers read, into a cellv1.Explanation. The data plane does the same for
// every request while the decision ring is on (decisions.size, default 100;
// package internal/decisions), keeping decisions.top_k pods of each
// explanation, and files the request under its X-Request-Id with the path,
// pod, matched blocks, status and durations: GET /v1/cell/decisions[/{id}]
// (admin), Cell.RecentDecisions and Cell.Decision.
//
// Status page (api_status.go, package internal/statuspage): GET /status,
// behind the admin scope like /v1/cell/state, renders the cell for a
// person from the same builders as the state API (GetCellState,
// ListPods), plus each pod's router load (load.Tracker), its indexed
// blocks by tier (index.Tiers) and the hit rates read from the data
// plane's own counters; it computes nothing the API does not. Its "last
// decisions" table reads the decision ring (statusDecisions), each row
// linked to its explanation at GET /v1/cell/decisions/{id}.
package cell
