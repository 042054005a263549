// Package auth is the decision core of the daemons' edge security: API keys
// and the tenants they belong to, scopes, per-tenant limits and the cache
// salt that isolates a tenant's prompts. It holds no sockets, goroutines or
// clocks: the daemons' edge (package internal/edge) feeds it the Authorization
// header and the time, and turns its answers into HTTP and gRPC responses.
//
// # Keys
//
// A key file (ParseKeyFile, YAML) declares the tenants, with their limits
// and isolation, and the keys, each as the SHA-256 of the key (never the
// key itself), the tenant it belongs to and its scopes:
//
//	tenants:
//	  - name: acme
//	    requests_per_second: 20   # 0: unlimited
//	    burst: 40                 # default: requests_per_second rounded up
//	    max_concurrent: 8         # 0: unlimited; absent: the daemon's default
//	    # isolated: false         # opt out of cache isolation (default true)
//	    priority: standard        # flow-control band: sheddable, standard, critical
//	    weight: 1                 # fair-share weight within the band
//	    max_queue_wait: 2s        # longest wait in a cell's queue (default: the cell's)
//	keys:
//	  - sha256: 4f0c...e1         # HashKey of the key, hex
//	    tenant: acme
//	    scopes: [inference]
//	  - sha256: 9b2e...07
//	    tenant: acme
//	    scopes: [events]
//	    pods: [vllm-0, "vllm-a-*"] # the pods it may publish for
//
// A Table is one parsed file; Authenticate maps an Authorization header
// ("Bearer KEY", as OpenAI clients send it) to the Principal of its key.
// The key is hashed once and looked up; it is never stored, logged or
// echoed in an error (errors name the key by KeyID, a prefix of its hash).
//
// # Scopes
//
// ScopeInference covers the OpenAI data plane (completions, chats, models,
// tokenize), ScopeAdmin the control plane (state, drain, dry-run route,
// metrics), ScopeEvents the publishing of KV events over gRPC, ScopeRoute
// a cell's gRPC dry run (globald's probe) and ScopeReplica a cell's
// snapshot stream (a replica's bootstrap); the key file's "admin" grants
// route and replica too.
//
// An events key may name the pods it publishes for (PodSet: exact ids, or
// prefixes ending in '*'); without pods it may publish for any pod the
// cell knows, and the cell knows only its configured pods unless told
// otherwise.
//
// # Roles in certificates
//
// A peer with a client certificate of the tier's CA gets the scopes of the
// roles its certificate names in URI subject alternative names
// (ParsePeerURIs): urn:cellrouter:role:global (inference, naming the
// tenant, and route), cell (replica), publisher (events, for the pods
// named by urn:cellrouter:pod:<pattern> URIs, none without them) and admin
// (admin). A certificate naming no role gets the roles its server is
// configured with (global by default); an unknown role, or pods without
// the publisher role, grants nothing.
//
// # Limits
//
// Limiter is a token bucket (requests per second with a burst) and a count
// of requests in flight per tenant. It is driven by the caller's clock, so
// its tests step time by hand, and it answers how long a refused client
// should wait (Retry-After).
//
// # Priority and fair share
//
// Each tenant has a priority band (Priority: sheddable, standard or
// critical; standard by default), a fair-share weight within its band and
// a bound on how long its requests may wait in a cell's flow-control queue
// (package cell/flowcontrol uses all three). A request may lower its own
// band with the PriorityHeader ("X-Cellrouter-Priority: sheddable"), never
// raise it above its tenant's (Principal.RequestPriority); a value that
// names no band is refused (ErrPriority, HTTP 400). A peer of the tier is
// trusted for the header: globald sets it to the band it decided.
//
// # Cache isolation
//
// An isolated tenant's requests are hashed, indexed, summarised and cached
// under a salt of their own (Salt): "tenant:<name>", plus the client's own
// cache_salt after a colon when it sent one. The salt goes to the engine as
// vLLM's cache_salt request field, so the engine's prefix cache is
// partitioned the same way, and since the salt is part of every block's
// identity (blockhash.Identity), an isolated tenant's request never matches
// another tenant's blocks in a cell's index or a gossiped summary. A
// tenant that opts out keeps the cache_salt its clients send, except the
// reserved "tenant:" prefix, which only the router may set.
package auth
