package index

// StoredDepth returns how many leading blocks of chain pod s has stored in
// its engine's cache as far as the index knows, given r, the answer of
// Match for chain: blocks a request routed there can reuse now, as opposed
// to blocks that a request routed there moments ago is still prefilling
// (speculative blocks), which the engine stores only when that prefill
// ends.
//
// For a pod with events it is the exact depth (the blocks the events
// reported; it calls SplitLearned for s, so r.ExactDepth(s) is the same
// afterwards). For a pod in approximate mode it is the depth of its
// approximate blocks: those the cell learned at a request's first token
// (Touch), when the engine stored them, without the speculative blocks of
// requests still prefilling there (plus, above them, any exact blocks a
// pod that stopped publishing kept). Both kinds are learned, so Match counts
// them alike and ExactDepth is 0; but a request that starts beside the
// prefill of a speculative block computes that block again, and a prefill
// that began on top of speculative blocks stores them too when it ends.
// The approximate blocks of a chain come before its speculative ones (a
// block becomes approximate only with every learned block above it, see
// Learner.Touch), so a bisection finds where they end.
//
// It costs a lock and a map lookup for a pod whose match ends in an
// approximate block, and a bisection (about log2 of its depth lookups) for
// one whose match ends in speculative blocks. It is safe for concurrent
// use; r is read (and, for a pod with events, completed) but not kept.
func (ix *Index) StoredDepth(chain []BlockHash, r *MatchResult, s Slot) int {
	d := min(r.Depth(s), len(chain))
	if d == 0 {
		return 0
	}
	l := ix.learn.Load()
	if l == nil {
		return d
	}
	if !r.Approximate().Has(s) {
		l.splitLearned(chain, r, BitmapOf(s))
		return r.ExactDepth(s)
	}
	return l.approxDepth(s, chain, d)
}

// approxDepth returns how many of the first d blocks of chain slot s, in
// approximate mode, holds stored: approximate blocks, and exact ones if
// the slot returned to approximate mode holding some. It returns 0 when
// the slot left approximate mode since the match (what it holds of chain
// then is exact or speculative, and the caller's match no longer says
// which).
func (l *Learner) approxDepth(s Slot, chain []BlockHash, d int) int {
	st := &l.slots[s]
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.approx {
		return 0
	}
	if st.set == nil {
		return l.heldDepth(s, chain[:d])
	}
	// What the slot holds of chain is prefix-closed, and of it the exact
	// blocks come first, then the approximate ones, then the speculative
	// ones; so notStored is monotone along chain. A block removed since
	// the match took its subtree with it.
	notStored := func(i int) bool {
		if j, ok := st.set.lookup(chain[i]); ok {
			return st.set.nodes[j].kind != kindApprox
		}
		return !l.ix.holdsAt(s, chain, i)
	}
	if !notStored(d - 1) {
		return d
	}
	return firstTrue(0, d-1, notStored)
}
