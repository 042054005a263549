package events

import "github.com/cellrouter/cellrouter/cell/index"

// forEachRouter calls fn for every router block the holder's chains
// completed, with its depth in router blocks (1 for the first block of a
// chain). It walks the forest from its roots, so a block's depth counts the
// router blocks of all its ancestors. Tracked-but-unindexed subtrees (skip)
// are left out, as the index leaves them out.
func (c *chains) forEachRouter(fn func(h index.BlockHash, depth int)) {
	type frame struct {
		node  int32
		depth int // router blocks above this node
	}
	var stack []frame
	for i := range c.nodes {
		n := &c.nodes[i]
		if n.parent != none || n.tiers == 0 {
			continue
		}
		if _, live := c.byHash[n.hash]; !live || c.byHash[n.hash] != int32(i) {
			continue
		}
		stack = append(stack[:0], frame{int32(i), 0})
		for len(stack) > 0 {
			f := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			n := &c.nodes[f.node]
			if n.skip {
				continue
			}
			for j := int32(0); j < n.nRouter; j++ {
				fn(n.routerHash(j), f.depth+int(j)+1)
			}
			for ch := n.child; ch != none; ch = c.nodes[ch].next {
				stack = append(stack, frame{ch, f.depth + int(n.nRouter)})
			}
		}
	}
}

// ForEachBlock calls fn for every router block the cell's holders hold, with
// its depth in its chain: what a cell summarises for the global tier. A
// block held by several holders is reported once per holder. It locks one
// holder at a time for the walk over its blocks, so each holder's events
// wait for that walk (milliseconds for a million blocks).
func (a *Applier) ForEachBlock(fn func(h index.BlockHash, depth int)) {
	a.forEachLiveHolder(func(h *holder) { h.chains.forEachRouter(fn) })
}

// holderList returns the holders at this moment, unlocked: each is locked
// on its own as it is used, so no walk holds the applier's lock.
func (a *Applier) holderList() []*holder {
	a.mu.RLock()
	defer a.mu.RUnlock()
	hs := make([]*holder, 0, len(a.holders))
	for _, h := range a.holders {
		hs = append(hs, h)
	}
	return hs
}

// forEachLiveHolder calls fn for every holder that is not dead, one at a
// time, with that holder's lock held.
func (a *Applier) forEachLiveHolder(fn func(h *holder)) {
	for _, h := range a.holderList() {
		h.mu.Lock()
		if !h.dead {
			fn(h)
		}
		h.mu.Unlock()
	}
}
