package engine

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
)

// refEntry is one block of the naive reference cache.
type refEntry struct {
	hash, parent blockhash.Hash
	depth        int
	access       int64
}

// refCache is the naive reference model of Cache: a slice and linear scans,
// written straight from the documented semantics.
type refCache struct {
	capacity int
	entries  []refEntry
}

func (r *refCache) find(h blockhash.Hash) int {
	for i, e := range r.entries {
		if e.hash == h {
			return i
		}
	}
	return -1
}

func (r *refCache) lookup(chain []blockhash.Hash) int {
	m := 0
	for m < len(chain) && r.find(chain[m]) >= 0 {
		m++
	}
	return m
}

func (r *refCache) isLeaf(h blockhash.Hash) bool {
	for _, e := range r.entries {
		if e.parent == h {
			return false
		}
	}
	return true
}

func (r *refCache) admit(now int64, chain []blockhash.Hash) (matched int, stored, removed []blockhash.Hash) {
	m := r.lookup(chain)
	for _, h := range chain[:m] {
		r.entries[r.find(h)].access = now
	}
	for j := m; j < len(chain); j++ {
		if chain[j] == 0 || r.find(chain[j]) >= 0 {
			break
		}
		var parent blockhash.Hash
		if j > 0 {
			parent = chain[j-1]
		}
		if len(r.entries) >= r.capacity {
			victim := -1
			for i, e := range r.entries {
				if (j > 0 && e.hash == parent) || !r.isLeaf(e.hash) {
					continue
				}
				if victim < 0 || refBefore(e, r.entries[victim]) {
					victim = i
				}
			}
			if victim < 0 {
				break
			}
			removed = append(removed, r.entries[victim].hash)
			r.entries = slices.Delete(r.entries, victim, victim+1)
		}
		r.entries = append(r.entries, refEntry{hash: chain[j], parent: parent, depth: j + 1, access: now})
		stored = append(stored, chain[j])
	}
	return m, stored, removed
}

func refBefore(a, b refEntry) bool {
	if a.access != b.access {
		return a.access < b.access
	}
	if a.depth != b.depth {
		return a.depth > b.depth
	}
	return a.hash < b.hash
}

// randomChain returns a chain of chained hashes over a small alphabet, so
// that random chains share prefixes often.
func randomChain(rng *rand.Rand, maxLen, alphabet int) []blockhash.Hash {
	n := 1 + rng.IntN(maxLen)
	chain := make([]blockhash.Hash, n)
	var h uint64 = 0x12345
	for i := range chain {
		h = (h^uint64(1+rng.IntN(alphabet)))*0x9e3779b97f4a7c15 + 0x632be59bd9b4e019
		h ^= h >> 29
		chain[i] = blockhash.Hash(h | 1)
	}
	return chain
}

func TestCacheAgainstReference(t *testing.T) {
	for seed := uint64(1); seed <= 60; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		capacity := 1 + rng.IntN(24)
		c := NewCache(capacity)
		ref := &refCache{capacity: capacity}
		var now int64
		var removedBuf []blockhash.Hash
		for step := 0; step < 400; step++ {
			if rng.IntN(3) > 0 { // leave ties often
				now += int64(rng.IntN(3))
			}
			chain := randomChain(rng, 10, 3)
			if got, want := c.Lookup(chain), ref.lookup(chain); got != want {
				t.Fatalf("seed %d step %d: Lookup got %d, want %d", seed, step, got, want)
			}
			ad := c.Admit(now, chain, removedBuf)
			removedBuf = ad.Removed
			m, stored, removed := ref.admit(now, chain)
			if ad.Matched != m || !slices.Equal(ad.Stored, stored) || !slices.Equal(ad.Removed, removed) {
				t.Fatalf("seed %d step %d (cap %d): Admit got matched %d stored %v removed %v, want %d %v %v",
					seed, step, capacity, ad.Matched, ad.Stored, ad.Removed, m, stored, removed)
			}
			checkInvariants(t, c, ref)
		}
	}
}

// checkInvariants compares the content with the reference and checks the
// cache is prefix-closed, within capacity, and its heap holds exactly the leaves.
func checkInvariants(t *testing.T, c *Cache, ref *refCache) {
	t.Helper()
	got := c.AppendContents(nil)
	var want []blockhash.Hash
	for _, e := range ref.entries {
		want = append(want, e.hash)
	}
	gs, ws := slices.Clone(got), slices.Clone(want)
	slices.Sort(gs)
	slices.Sort(ws)
	if !slices.Equal(gs, ws) {
		t.Fatalf("contents got %v, want %v", gs, ws)
	}
	if c.Len() > c.Capacity() {
		t.Fatalf("got %d blocks, want <= capacity %d", c.Len(), c.Capacity())
	}
	pos := map[blockhash.Hash]int{}
	for i, h := range got {
		pos[h] = i
	}
	leaves := 0
	for _, n := range c.nodes {
		if n.hash == 0 {
			continue
		}
		if n.parent != none {
			p := c.nodes[n.parent]
			if p.hash == 0 || pos[p.hash] >= pos[n.hash] {
				t.Fatalf("block %v: parent missing or listed after it", n.hash)
			}
		}
		if (n.children == 0) != (n.heapPos != none) {
			t.Fatalf("block %v: children %d but heapPos %d", n.hash, n.children, n.heapPos)
		}
		if n.children == 0 {
			leaves++
		}
	}
	if leaves != len(c.leaves.items) {
		t.Fatalf("got %d leaves in the heap, want %d", len(c.leaves.items), leaves)
	}
}
