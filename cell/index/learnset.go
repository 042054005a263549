package index

import "sync/atomic"

// The kinds of learned block.
const (
	// kindSpec is a speculative block: written when a request was routed to
	// the pod, living SpeculativeTTL unless the engine's events confirm it.
	kindSpec uint8 = iota
	// kindApprox is an approximate block of a pod without events: learned
	// at a request's first token, living ApproximateTTL after its last use.
	kindApprox
	numKinds
)

// nilNode is the null link of the learned forest.
const nilNode int32 = -1

// lnode is one learned block of one slot: its place in the slot's forest of
// learned blocks and in its kind's recency list.
type lnode struct {
	hash BlockHash
	// phash is the parent block's hash (0 for the first block of a chain).
	// When the parent is not learned (the pod holds it exactly), the node
	// is a root filed under phash, so that the parent's removal finds it.
	phash   BlockHash
	expires int64 // Unix nanoseconds
	// page is the block's page key (Op.Page); depth-1 is its Op.Pos.
	page BlockHash
	// parent is the learned parent (nilNode when the parent is exact or
	// absent); child is the first child; next and prev link siblings.
	parent, child, next, prev int32
	// older and newer link the node into its kind's list.
	older, newer int32
	depth        int32 // position in its chain, 1 for a first block
	kind         uint8
}

// llist is a recency list: head is the least recently refreshed node.
type llist struct {
	head, tail int32
	n          int
}

// lset is the learned part of one slot's holdings: a forest of blocks
// (parent links mirror the block chains) and one recency list per kind.
//
// Invariants, which keep the slot's holdings prefix-closed:
//   - every node's parent block is held by the slot: it is the node's
//     learned parent, or an exact block the node is filed under (roots);
//   - removing a node removes its learned subtree;
//   - a list is ordered by (last refresh, depth descending): an operation
//     refreshes a chain's nodes deepest first, so a node is always older
//     than its learned ancestors and the head of a list is a leaf, unless
//     it has learned children of the other kind.
type lset struct {
	nodes  []lnode
	free   []int32
	byHash map[BlockHash]int32
	roots  map[BlockHash]int32 // exact parent hash -> first learned root under it
	lists  [numKinds]llist
	sizes  *[numKinds]atomic.Int64 // the learner's totals, kept in step
	stack  []int32                 // remove's work space
}

func newLset(sizes *[numKinds]atomic.Int64) *lset {
	s := &lset{byHash: make(map[BlockHash]int32), roots: make(map[BlockHash]int32), sizes: sizes}
	for k := range s.lists {
		s.lists[k] = llist{head: nilNode, tail: nilNode}
	}
	return s
}

// len returns the number of learned blocks.
func (s *lset) len() int { return len(s.byHash) }

// lookup returns the node of h.
func (s *lset) lookup(h BlockHash) (int32, bool) {
	i, ok := s.byHash[h]
	return i, ok
}

// add creates a node for h at depth (1-based) of kind k, expiring at
// expires, under the learned parent p (nilNode: under the exact block phash,
// or none when phash is 0), and pushes it to the tail of its list. Learned
// roots already filed under h become its children.
func (s *lset) add(h, phash, page BlockHash, p int32, depth int, k uint8, expires int64) int32 {
	var i int32
	if n := len(s.free); n > 0 {
		i = s.free[n-1]
		s.free = s.free[:n-1]
	} else {
		s.nodes = append(s.nodes, lnode{})
		i = int32(len(s.nodes) - 1)
	}
	s.nodes[i] = lnode{hash: h, phash: phash, page: page, expires: expires, parent: p, child: nilNode, next: nilNode, prev: nilNode,
		older: nilNode, newer: nilNode, depth: int32(depth), kind: k}
	s.byHash[h] = i
	s.link(i)
	if r, ok := s.roots[h]; ok {
		delete(s.roots, h)
		s.nodes[i].child = r
		for c := r; c != nilNode; c = s.nodes[c].next {
			s.nodes[c].parent = i
		}
	}
	s.push(i)
	return i
}

// link files node i under its parent: a learned parent's children, the
// roots under an exact parent, or nowhere for a first block.
func (s *lset) link(i int32) {
	n := &s.nodes[i]
	var first int32 = nilNode
	switch {
	case n.parent != nilNode:
		first = s.nodes[n.parent].child
		s.nodes[n.parent].child = i
	case n.phash != 0:
		if r, ok := s.roots[n.phash]; ok {
			first = r
		}
		s.roots[n.phash] = i
	default:
		return
	}
	n.prev, n.next = nilNode, first
	if first != nilNode {
		s.nodes[first].prev = i
	}
}

// unlink takes node i out of its sibling list.
func (s *lset) unlink(i int32) {
	n := &s.nodes[i]
	if n.prev != nilNode {
		s.nodes[n.prev].next = n.next
	} else {
		switch {
		case n.parent != nilNode:
			s.nodes[n.parent].child = n.next
		case n.phash != 0:
			if r, ok := s.roots[n.phash]; ok && r == i {
				if n.next != nilNode {
					s.roots[n.phash] = n.next
				} else {
					delete(s.roots, n.phash)
				}
			}
		}
	}
	if n.next != nilNode {
		s.nodes[n.next].prev = n.prev
	}
	n.prev, n.next = nilNode, nilNode
}

// push appends node i to the tail (the newest end) of its kind's list.
func (s *lset) push(i int32) {
	n := &s.nodes[i]
	l := &s.lists[n.kind]
	n.older, n.newer = l.tail, nilNode
	if l.tail != nilNode {
		s.nodes[l.tail].newer = i
	} else {
		l.head = i
	}
	l.tail = i
	l.n++
	s.sizes[n.kind].Add(1)
}

// pop takes node i out of its kind's list.
func (s *lset) pop(i int32) {
	n := &s.nodes[i]
	l := &s.lists[n.kind]
	if n.older != nilNode {
		s.nodes[n.older].newer = n.newer
	} else {
		l.head = n.newer
	}
	if n.newer != nilNode {
		s.nodes[n.newer].older = n.older
	} else {
		l.tail = n.older
	}
	n.older, n.newer = nilNode, nilNode
	l.n--
	s.sizes[n.kind].Add(-1)
}

// refresh makes node i of kind k, expiring at expires, and moves it to the
// tail of that kind's list.
func (s *lset) refresh(i int32, k uint8, expires int64) {
	s.pop(i)
	s.nodes[i].kind = k
	s.nodes[i].expires = expires
	s.push(i)
}

// release frees node i, which is out of every list.
func (s *lset) release(i int32) {
	delete(s.byHash, s.nodes[i].hash)
	s.nodes[i] = lnode{}
	s.free = append(s.free, i)
}

// lblock is a learned block let go of: what its removal op needs.
type lblock struct {
	hash, page BlockHash
	pos        int32
}

// remove deletes node i and its learned subtree, appending their blocks to
// out; it returns out.
func (s *lset) remove(i int32, out []lblock) []lblock {
	s.unlink(i)
	stack := append(s.stack[:0], i)
	defer func() { s.stack = stack[:0] }()
	for len(stack) > 0 {
		j := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for c := s.nodes[j].child; c != nilNode; c = s.nodes[c].next {
			stack = append(stack, c)
		}
		out = append(out, lblock{s.nodes[j].hash, s.nodes[j].page, s.nodes[j].depth - 1})
		s.pop(j)
		s.release(j)
	}
	return out
}

// confirm forgets node i because the pod now holds its block exactly: the
// block stays held, and its learned children become roots filed under it.
func (s *lset) confirm(i int32) {
	s.unlink(i)
	h := s.nodes[i].hash
	for c := s.nodes[i].child; c != nilNode; {
		next := s.nodes[c].next
		s.nodes[c].parent = nilNode
		s.nodes[c].phash = h
		s.link(c)
		c = next
	}
	s.pop(i)
	s.release(i)
}

// cut removes what the removal of block h from the pod takes with it: h's
// node if learned, and the learned roots filed under h, each with its
// subtree. It appends their hashes to out and returns it.
func (s *lset) cut(h BlockHash, out []lblock) []lblock {
	if i, ok := s.byHash[h]; ok {
		out = s.remove(i, out)
	}
	for {
		r, ok := s.roots[h]
		if !ok {
			return out
		}
		out = s.remove(r, out)
	}
}

// oldest returns the head of kind k's list.
func (s *lset) oldest(k uint8) int32 { return s.lists[k].head }

// clear empties the set and returns its blocks' count to the totals.
func (s *lset) clear() {
	for k := range s.lists {
		s.sizes[k].Add(-int64(s.lists[k].n))
	}
	sizes := s.sizes
	*s = *newLset(sizes)
}
