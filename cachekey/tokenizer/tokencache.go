package tokenizer

import (
	"sync"
	"sync/atomic"

	"github.com/zeebo/xxh3"
)

// CacheKey names one cached tokenization: a 128-bit hash of what was
// tokenized and of everything its ids depend on (the tokenizer, the model,
// the flags). Two different inputs share a key with probability 2^-128, so
// the cache stores keys, not the text.
type CacheKey struct{ Hi, Lo uint64 }

// KeyOf returns the key of s under seed (xxh3-128).
func KeyOf(seed uint64, s string) CacheKey {
	h := xxh3.HashString128Seed(s, seed)
	return CacheKey{Hi: h.Hi, Lo: h.Lo}
}

// TokenCache is a bounded least-recently-used cache of token ids by
// CacheKey. It is split into shards by key, each with its own lock, list
// and share of the byte budget, so concurrent lookups rarely contend.
// Memory is bounded by MaxBytes: an entry costs its ids (4 bytes each) plus
// entryOverhead. A nil *TokenCache is valid and caches nothing. It is safe
// for concurrent use.
type TokenCache struct {
	shards       [cacheShards]cacheShard
	hits, misses atomic.Uint64
}

// cacheShards is the number of shards: a power of two, a few per core.
const cacheShards = 16

// entryOverhead approximates an entry's bytes besides its ids: the list
// node, the slice header and the map slot.
const entryOverhead = 96

type cacheShard struct {
	mu       sync.Mutex
	m        map[CacheKey]*lruEntry
	head     lruEntry // sentinel: head.next is the most recently used
	bytes    int64
	maxBytes int64
	_        [40]byte // keeps neighbouring shards' locks off one cache line
}

type lruEntry struct {
	key        CacheKey
	ids        []uint32
	prev, next *lruEntry
}

// CacheStats are a TokenCache's counters.
type CacheStats struct {
	// Hits and Misses count Get calls since the cache was made.
	Hits, Misses uint64
	// Entries and Bytes are what the cache holds now.
	Entries int
	Bytes   int64
}

// NewTokenCache returns a cache bounded by maxBytes, or nil (no caching)
// when maxBytes is zero or less.
func NewTokenCache(maxBytes int64) *TokenCache {
	if maxBytes <= 0 {
		return nil
	}
	c := &TokenCache{}
	for i := range c.shards {
		s := &c.shards[i]
		s.m = map[CacheKey]*lruEntry{}
		s.head.next, s.head.prev = &s.head, &s.head
		s.maxBytes = max(1, maxBytes/cacheShards)
	}
	return c
}

func (c *TokenCache) shard(k CacheKey) *cacheShard { return &c.shards[k.Lo%cacheShards] }

// Get appends the cached ids of k to dst and reports whether k was cached;
// the entry becomes the most recently used.
func (c *TokenCache) Get(k CacheKey, dst []uint32) ([]uint32, bool) {
	if c == nil {
		return dst, false
	}
	s := c.shard(k)
	s.mu.Lock()
	e, ok := s.m[k]
	if ok {
		s.unlink(e)
		s.pushFront(e)
		dst = append(dst, e.ids...)
	}
	s.mu.Unlock()
	if ok {
		c.hits.Add(1)
	} else {
		c.misses.Add(1)
	}
	return dst, ok
}

// Put stores a copy of ids under k, evicting the least recently used
// entries of k's shard until it fits. An entry larger than a shard's
// budget is not stored.
func (c *TokenCache) Put(k CacheKey, ids []uint32) {
	if c == nil {
		return
	}
	cost := int64(4*len(ids) + entryOverhead)
	s := c.shard(k)
	if cost > s.maxBytes {
		return
	}
	e := &lruEntry{key: k, ids: append([]uint32(nil), ids...)}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.m[k]; ok {
		s.unlink(old)
		s.bytes -= int64(4*len(old.ids) + entryOverhead)
	}
	for s.bytes+cost > s.maxBytes && s.head.prev != &s.head {
		victim := s.head.prev
		s.unlink(victim)
		delete(s.m, victim.key)
		s.bytes -= int64(4*len(victim.ids) + entryOverhead)
	}
	s.m[k] = e
	s.pushFront(e)
	s.bytes += cost
}

// Stats returns the counters and the current size.
func (c *TokenCache) Stats() CacheStats {
	if c == nil {
		return CacheStats{}
	}
	st := CacheStats{Hits: c.hits.Load(), Misses: c.misses.Load()}
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		st.Entries += len(s.m)
		st.Bytes += s.bytes
		s.mu.Unlock()
	}
	return st
}

func (s *cacheShard) unlink(e *lruEntry) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

func (s *cacheShard) pushFront(e *lruEntry) {
	e.prev, e.next = &s.head, s.head.next
	s.head.next.prev = e
	s.head.next = e
}
