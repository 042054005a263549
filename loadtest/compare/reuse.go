package compare

import (
	"fmt"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/loadtest/engine"
	"github.com/cellrouter/cellrouter/loadtest/replay"
	"github.com/cellrouter/cellrouter/loadtest/trace"
)

// Reuse is the prefix reuse of a trace slice under one cache model.
type Reuse struct {
	// PromptTokens and CachedTokens sum the slice's prompts and their hits.
	PromptTokens, CachedTokens int64
	// Ratio is CachedTokens / PromptTokens.
	Ratio float64
}

// ReachableReuse returns the cached-token ratio an ideal router reaches on
// recs: the slice replayed in arrival order through ONE engine cache
// (package engine, leaf-first LRU) with the whole fleet's capacity,
// capacityBlocks blocks of blockSize tokens, hashed as the engines hash
// (seed Keys{Model: model}). Each request hits the cached prefix of its
// block chain, never its last token (as vLLM and enginesim recompute the
// last block of a full hit), then stores its blocks. It is what a router
// that could pool every pod's cache would get; a real fleet also loses
// hits to requests that arrive while the prompt they share is still being
// prefilled, which this sequential model does not see.
func ReachableReuse(recs []trace.Record, model string, blockSize, capacityBlocks int) (Reuse, error) {
	h, err := blockhash.NewHasher(blockSize)
	if err != nil {
		return Reuse{}, fmt.Errorf("compare: %v", err)
	}
	if capacityBlocks < 1 {
		return Reuse{}, fmt.Errorf("compare: capacity %d blocks, want >= 1", capacityBlocks)
	}
	seed := blockhash.Seed(blockhash.Keys{Model: model})
	c := engine.NewCache(capacityBlocks)
	var r Reuse
	var tokens []uint32
	var chain, removed []blockhash.Hash
	for i, rec := range recs {
		tokens = replay.PromptTokens(tokens[:0], rec)
		chain = h.Chain(seed, tokens, chain[:0])
		hit := c.Lookup(chain)
		if hit*blockSize >= len(tokens) {
			hit = (len(tokens) - 1) / blockSize
		}
		r.PromptTokens += int64(len(tokens))
		r.CachedTokens += int64(hit * blockSize)
		adm := c.Admit(int64(i), chain, removed)
		removed = adm.Removed
	}
	if r.PromptTokens > 0 {
		r.Ratio = float64(r.CachedTokens) / float64(r.PromptTokens)
	}
	return r, nil
}
