package cell

import (
	"container/list"
	"encoding/binary"
	"sync"

	"github.com/zeebo/xxh3"

	"github.com/cellrouter/cellrouter/cell/pipeline"
)

// remoteTokenCacheTokens is how many token ids the cell keeps from remote
// /tokenize answers (4 MiB of ids). A remote call costs a round trip to a
// pod (about 2 ms), so a prompt seen again (a retried request, a probe
// followed by its hand-off, a repeated system prompt) skips it.
const remoteTokenCacheTokens = 1 << 20

// tokenKey identifies a tokenization: a 128-bit hash of the model, the
// kind (prompt or chat) and the text, so the cache holds no prompt text.
type tokenKey xxh3.Uint128

// keyOf hashes what decides a request's token ids. Every variable-length
// part is length-prefixed, so two different requests never write the same
// byte stream.
func keyOf(req *pipeline.Request) tokenKey {
	h := xxh3.New()
	var n [9]byte
	str := func(s string) {
		binary.LittleEndian.PutUint64(n[:8], uint64(len(s)))
		h.Write(n[:8])
		h.WriteString(s)
	}
	str(req.Model)
	if req.Chat {
		n[8] = 1
	} else {
		n[8] = 0
	}
	h.Write(n[8:9])
	if !req.Chat {
		str(req.Prompt)
		return tokenKey(h.Sum128())
	}
	binary.LittleEndian.PutUint64(n[:8], uint64(len(req.Messages)))
	h.Write(n[:8])
	for _, m := range req.Messages {
		str(m.Role)
		str(m.Content)
	}
	return tokenKey(h.Sum128())
}

// tokenCache is a least-recently-used cache of token ids, bounded by the
// total number of ids it holds. It is safe for concurrent use; the slices
// it stores and returns are never modified.
type tokenCache struct {
	mu     sync.Mutex
	budget int
	used   int
	lru    list.List // of *tokenEntry, most recently used first
	byKey  map[tokenKey]*list.Element
}

type tokenEntry struct {
	key tokenKey
	ids []uint32
}

// newTokenCache returns a cache of at most budget ids, or nil (no caching)
// when budget is zero or less.
func newTokenCache(budget int) *tokenCache {
	if budget <= 0 {
		return nil
	}
	return &tokenCache{budget: budget, byKey: map[tokenKey]*list.Element{}}
}

// get returns the ids cached under k. The caller must not modify them.
func (c *tokenCache) get(k tokenKey) ([]uint32, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byKey[k]
	if !ok {
		return nil, false
	}
	c.lru.MoveToFront(e)
	return e.Value.(*tokenEntry).ids, true
}

// put stores ids under k, evicting the least recently used entries to stay
// within the budget. A tokenization larger than the whole budget is not
// kept. put keeps ids; the caller must not modify them afterwards.
func (c *tokenCache) put(k tokenKey, ids []uint32) {
	if c == nil || len(ids) > c.budget {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byKey[k]; ok {
		c.lru.MoveToFront(e)
		return
	}
	for c.used+len(ids) > c.budget {
		last := c.lru.Back()
		old := last.Value.(*tokenEntry)
		c.lru.Remove(last)
		delete(c.byKey, old.key)
		c.used -= len(old.ids)
	}
	c.byKey[k] = c.lru.PushFront(&tokenEntry{key: k, ids: ids})
	c.used += len(ids)
}
