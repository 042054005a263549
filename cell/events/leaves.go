package events

import "github.com/cellrouter/cellrouter/cell/index"

// This file is the eviction order of a holder's forest: a binary min-heap
// of its leaves by stamp.
//
// A holder may index only so many blocks (Config.MaxIndexBlocksPerPod,
// PodSpec.MaxIndexBlocks) and track only so many engine blocks
// (Config.MaxBlocksPerPod). Past either bound the Applier evicts the
// holder's least recently used block that no other block depends on: the
// leaf with the oldest stamp. Evicting leaves only keeps what the holder
// indexes prefix-closed, as the index requires, and one eviction removes
// one block.
//
// Stamps come from the holder's clock: a block is stamped when it is
// stored, stored again or named as the parent of a stored event. An
// ancestor is not restamped when a descendant is (that would cost the
// chain's depth per event); instead a block absorbs the newest stamp of any
// subtree removed from under it, so by the time it becomes a leaf it is at
// least as recent as the blocks that depended on it.
//
// A block a routed request matched (Applier.Touch records the router hash
// of the deepest one) is restamped lazily, when it comes up for eviction:
// it gets the newest stamp instead, once per match. A match then costs the
// request path one insertion into a small set, and the store path nothing
// (an eager restamp would need a map from router hash to block, updated on
// every store and removal: BenchmarkApplyBatch measured 1.24x the CPU of
// the same path without it). Only the deepest matched block needs the
// mark: its ancestors cannot be evicted before it. The set is cleared when
// it reaches maxMatched entries (marks of blocks since removed linger until
// then). TestEvictionMatchesReferenceModel checks the order, matches
// included, against a naive model that scans every leaf.
//
// Costs: a new block is pushed with the newest stamp, which ends its
// sift-up at once; its parent leaves the heap (O(log n), and O(1) for the
// block just pushed before it in the same event); an eviction pops the
// head (O(log n)).

// maxMatched bounds the match marks a holder keeps.
const maxMatched = 4096

// noteMatched marks the block with router hash h as matched.
func (c *chains) noteMatched(h index.BlockHash) {
	if c.matched == nil || len(c.matched) >= maxMatched {
		c.matched = make(map[index.BlockHash]struct{})
	}
	c.matched[h] = struct{}{}
}

// takeMatched reports whether a router hash of node i is marked matched,
// and unmarks it.
func (c *chains) takeMatched(i int32) bool {
	if len(c.matched) == 0 {
		return false
	}
	n := &c.nodes[i]
	if n.skip {
		return false
	}
	for j := int32(0); j < n.nRouter; j++ {
		h := n.routerHash(j)
		if _, ok := c.matched[h]; ok {
			delete(c.matched, h)
			return true
		}
	}
	return false
}

// victim returns the leaf to evict: the oldest, after restamping the ones
// marked matched (each mark is used once, so this ends), or none when the
// oldest leaf is keep or the forest is empty.
func (c *chains) victim(keep int32) int32 {
	for {
		n := c.oldestLeaf()
		if n == none || n == keep {
			return none
		}
		if !c.takeMatched(n) {
			return n
		}
		c.touch(n)
	}
}

// leaf is an entry of the heap of leaves: the node, and a copy of its
// stamp so that a comparison reads the heap alone.
type leaf struct {
	stamp uint64
	node  int32
}

// pushLeaf adds node i to the heap of leaves.
func (c *chains) pushLeaf(i int32) {
	k := len(c.leaves)
	c.nodes[i].heap = int32(k)
	c.leaves = append(c.leaves, leaf{stamp: c.nodes[i].stamp, node: i})
	c.siftUp(k)
}

// unleaf removes node i from the heap of leaves; it does nothing when i is
// not in it.
func (c *chains) unleaf(i int32) {
	k := int(c.nodes[i].heap)
	if k < 0 {
		return
	}
	last := len(c.leaves) - 1
	c.nodes[i].heap = none
	if k != last {
		moved := c.leaves[last]
		c.leaves[k] = moved
		c.nodes[moved.node].heap = int32(k)
		c.leaves = c.leaves[:last]
		if !c.siftUp(k) {
			c.siftDown(k)
		}
		return
	}
	c.leaves = c.leaves[:last]
}

// touch gives node i the newest stamp.
func (c *chains) touch(i int32) {
	c.clock++
	c.nodes[i].stamp = c.clock
	if k := int(c.nodes[i].heap); k >= 0 {
		c.leaves[k].stamp = c.clock
		c.siftDown(k)
	}
}

// oldestLeaf returns the leaf to evict first, or none for an empty forest.
func (c *chains) oldestLeaf() int32 {
	if len(c.leaves) == 0 {
		return none
	}
	return c.leaves[0].node
}

func (c *chains) less(a, b int) bool { return c.leaves[a].stamp < c.leaves[b].stamp }

func (c *chains) swap(a, b int) {
	c.leaves[a], c.leaves[b] = c.leaves[b], c.leaves[a]
	c.nodes[c.leaves[a].node].heap = int32(a)
	c.nodes[c.leaves[b].node].heap = int32(b)
}

// siftUp moves the entry at k up to its place and reports whether it moved.
func (c *chains) siftUp(k int) bool {
	start := k
	for k > 0 {
		p := (k - 1) / 2
		if !c.less(k, p) {
			break
		}
		c.swap(k, p)
		k = p
	}
	return k != start
}

// siftDown moves the entry at k down to its place.
func (c *chains) siftDown(k int) {
	n := len(c.leaves)
	for {
		l := 2*k + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && c.less(r, l) {
			m = r
		}
		if !c.less(m, k) {
			return
		}
		c.swap(k, m)
		k = m
	}
}
