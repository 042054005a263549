package tokenizer

// mergeHeap merges the symbols of word in place like mergeSmall, for long
// words, and returns the new length. The symbols form a doubly linked list
// over their original positions; a binary min-heap holds candidate merges
// keyed by (rank, position), so ties go to the leftmost pair. Entries made
// stale by an earlier merge are skipped when popped: a candidate is applied
// only if its left symbol is alive, has a right neighbour and the pair they
// form now still has the candidate's rank (ranks are unique per pair). This
// is the algorithm of the tokenizers library, O(n log n) per word.
func mergeHeap(m *bpeModel, word []uint32) int {
	n := len(word)
	prev := make([]int32, n)
	next := make([]int32, n)
	alive := make([]bool, n)
	h := make(minHeap, 0, n)
	for i := range word {
		prev[i], next[i], alive[i] = int32(i-1), int32(i+1), true
		if i+1 < n {
			if mg := m.rank(word[i], word[i+1]); mg.rank != noRank {
				h.push(uint64(mg.rank)<<32 | uint64(i))
			}
		}
	}
	next[n-1] = -1
	for len(h) > 0 {
		top := h.pop()
		rank, pos := uint32(top>>32), int32(uint32(top))
		if !alive[pos] || next[pos] < 0 {
			continue
		}
		right := next[pos]
		mg := m.rank(word[pos], word[right])
		if mg.rank != rank {
			continue
		}
		word[pos] = mg.id
		alive[right] = false
		next[pos] = next[right]
		if next[pos] >= 0 {
			prev[next[pos]] = pos
			if nm := m.rank(word[pos], word[next[pos]]); nm.rank != noRank {
				h.push(uint64(nm.rank)<<32 | uint64(pos))
			}
		}
		if p := prev[pos]; p >= 0 {
			if pm := m.rank(word[p], word[pos]); pm.rank != noRank {
				h.push(uint64(pm.rank)<<32 | uint64(p))
			}
		}
	}
	out := 0
	for i := int32(0); i >= 0; i = next[i] {
		word[out] = word[i]
		out++
	}
	return out
}

// minHeap is a binary min-heap of packed (rank << 32 | position) keys.
type minHeap []uint64

func (h *minHeap) push(x uint64) {
	*h = append(*h, x)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if s[p] <= s[i] {
			break
		}
		s[p], s[i] = s[i], s[p]
		i = p
	}
}

func (h *minHeap) pop() uint64 {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s = s[:last]
	for i := 0; ; {
		l, r, min := 2*i+1, 2*i+2, i
		if l < len(s) && s[l] < s[min] {
			min = l
		}
		if r < len(s) && s[r] < s[min] {
			min = r
		}
		if min == i {
			break
		}
		s[i], s[min] = s[min], s[i]
		i = min
	}
	*h = s
	return top
}
