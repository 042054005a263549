package hierarchy

import "github.com/cellrouter/cellrouter/cachekey/blockhash"

// heldSet is the set of blocks a cell holds on any of its pods, each with
// its depth in its chain and the number of pods holding it. It is what the
// cell's summary is built from: the union of its pods' caches, enumerable
// in O(blocks) without walking every engine cache or the index. Blocks live
// in dense slices (a removal swaps the last block into the hole), so a
// generation's enumeration is a linear scan.
type heldSet struct {
	pos    map[blockhash.Hash]int32
	hashes []blockhash.Hash
	depths []int32
	counts []int32
}

// newHeldSet returns an empty set.
func newHeldSet() *heldSet {
	return &heldSet{pos: make(map[blockhash.Hash]int32)}
}

// Len returns the number of distinct blocks held.
func (s *heldSet) Len() int { return len(s.hashes) }

// store records that one more pod holds block h at the given 1-based depth.
func (s *heldSet) store(h blockhash.Hash, depth int) {
	if i, ok := s.pos[h]; ok {
		s.counts[i]++
		return
	}
	s.pos[h] = int32(len(s.hashes))
	s.hashes = append(s.hashes, h)
	s.depths = append(s.depths, int32(depth))
	s.counts = append(s.counts, 1)
}

// remove records that one pod dropped block h; the block leaves the set
// when no pod holds it. Removing an unknown block is a no-op.
func (s *heldSet) remove(h blockhash.Hash) {
	i, ok := s.pos[h]
	if !ok {
		return
	}
	if s.counts[i]--; s.counts[i] > 0 {
		return
	}
	last := int32(len(s.hashes) - 1)
	if i != last {
		s.hashes[i], s.depths[i], s.counts[i] = s.hashes[last], s.depths[last], s.counts[last]
		s.pos[s.hashes[i]] = i
	}
	s.hashes, s.depths, s.counts = s.hashes[:last], s.depths[:last], s.counts[:last]
	delete(s.pos, h)
}

// depth returns the depth of a held block and whether it is held.
func (s *heldSet) depth(h blockhash.Hash) (int, bool) {
	i, ok := s.pos[h]
	if !ok {
		return 0, false
	}
	return int(s.depths[i]), true
}

// forEach calls f for every held block with its depth, in no set order.
func (s *heldSet) forEach(f func(h blockhash.Hash, depth int)) {
	for i, h := range s.hashes {
		f(h, int(s.depths[i]))
	}
}
