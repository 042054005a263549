package tokenizer

import (
	"encoding/binary"
	"hash/maphash"
	"math/bits"
	"strings"
	"sync/atomic"
)

// wordCache remembers the token ids of recently encoded pieces. It is a
// two-way set-associative table of atomic pointers: a piece hashes to a
// bucket of two slots; a lookup compares both, a store fills an empty slot
// or overwrites the one that the hash's next bit picks. Two ways keep two
// frequent pieces that share a bucket from evicting each other on every
// prompt. Readers never lock and never see a torn entry, since entries are
// immutable once published. Natural text has a few thousand frequent
// words, so a table of some thousands of slots hits most of the time.
type wordCache struct {
	seed  uint64
	mask  uint64
	slots []atomic.Pointer[cacheEntry]
}

// cacheEntry is one cached piece and its ids; both are never modified.
type cacheEntry struct {
	piece string
	ids   []uint32
}

// maxCachedPiece is the longest piece, in bytes, worth caching. Longer
// pieces are rare, and SentencePiece-style segments can be whole prompts.
const maxCachedPiece = 64

// newWordCache returns a cache with size slots rounded up to a power of
// two, or nil (no caching) when size is zero or less.
func newWordCache(size int) *wordCache {
	if size <= 0 {
		return nil
	}
	n := 2
	for n < size {
		n <<= 1
	}
	return &wordCache{seed: maphash.Comparable(maphash.MakeSeed(), 0), mask: uint64(n - 1), slots: make([]atomic.Pointer[cacheEntry], n)}
}

// get returns the cached ids of piece. The caller must not modify them.
func (c *wordCache) get(piece string) ([]uint32, bool) {
	if c == nil || len(piece) > maxCachedPiece {
		return nil, false
	}
	h := c.hash(piece) & c.mask &^ 1
	if e := c.slots[h].Load(); e != nil && e.piece == piece {
		return e.ids, true
	}
	if e := c.slots[h+1].Load(); e != nil && e.piece == piece {
		return e.ids, true
	}
	return nil, false
}

// put stores copies of piece and ids.
func (c *wordCache) put(piece string, ids []uint32) {
	if c == nil || len(piece) > maxCachedPiece {
		return
	}
	e := &cacheEntry{piece: strings.Clone(piece), ids: append([]uint32(nil), ids...)}
	full := c.hash(piece)
	h := full & c.mask &^ 1
	switch {
	case c.slots[h].Load() == nil:
	case c.slots[h+1].Load() == nil:
		h++
	default:
		// The bit above the bucket index chooses the victim, so pieces of
		// one bucket do not always evict the same way.
		h += (full >> 32) & 1
	}
	c.slots[h].Store(e)
}

// hash is a fast seeded hash of a short piece: eight bytes at a time,
// mixed by 128-bit multiplication (the wyhash folding step). A random seed
// per cache keeps collisions unpredictable; a collision only costs a miss.
func (c *wordCache) hash(s string) uint64 {
	const k0, k1 = 0xa0761d6478bd642f, 0xe7037ed1a0b428db
	h := c.seed ^ uint64(len(s))*k0
	for len(s) >= 8 {
		hi, lo := bits.Mul64(h^binary.LittleEndian.Uint64([]byte(s[:8])), k1)
		h = hi ^ lo
		s = s[8:]
	}
	var tail uint64
	for i := 0; i < len(s); i++ {
		tail |= uint64(s[i]) << (8 * i)
	}
	hi, lo := bits.Mul64(h^tail^k0, k1)
	return hi ^ lo
}
