package events

import "github.com/cellrouter/cellrouter/cell/index"

// none is the null node reference.
const none int32 = -1

// chainNode is one engine block a holder has stored.
type chainNode struct {
	// hash is the engine's hash of the block.
	hash uint64
	// parent, child, next and prev link the forest: the parent block (none
	// for a first block), the first child, and the doubly linked siblings.
	parent, child, next, prev int32
	// tiers is the set of index tiers the engine keeps the block on (bit
	// 1<<Tier); the node exists while it is not empty.
	tiers uint8
	// skip marks a block that is tracked but not indexed (extra keys, or a
	// descendant of such a block); it produced no router hashes.
	skip bool
	// nRouter is the number of router blocks this engine block completed:
	// router0, then routerRest.
	nRouter    int32
	router0    index.BlockHash
	routerRest []index.BlockHash
	// last is the router hash of the last complete router block up to and
	// including this block (the chain seed if none): the parent of the next
	// router block.
	last index.BlockHash
	// pending are the tokens after last up to the end of this block, fewer
	// than the router block size; nil when the blocks line up.
	pending []uint32
	// pos0 is the chain position of router0 (of the next router block when
	// the node completed none), and pageIn the page key (index.Op.Page) of
	// the router block before it, 0 when there is none: with the router
	// hashes they place every op of the node (see place).
	pos0   int32
	pageIn index.BlockHash
	// stamp orders the holder's blocks by use (see evict.go): set from the
	// holder's clock when the block is stored, stored again or matched,
	// and raised to the newest stamp of any subtree removed from under it.
	stamp uint64
	// heap is the node's place in the holder's heap of leaves, none when
	// the node has children.
	heap int32
}

// place returns the chain position and page key of the node's j-th router
// block, or for j == nRouter those of the next router block's predecessor
// (its page key is what a child's pageIn starts from).
func (n *chainNode) place(j int32) (pos int32, page index.BlockHash) {
	page = n.pageIn
	for i := int32(0); i <= j && i < n.nRouter; i++ {
		if (n.pos0+i)%index.PageSize == 0 {
			page = n.routerHash(i)
		}
	}
	return n.pos0 + j, page
}

// routerHash returns the i-th router hash the node completed.
func (n *chainNode) routerHash(i int32) index.BlockHash {
	if i == 0 {
		return n.router0
	}
	return n.routerRest[i-1]
}

// chains is one holder's forest of engine blocks, in a slab addressed by
// int32 so that the map holds no pointers and freed nodes are reused. It is
// not safe for concurrent use.
type chains struct {
	nodes  []chainNode
	free   []int32
	byHash map[uint64]int32
	stack  []int32 // scratch for subtree walks

	// leaves is a min-heap of the forest's leaves by stamp: its head is the
	// block to evict first (evict.go). clock hands out stamps.
	leaves []leaf
	clock  uint64
	// indexed counts the router blocks of the indexed (not skipped) nodes:
	// the holder's share of the index.
	indexed int
	// matched holds router hashes of blocks a routed request matched since
	// they were last stamped (Applier.Touch); eviction restamps such a block
	// instead of evicting it (leaves.go).
	matched map[index.BlockHash]struct{}
}

// len returns the number of tracked blocks.
func (c *chains) len() int { return len(c.byHash) }

// lookup returns the node of engine hash h.
func (c *chains) lookup(h uint64) (int32, bool) {
	i, ok := c.byHash[h]
	return i, ok
}

// node returns the node at i; the pointer is valid until the next add.
func (c *chains) node(i int32) *chainNode { return &c.nodes[i] }

// add creates the node of engine hash h under parent (none for a first
// block) and returns it; the caller fills in its tiers and router state.
func (c *chains) add(h uint64, parent int32) int32 {
	if c.byHash == nil {
		c.byHash = make(map[uint64]int32)
	}
	var i int32
	if n := len(c.free); n > 0 {
		i = c.free[n-1]
		c.free = c.free[:n-1]
	} else {
		c.nodes = append(c.nodes, chainNode{})
		i = int32(len(c.nodes) - 1)
	}
	c.clock++
	c.nodes[i] = chainNode{hash: h, parent: parent, child: none, next: none, prev: none, stamp: c.clock, heap: none}
	if parent != none {
		p := &c.nodes[parent]
		if p.child == none {
			c.unleaf(parent) // no longer a leaf
		}
		c.nodes[i].next = p.child
		if p.child != none {
			c.nodes[p.child].prev = i
		}
		p.child = i
	}
	c.byHash[h] = i
	c.pushLeaf(i)
	return i
}

// removeSubtree removes the node at root and every descendant of it,
// appending to ops the removal of their router blocks from every tier they
// are on, and returns ops. It reports the number of nodes removed. The
// root's parent takes the newest stamp of the subtree (a block was used at
// least as recently as any block below it) and becomes a leaf when it has
// no child left.
func (c *chains) removeSubtree(root int32, ops []index.Op, slot index.Slot) ([]index.Op, int) {
	r := &c.nodes[root]
	parent := r.parent
	if parent != none {
		p := &c.nodes[parent]
		if p.child == root {
			p.child = r.next
		}
	}
	if r.prev != none {
		c.nodes[r.prev].next = r.next
	}
	if r.next != none {
		c.nodes[r.next].prev = r.prev
	}
	var newest uint64
	removed := 0
	stack := append(c.stack[:0], root)
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n := &c.nodes[i]
		ops = appendRemoves(ops, slot, n)
		for ch := n.child; ch != none; ch = c.nodes[ch].next {
			stack = append(stack, ch)
		}
		if n.heap != none {
			c.unleaf(i)
		}
		if !n.skip {
			c.indexed -= int(n.nRouter)
		}
		newest = max(newest, n.stamp)
		delete(c.byHash, n.hash)
		*n = chainNode{}
		c.free = append(c.free, i)
		removed++
	}
	c.stack = stack[:0]
	if parent != none {
		p := &c.nodes[parent]
		p.stamp = max(p.stamp, newest)
		if p.child == none {
			c.pushLeaf(parent)
		}
	}
	return ops, removed
}

// reset forgets every block and frees the memory.
func (c *chains) reset() { *c = chains{} }
