package enginesim

import (
	"log/slog"
	"sync"
	"time"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/loadtest/engine"
)

// publisher is where a pod's KV-event batches go: a *vllmpub.Publisher, or
// a fake in tests. Publish is called with the cache lock held, in cache
// mutation order; it must not block on subscribers.
type publisher interface {
	Publish(b *events.Batch) (uint64, error)
}

// kvCache is a pod's paged prefix cache: the engine model of package
// engine, named by chained block hashes, plus the publishing of every
// change. Admission and publishing happen under one lock, so the event
// stream describes the cache's mutations in the order they happened, and a
// subscriber that applies it holds exactly what the cache holds.
type kvCache struct {
	hasher blockhash.Hasher
	seed   blockhash.Hash
	pod    string
	model  string
	log    *slog.Logger

	mu      sync.Mutex
	cache   *engine.Cache
	clock   int64 // LRU time: one tick per admission
	removed []blockhash.Hash
	pub     publisher // nil: events disabled

	batches   uint64 // batches published
	pubErrors uint64 // batches the publisher refused
}

// newKVCache returns an empty cache of cfg.Blocks blocks.
func newKVCache(cfg *Config, pod string, pub publisher, log *slog.Logger) *kvCache {
	return &kvCache{
		hasher: blockhash.Hasher{BlockSize: cfg.BlockSize},
		seed:   blockhash.Seed(blockhash.Keys{Model: cfg.Model}),
		pod:    pod,
		model:  cfg.Model,
		log:    log,
		cache:  engine.NewCache(cfg.Blocks),
		pub:    pub,
	}
}

// chain appends the chained hashes of the full blocks of tokens under the
// cache salt salt ("" for none) to dst: as in vLLM, a salt changes every
// block's hash (it seeds the first), so requests with different salts share
// no block.
func (k *kvCache) chain(tokens []uint32, salt string, dst []blockhash.Hash) []blockhash.Hash {
	seed := k.seed
	if salt != "" {
		seed = blockhash.Seed(blockhash.Identity(k.model, "", salt))
	}
	return k.hasher.Chain(seed, tokens, dst)
}

// lookup returns how many leading blocks of chain are cached, changing
// nothing.
func (k *kvCache) lookup(chain []blockhash.Hash) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.cache.Lookup(chain)
}

// commitResult is what one admission did.
type commitResult struct {
	matched, stored, removed int
}

// commit admits chain (the blocks of tokens) when its prefill completes:
// it stores the missing blocks, evicting least recently used ones, and
// publishes one batch with a BlockRemoved event for the evictions and a
// BlockStored event (hashes, parent, token ids, block size, medium GPU)
// for the new blocks. Nothing is published for a full hit. A chain that
// starts here under a cache salt carries it as vLLM does: as the first
// block's extra key.
func (k *kvCache) commit(chain []blockhash.Hash, tokens []uint32, salt string) commitResult {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.clock++
	adm := k.cache.Admit(k.clock, chain, k.removed)
	k.removed = adm.Removed
	res := commitResult{matched: adm.Matched, stored: len(adm.Stored), removed: len(adm.Removed)}
	if k.pub == nil || (len(adm.Stored) == 0 && len(adm.Removed) == 0) {
		return res
	}
	bs := k.hasher.BlockSize
	b := events.Batch{Pod: k.pod, Model: k.model, DPRank: -1, TS: float64(time.Now().UnixNano()) / 1e9}
	if len(adm.Removed) > 0 {
		b.Events = append(b.Events, events.Event{
			Kind:        events.KindBlockRemoved,
			BlockHashes: hashesU64(adm.Removed),
			Medium:      "GPU",
		})
	}
	if len(adm.Stored) > 0 {
		ev := events.Event{
			Kind:        events.KindBlockStored,
			BlockHashes: hashesU64(adm.Stored),
			TokenIDs:    tokens[adm.Matched*bs : (adm.Matched+len(adm.Stored))*bs],
			BlockSize:   bs,
			Medium:      "GPU",
		}
		if adm.Matched > 0 {
			ev.ParentHash, ev.HasParent = uint64(chain[adm.Matched-1]), true
		} else if salt != "" {
			ev.ExtraKeys = make([]events.BlockKeys, len(adm.Stored))
			ev.ExtraKeys[0] = events.BlockKeys{{Kind: events.KeyString, Text: salt}}
		}
		b.Events = append(b.Events, ev)
	}
	k.batches++
	if _, err := k.pub.Publish(&b); err != nil {
		k.pubErrors++
		k.log.Warn("enginesim: publish KV events", "pod", k.pod, "err", err)
	}
	return res
}

// hashesU64 returns hs as engine hashes.
func hashesU64(hs []blockhash.Hash) []uint64 {
	out := make([]uint64, len(hs))
	for i, h := range hs {
		out[i] = uint64(h)
	}
	return out
}

// usage returns the number of cached blocks and the capacity.
func (k *kvCache) usage() (used, capacity int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.cache.Len(), k.cache.Capacity()
}

// contents returns every cached block, parents before children.
func (k *kvCache) contents() []blockhash.Hash {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.cache.AppendContents(nil)
}

// publishCounts returns the batches published and refused.
func (k *kvCache) publishCounts() (batches, errors uint64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.batches, k.pubErrors
}
