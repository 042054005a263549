package engine

// leafHeap is a binary min-heap of the evictable leaves, ordered by eviction
// priority: older access first, then deeper, then smaller hash (a total
// order, so eviction is deterministic). Every node in it records its heap
// position in node.heapPos, which makes removal of an arbitrary node O(log n).
type leafHeap struct {
	nodes *[]node
	items []int32
}

// before reports whether node a is evicted before node b.
func (h *leafHeap) before(a, b int32) bool {
	ns := *h.nodes
	x, y := &ns[a], &ns[b]
	if x.access != y.access {
		return x.access < y.access
	}
	if x.depth != y.depth {
		return x.depth > y.depth
	}
	return x.hash < y.hash
}

// set places node v at heap position i.
func (h *leafHeap) set(i int, v int32) {
	h.items[i] = v
	(*h.nodes)[v].heapPos = int32(i)
}

// push adds node v.
func (h *leafHeap) push(v int32) {
	h.items = append(h.items, v)
	h.set(len(h.items)-1, v)
	h.up(len(h.items) - 1)
}

// pop removes and returns the first node to evict. The heap must not be empty.
func (h *leafHeap) pop() int32 {
	v := h.items[0]
	h.remove(0)
	return v
}

// remove takes out the node at heap position pos.
func (h *leafHeap) remove(pos int32) {
	i := int(pos)
	v := h.items[i]
	last := len(h.items) - 1
	if i != last {
		h.set(i, h.items[last])
	}
	h.items = h.items[:last]
	if i != last {
		if !h.down(i) {
			h.up(i)
		}
	}
	(*h.nodes)[v].heapPos = none
}

// up moves the node at position i towards the root while it precedes its parent.
func (h *leafHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.before(h.items[i], h.items[p]) {
			return
		}
		a, b := h.items[i], h.items[p]
		h.set(i, b)
		h.set(p, a)
		i = p
	}
}

// down moves the node at position i towards the leaves while a child precedes
// it, and reports whether it moved.
func (h *leafHeap) down(i int) bool {
	start := i
	n := len(h.items)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && h.before(h.items[r], h.items[l]) {
			m = r
		}
		if !h.before(h.items[m], h.items[i]) {
			break
		}
		a, b := h.items[i], h.items[m]
		h.set(i, b)
		h.set(m, a)
		i = m
	}
	return i > start
}
