package engine

import (
	"fmt"
	"slices"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
)

// none is the null node index.
const none int32 = -1

// node is one cached block. Nodes live in an arena and refer to each other by
// index, so the cache holds no pointers for the garbage collector to scan.
type node struct {
	hash     blockhash.Hash // 0 when the node is free
	access   int64          // time of the last request that used the block
	parent   int32          // arena index of the parent block, or none
	children int32          // number of cached children
	depth    int32          // 1-based position in its chain
	heapPos  int32          // position in the leaf heap, or none
}

// Admission is what Admit did for one request.
type Admission struct {
	// Matched is the number of leading blocks of the chain that were
	// already cached (the prefix cache hit), before anything was stored.
	Matched int
	// Stored are the blocks newly stored, in chain order: a sub-slice of the
	// chain passed to Admit (chain[Matched:Matched+len(Stored)]), so it is
	// valid only as long as that chain is.
	Stored []blockhash.Hash
	// Removed are the blocks evicted to make room, in eviction order (a
	// block's descendants always come before it). It is the removed buffer
	// passed to Admit, reused from its start.
	Removed []blockhash.Hash
	// RemovedPlaces, when the cache was given a page size (SetPageSize), has
	// where each removed block sat: RemovedPlaces[i] for Removed[i]. Like
	// Removed it is reused by the next Admit.
	RemovedPlaces []Place
}

// Place is a block's position in its chain (0 for a first block) and the
// hash of the first block of its page: the block at Pos - Pos%pageSize.
type Place struct {
	Pos  int32
	Page blockhash.Hash
}

// Cache is a paged prefix cache of fixed capacity with leaf-first LRU
// eviction. The zero Cache is not usable; call NewCache.
type Cache struct {
	capacity int
	nodes    []node
	free     []int32
	index    map[blockhash.Hash]int32
	leaves   leafHeap

	pageSize int     // > 0: evictions report their Place
	places   []Place // RemovedPlaces' buffer
}

// SetPageSize makes Admit report the place of every block it evicts
// (Admission.RemovedPlaces) for pages of n positions; 0 turns it off.
func (c *Cache) SetPageSize(n int) { c.pageSize = max(0, n) }

// NewCache returns an empty cache of capacityBlocks blocks. It panics if
// capacityBlocks < 1: callers validate their configuration first.
func NewCache(capacityBlocks int) *Cache {
	if capacityBlocks < 1 {
		panic(fmt.Sprintf("engine: capacity %d blocks, want >= 1", capacityBlocks))
	}
	prealloc := min(capacityBlocks, 1<<20)
	c := &Cache{
		capacity: capacityBlocks,
		nodes:    make([]node, 0, prealloc),
		index:    make(map[blockhash.Hash]int32, prealloc),
	}
	c.leaves.nodes = &c.nodes
	return c
}

// Capacity returns the block budget.
func (c *Cache) Capacity() int { return c.capacity }

// Len returns the number of cached blocks.
func (c *Cache) Len() int { return len(c.index) }

// Contains reports whether block h is cached.
func (c *Cache) Contains(h blockhash.Hash) bool {
	_, ok := c.index[h]
	return ok
}

// Reset empties the cache, keeping its memory for reuse.
func (c *Cache) Reset() {
	clear(c.index)
	c.nodes = c.nodes[:0]
	c.free = c.free[:0]
	c.leaves.items = c.leaves.items[:0]
}

// Lookup returns the number of leading blocks of chain that are cached. It
// changes nothing (no access time is updated).
func (c *Cache) Lookup(chain []blockhash.Hash) int {
	for i, h := range chain {
		if _, ok := c.index[h]; !ok {
			return i
		}
	}
	return len(chain)
}

// Admit serves one request at time now: it marks the cached prefix of chain
// as used at now, then stores the rest of chain, evicting the least recently
// used leaf for every block it stores once the cache is full. It never evicts
// the request's own blocks; if nothing else is evictable it stores no more
// (the tail of the chain stays uncached). Evicted hashes are appended to
// removed[:0]. Admit allocates only when the cache grows its arena for the
// first time or removed lacks capacity.
func (c *Cache) Admit(now int64, chain []blockhash.Hash, removed []blockhash.Hash) Admission {
	removed = removed[:0]
	c.places = c.places[:0]
	tail := none
	m := 0
	for ; m < len(chain); m++ {
		i, ok := c.index[chain[m]]
		if !ok {
			break
		}
		c.nodes[i].access = now
		tail = i
	}
	// Pin the tail of the request's path: the only leaf on it.
	if tail != none && c.nodes[tail].heapPos != none {
		c.leaves.remove(c.nodes[tail].heapPos)
	}
	j := m
	for ; j < len(chain); j++ {
		h := chain[j]
		if h == 0 {
			break // the reserved hash names no block
		}
		if _, ok := c.index[h]; ok {
			break // a hash seen at another position: a collision; stop here
		}
		if len(c.index) >= c.capacity {
			if len(c.leaves.items) == 0 {
				break
			}
			removed = append(removed, c.evict(c.leaves.pop(), tail))
		}
		n := c.alloc()
		c.nodes[n] = node{hash: h, access: now, parent: tail, depth: int32(j + 1), heapPos: none}
		c.index[h] = n
		if tail != none {
			c.nodes[tail].children++
		}
		tail = n
	}
	if tail != none && c.nodes[tail].children == 0 {
		c.leaves.push(tail)
	}
	ad := Admission{Matched: m, Stored: chain[m:j], Removed: removed}
	if c.pageSize > 0 {
		ad.RemovedPlaces = c.places
	}
	return ad
}

// evict removes leaf v (already out of the heap) and returns its hash. Its
// parent becomes a leaf when v was its last child, unless the parent is the
// pinned tail of the request being admitted.
func (c *Cache) evict(v, pinned int32) blockhash.Hash {
	n := &c.nodes[v]
	h := n.hash
	if c.pageSize > 0 {
		pos := n.depth - 1
		a := v
		for k := pos % int32(c.pageSize); k > 0; k-- {
			a = c.nodes[a].parent // the leaf's ancestors are all cached
		}
		c.places = append(c.places, Place{Pos: pos, Page: c.nodes[a].hash})
	}
	if p := n.parent; p != none {
		c.nodes[p].children--
		if c.nodes[p].children == 0 && p != pinned {
			c.leaves.push(p)
		}
	}
	delete(c.index, h)
	*n = node{parent: none, heapPos: none}
	c.free = append(c.free, v)
	return h
}

// alloc returns a free arena slot.
func (c *Cache) alloc() int32 {
	if k := len(c.free); k > 0 {
		v := c.free[k-1]
		c.free = c.free[:k-1]
		return v
	}
	c.nodes = append(c.nodes, node{})
	return int32(len(c.nodes) - 1)
}

// AppendContents appends every cached block to dst, parents before children
// (by depth, then hash), and returns the extended slice. Storing them in this
// order rebuilds the cache's content in an index without breaking its
// prefix-closed contract.
func (c *Cache) AppendContents(dst []blockhash.Hash) []blockhash.Hash {
	type entry struct {
		depth int32
		hash  blockhash.Hash
	}
	es := make([]entry, 0, len(c.index))
	for _, n := range c.nodes {
		if n.hash != 0 {
			es = append(es, entry{n.depth, n.hash})
		}
	}
	slices.SortFunc(es, func(a, b entry) int {
		if a.depth != b.depth {
			return int(a.depth - b.depth)
		}
		if a.hash < b.hash {
			return -1
		}
		if a.hash > b.hash {
			return 1
		}
		return 0
	})
	for _, e := range es {
		dst = append(dst, e.hash)
	}
	return dst
}

// PlaceOf returns where cached block h sits in its chain, for pages of
// pageSize positions; ok is false when h is not cached.
func (c *Cache) PlaceOf(h blockhash.Hash, pageSize int) (p Place, ok bool) {
	v, ok := c.index[h]
	if !ok || pageSize < 1 {
		return Place{}, false
	}
	pos := c.nodes[v].depth - 1
	for k := pos % int32(pageSize); k > 0; k-- {
		v = c.nodes[v].parent
	}
	return Place{Pos: pos, Page: c.nodes[v].hash}, true
}
