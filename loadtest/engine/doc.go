// Package engine models an LLM engine's paged KV cache with prefix caching,
// as vLLM and SGLang run it, closely enough to produce realistic KV events.
//
// A Cache holds at most a fixed number of blocks, each named by its chained
// block hash (cachekey/blockhash), so a block stands for its whole prefix and the
// cached blocks form a forest. A request's chain of block hashes first
// matches the longest cached prefix (its prefix cache hit); Admit then
// stores the missing blocks, evicting least recently used blocks to make
// room, and reports what it stored and what it evicted: exactly the
// BlockStored and BlockRemoved events an engine would publish.
//
// Eviction takes leaves only (blocks with no cached child), least recently
// accessed first, ties broken deeper first, then by hash. So the cache is
// prefix-closed at every moment: a block is never evicted while a child of it
// is cached, which is the contract cell/index relies on. The blocks of the
// request being admitted are never evicted for it; a chain longer than the
// whole cache is stored only as far as it fits.
//
// The Cache is a pure, deterministic model: no goroutines, no clock (the
// caller passes the time), and it is checked against a naive reference model
// in the tests. It is not safe for concurrent use.
package engine
