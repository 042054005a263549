package enginesim

import "sync/atomic"

// counters are a pod's running totals; all fields are atomic.
type counters struct {
	requests     atomic.Uint64 // generation requests answered in full
	rejected     atomic.Uint64 // generation requests answered with an error
	cancelled    atomic.Uint64 // requests whose client went away (or pod closed)
	promptTokens atomic.Uint64 // prompt tokens of prefills completed
	cachedTokens atomic.Uint64 // of which prefix-cache hits
	transferred  atomic.Uint64 // of which received from a remote prefill
	outputTokens atomic.Uint64 // output tokens sent
	prefills     atomic.Uint64 // prefills completed
}

// Stats is a snapshot of what a pod did and holds.
type Stats struct {
	// Requests counts generation requests answered in full.
	Requests uint64
	// Rejected counts generation requests answered with a 4xx error.
	Rejected uint64
	// Cancelled counts requests whose client went away, while waiting or
	// running, before the answer was complete.
	Cancelled uint64
	// Prefills counts prefills completed (a cancelled request may count).
	Prefills uint64
	// PromptTokens counts the prompt tokens of the prefills completed
	// (vLLM's prefix_cache_queries).
	PromptTokens uint64
	// CachedTokens counts the prompt tokens served from the prefix cache
	// (vLLM's prefix_cache_hits and the sum of usage cached_tokens).
	CachedTokens uint64
	// TransferredTokens counts the prompt tokens received from a remote
	// prefill (decode legs) beyond the local hit.
	TransferredTokens uint64
	// OutputTokens counts generated tokens sent.
	OutputTokens uint64
	// Running and Waiting are the requests in the running batch and in the
	// queue now.
	Running, Waiting int
	// CacheBlocks and CacheCapacity are the blocks cached now and the
	// cache's size.
	CacheBlocks, CacheCapacity int
	// EventBatches counts KV-event batches published; EventErrors those the
	// publisher refused.
	EventBatches, EventErrors uint64
}

// Stats returns a snapshot of the pod's counters and state.
func (p *Pod) Stats() Stats {
	s := Stats{
		Requests:          p.stats.requests.Load(),
		Rejected:          p.stats.rejected.Load(),
		Cancelled:         p.stats.cancelled.Load(),
		Prefills:          p.stats.prefills.Load(),
		PromptTokens:      p.stats.promptTokens.Load(),
		CachedTokens:      p.stats.cachedTokens.Load(),
		TransferredTokens: p.stats.transferred.Load(),
		OutputTokens:      p.stats.outputTokens.Load(),
	}
	s.Running, s.Waiting = p.sched.counts()
	s.CacheBlocks, s.CacheCapacity = p.cache.usage()
	s.EventBatches, s.EventErrors = p.cache.publishCounts()
	return s
}
