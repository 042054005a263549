package index

import "sync/atomic"

// heldCount is one pod's number of held blocks, alone on its cache line so
// that pods fed by different goroutines do not share one.
type heldCount struct {
	n atomic.Int64
	_ [56]byte
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
	return int(max(0, ix.held[s].n.Load()))
}
