package index

import "sync/atomic"

// heldCounts are the pods' numbers of held blocks, packed (eight to a
// cache line) because every decision reads all of them; Apply adds a
// batch's changes once per run of ops of one pod (heldDelta), so writers
// of different pods seldom touch a line at the same time.
type heldCounts [MaxPods]atomic.Int64

// heldDelta gathers the held-count changes of one Apply call: consecutive
// changes of one slot are added up and written when the slot changes and
// when the call ends (flush).
type heldDelta struct {
	slot Slot
	n    int64
}

// add counts d more blocks held by slot s, writing the pending change of
// another slot first.
func (h *heldDelta) add(c *heldCounts, s Slot, d int64) {
	if h.n != 0 && h.slot != s {
		c[h.slot].Add(h.n)
		h.n = 0
	}
	h.slot = s
	h.n += d
}

// flush writes the pending change.
func (h *heldDelta) flush(c *heldCounts) {
	if h.n != 0 {
		c[h.slot].Add(h.n)
		h.n = 0
	}
}

// Held returns how many blocks pod s holds, as its KV events told the
// index (learned holdings are not counted), or 0 for a slot that is not
// alive. With the pod's cache size it says how full the pod's cache is,
// which routing weighs as cache pressure. It is one atomic load: O(1), no
// lock, safe to call concurrently with Apply.
//
// Apply keeps the count: a store that makes s a holder of a block adds
// one, a remove that ends it subtracts one, and idempotent writes (a
// stored block stored again, an absent one removed) change nothing. A
// store refused by the cap (MaxBlocks) is not counted, as the index does
// not hold it.
func (ix *Index) Held(s Slot) int {
	if !ix.isAlive(s) {
		return 0
	}
	return int(max(0, ix.held[s].Load()))
}
