package gossip

import (
	"math"
	"math/bits"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
)

// Summary is one generation of a cell's coarse prefix summary: a Bloom filter
// of M bits and K hash functions over the cell's sampled chained block
// hashes. A Summary is immutable once built, so any number of goroutines may
// query it at once.
//
// Bit positions come straight from the chained hash, which is already a
// uniform 64-bit xxh3 output: enhanced double hashing with h1 = the hash and
// h2 = a 64-bit finaliser of it (odd), position i = the high 64 bits of
// (h1 + i*h2) * M. There is no rehashing and no division, so a membership
// test costs K dependent-free memory reads (see doc.go for why this beats
// running bloom/v3's murmur3 and modulo per test). The wire version byte
// pins this scheme, since a receiver must compute the same positions.
type Summary struct {
	params   Params
	w        []uint64
	elements uint64
}

// newSummary returns an empty summary with params p (which must be valid).
func newSummary(p Params) *Summary {
	return &Summary{params: p, w: make([]uint64, p.M/64)}
}

// summaryFromWords returns a summary over a copy of words, which must hold
// exactly p.M/64 words.
func summaryFromWords(p Params, words []uint64, elements uint64) *Summary {
	w := make([]uint64, len(words))
	copy(w, words)
	return &Summary{params: p, w: w, elements: elements}
}

// probe returns the first position seed and the step of h's probe sequence.
func probe(h blockhash.Hash) (h1, h2 uint64) {
	h1 = uint64(h)
	// The splitmix64 finaliser: h2 depends on every bit of h but is not a
	// linear function of h1, and it is forced odd.
	x := h1 ^ 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	x ^= x >> 31
	return h1, x | 1
}

// reduce maps a uniform 64-bit x to [0, m) without division.
func reduce(x, m uint64) uint64 {
	hi, _ := bits.Mul64(x, m)
	return hi
}

// Params returns the shape of the summary.
func (s *Summary) Params() Params { return s.params }

// Elements returns how many sampled hashes the builder inserted (duplicates
// counted); it is informational and travels with the summary.
func (s *Summary) Elements() uint64 { return s.elements }

// SizeBytes returns the size of the filter's bits in bytes.
func (s *Summary) SizeBytes() int { return int(s.params.M / 8) }

// words returns the filter's words; callers must not modify them.
func (s *Summary) words() []uint64 { return s.w }

// Words returns a copy of the filter's bits, bit i in word i/64 at position
// i%64.
func (s *Summary) Words() []uint64 {
	w := make([]uint64, len(s.words()))
	copy(w, s.words())
	return w
}

// OnesCount returns the number of set bits.
func (s *Summary) OnesCount() int {
	n := 0
	for _, w := range s.words() {
		n += bits.OnesCount64(w)
	}
	return n
}

// EstimatedFalsePositiveRate returns fill^K, the probability that a hash the
// cell never inserted tests positive, from the filter's actual fill.
func (s *Summary) EstimatedFalsePositiveRate() float64 {
	fill := float64(s.OnesCount()) / float64(s.params.M)
	return math.Pow(fill, float64(s.params.K))
}

// Equal reports whether s and o have the same Params and the same bits.
func (s *Summary) Equal(o *Summary) bool {
	if s == nil || o == nil {
		return s == o
	}
	if s.params != o.params {
		return false
	}
	a, b := s.words(), o.words()
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// add inserts h.
func (s *Summary) add(h blockhash.Hash) { s.visit(h, true) }

// visit walks h's K bit positions in its block. With set it sets each bit
// and returns true; without, it returns whether every bit is already set,
// stopping at the first clear one. Insertion and test share this one walk so
// they can never disagree on where h's bits are.
func (s *Summary) visit(h blockhash.Hash, set bool) bool {
	base, x := s.block(h)
	w := s.w[base : base+blockWords]
	for i := range s.params.K {
		if i > 0 && i%bitsPerDraw == 0 {
			x = remix(x)
		}
		p := x & (BlockBits - 1)
		x >>= 9
		bit := uint64(1) << (p & 63)
		if set {
			w[p>>6] |= bit
		} else if w[p>>6]&bit == 0 {
			return false
		}
	}
	return true
}

// BlockBits is the size of a filter block: all the bits of one key lie in
// one block of 512 bits (eight words, one cache line), so a membership test
// costs one memory miss instead of one per hash function. Searching 64
// cells' summaries is then a few dozen misses, not hundreds.
const BlockBits = 512

const (
	blockWords  = BlockBits / 64
	bitsPerDraw = 7 // 9-bit positions in one 64-bit draw
)

// block returns the first word of h's block and the draw its in-block
// positions come from.
func (s *Summary) block(h blockhash.Hash) (base uint64, x uint64) {
	h1, h2 := probe(h)
	return reduce(h1, s.params.M/BlockBits) * blockWords, h2
}

// remix derives the next draw of in-block positions.
func remix(x uint64) uint64 {
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	return x ^ (x >> 31)
}

// MayContain reports whether h may have been inserted (false means surely
// not).
func (s *Summary) MayContain(h blockhash.Hash) bool { return s.visit(h, false) }

// Depth estimates how many leading blocks of chain (chain[i] is the chained
// hash at depth i+1) the cell holds: the deepest sampled depth whose hash
// tests positive, found by binary search over the sampled depths of the
// chain. It returns 0 when even the first sampled depth misses.
//
// Binary search is exact when hits are monotone, which prefix closure gives:
// a cell that holds the block at depth d holds every block before it, so
// every shallower sampled depth hits too. Two things break monotonicity and
// make the answer an estimate: a false positive deep in the chain (which
// can only raise the answer, with probability about the filter's false-
// positive rate per test), and a cell whose engine evicted a parent before
// a child. The true depth is at least the answer when the answer is right
// and less than the next sampled depth, so Depth under-reports by at most
// Stride-1 blocks; the probe that follows gives the exact figure.
//
// Depth does O(log(len(chain)/Stride)) filter tests and allocates nothing.
func (s *Summary) Depth(chain []blockhash.Hash) int {
	p := s.params
	n := p.sampledCount(len(chain))
	if n == 0 || !s.MayContain(chain[p.sampledAt(0)-1]) {
		// Most cells hold not even a request's first block: one test
		// settles them, instead of a whole binary search.
		return 0
	}
	return s.depthFrom(chain, 0, n)
}

// depthFrom continues Depth's binary search from the interval (lo, hi):
// sampled depth lo hits, hi misses or is past the chain.
func (s *Summary) depthFrom(chain []blockhash.Hash, lo, hi int) int {
	p := s.params
	for hi-lo > 1 {
		mid := int(uint(lo+hi) >> 1)
		if s.MayContain(chain[p.sampledAt(mid)-1]) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return p.sampledAt(lo)
}

// diffWords returns the positions of the bits that differ between old and
// new, which must have equal Params, as a run-optimised roaring bitmap.
func diffWords(old, new *Summary) *roaring.Bitmap {
	a, b := old.words(), new.words()
	rb := roaring.New()
	buf := make([]uint32, 0, 1024)
	for i := range a {
		x := a[i] ^ b[i]
		for x != 0 {
			t := bits.TrailingZeros64(x)
			buf = append(buf, uint32(i*64+t))
			x &= x - 1
		}
		if len(buf) >= 1000 {
			rb.AddMany(buf)
			buf = buf[:0]
		}
	}
	rb.AddMany(buf)
	rb.RunOptimize()
	return rb
}

// withFlipped returns a new summary equal to s with the bits at the
// positions in flipped inverted; every position must be below s.Params().M.
func (s *Summary) withFlipped(flipped *roaring.Bitmap, elements uint64) *Summary {
	out := summaryFromWords(s.params, s.words(), elements)
	w := out.words()
	it := flipped.ManyIterator()
	buf := make([]uint32, 256)
	for {
		n := it.NextMany(buf)
		if n == 0 {
			break
		}
		for _, pos := range buf[:n] {
			w[pos/64] ^= 1 << (pos % 64)
		}
	}
	return out
}
