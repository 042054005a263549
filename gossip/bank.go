package gossip

import (
	"math/bits"
	"sync"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
)

// Bank is an inverted, bit-sliced index over many cells' summaries: for
// every bit position of the filter it holds one row with a bit per cell
// (the transpose of the cells' filters). A membership test of one hash is
// then K row ANDs over all cells at once (K rows of cells/64 words each, all
// in one 512-bit block's rows) instead of one filter test per cell, and
// Depths estimates every cell's prefix depth of a chain with one test per
// distinct search path rather than one binary search per cell.
//
// Cells whose summaries have different Params (a filter that grew or shrank
// its capacity) live in different groups, one transposed matrix per shape;
// in a fleet of similar cells there are one or two groups.
//
// Depths returns, for every cell, exactly what Summary.Depth returns on the
// cell's summary: the search splits the set of cells at every step of the
// same binary search, so each cell follows its own path (a test checks it
// against the per-cell scan). Memory is one bit per filter bit per cell slot
// (the same as the filters), rounded up to whole 64-cell words per group.
//
// Set and Remove take a write lock; Depths a read lock, so any number of
// decisions search while gossip is not being applied. A Bank must not be
// copied after first use.
type Bank struct {
	mu     sync.RWMutex
	groups []*bankGroup
	// where maps a cell to its group and slot.
	where map[int]bankSlot
	pool  sync.Pool // *bankScratch
}

type bankSlot struct {
	g    *bankGroup
	slot int
}

// bankGroup is the transposed matrix of the cells sharing one Params: row r
// (bit position r of the filter) is rows[r*w : (r+1)*w], bit s of the row
// set when the summary in slot s has bit r set.
type bankGroup struct {
	p    Params
	w    int // words per row
	rows []uint64
	// cells[s] is the cell in slot s, -1 when free; sums[s] its summary.
	cells []int
	sums  []*Summary
	free  []int
	used  int
}

// NewBank returns an empty bank.
func NewBank() *Bank { return &Bank{where: map[int]bankSlot{}} }

// Len returns the number of cells held.
func (b *Bank) Len() int {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return len(b.where)
}

// Bytes returns the memory of the transposed rows, in bytes.
func (b *Bank) Bytes() int64 {
	b.mu.RLock()
	defer b.mu.RUnlock()
	var n int64
	for _, g := range b.groups {
		n += int64(len(g.rows)) * 8
	}
	return n
}

// Set makes s cell's summary (cell is any non-negative number the caller
// names cells by); a nil s removes the cell. The bank keeps the pointer to
// diff the next summary against, which Summary's immutability allows. A
// summary of the same shape costs a word-by-word diff and one bit flip per
// changed bit; a new shape costs a walk over the old and new set bits.
func (b *Bank) Set(cell int, s *Summary) {
	b.mu.Lock()
	defer b.mu.Unlock()
	old, ok := b.where[cell]
	if s == nil {
		if ok {
			old.g.clear(old.slot)
			delete(b.where, cell)
			b.dropEmpty(old.g)
		}
		return
	}
	if ok && old.g.p == s.params {
		old.g.replace(old.slot, s)
		return
	}
	if ok {
		old.g.clear(old.slot)
		b.dropEmpty(old.g)
	}
	g := b.group(s.params)
	slot := g.take(cell)
	g.replace(slot, s)
	b.where[cell] = bankSlot{g: g, slot: slot}
}

// Remove drops cell; removing an unknown cell is a no-op.
func (b *Bank) Remove(cell int) { b.Set(cell, nil) }

// group returns the group of shape p, creating it.
func (b *Bank) group(p Params) *bankGroup {
	for _, g := range b.groups {
		if g.p == p {
			return g
		}
	}
	g := &bankGroup{p: p}
	b.groups = append(b.groups, g)
	return g
}

// dropEmpty frees a group that holds no cell.
func (b *Bank) dropEmpty(g *bankGroup) {
	if g.used > 0 {
		return
	}
	for i, x := range b.groups {
		if x == g {
			b.groups = append(b.groups[:i], b.groups[i+1:]...)
			return
		}
	}
}

// take returns a free slot for cell, widening the rows when every slot of
// the current width is taken (the width doubles, so widening is rare).
func (g *bankGroup) take(cell int) int {
	g.used++
	if n := len(g.free); n > 0 {
		s := g.free[n-1]
		g.free = g.free[:n-1]
		g.cells[s] = cell
		return s
	}
	s := len(g.cells)
	if s >= g.w*64 {
		nw := max(1, g.w*2)
		rows := make([]uint64, int(g.p.M)*nw)
		if g.w > 0 {
			for r := range int(g.p.M) {
				copy(rows[r*nw:r*nw+g.w], g.rows[r*g.w:(r+1)*g.w])
			}
		}
		g.rows, g.w = rows, nw
	}
	g.cells = append(g.cells, cell)
	g.sums = append(g.sums, nil)
	return s
}

// clear empties slot s's column and frees the slot.
func (g *bankGroup) clear(s int) {
	if old := g.sums[s]; old != nil {
		g.flipWords(s, old.words(), nil)
	}
	g.sums[s], g.cells[s] = nil, -1
	g.free = append(g.free, s)
	g.used--
}

// replace makes slot s's column equal to s's summary bits.
func (g *bankGroup) replace(slot int, s *Summary) {
	var old []uint64
	if o := g.sums[slot]; o != nil {
		old = o.words()
	}
	g.flipWords(slot, old, s.words())
	g.sums[slot] = s
}

// flipWords flips slot's bit in every row where old and new differ (a nil
// side counts as all zeros).
func (g *bankGroup) flipWords(slot int, old, new []uint64) {
	n := max(len(old), len(new))
	wi, bit := slot/64, uint64(1)<<(slot%64)
	for i := range n {
		var x uint64
		if old != nil {
			x = old[i]
		}
		if new != nil {
			x ^= new[i]
		}
		for x != 0 {
			t := bits.TrailingZeros64(x)
			g.rows[(i*64+t)*g.w+wi] ^= bit
			x &= x - 1
		}
	}
}

// bankScratch holds the cell sets of one search.
type bankScratch struct{ words []uint64 }

// CellDepth is one cell's estimated prefix depth.
type CellDepth struct {
	Cell, Depth int
}

// Depths appends to dst every cell whose estimated depth of chain is above
// zero, with that depth (Summary.Depth of its summary), in no set order, and
// returns it.
func (b *Bank) Depths(chain []blockhash.Hash, dst []CellDepth) []CellDepth {
	if len(chain) == 0 {
		return dst
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	sc, _ := b.pool.Get().(*bankScratch)
	if sc == nil {
		sc = &bankScratch{}
	}
	for _, g := range b.groups {
		dst = g.depths(chain, sc, dst)
	}
	b.pool.Put(sc)
	return dst
}

// depths runs the split binary search of one group. Each pending interval
// (lo, hi) carries the set of cells whose own binary search reached it:
// sampled depth lo hits for all of them, hi misses (or is past the chain).
// Testing mid splits the set into the cells that hit (on to (mid, hi)) and
// the rest (on to (lo, mid)); a set whose interval is one step wide is done.
func (g *bankGroup) depths(chain []blockhash.Hash, sc *bankScratch, dst []CellDepth) []CellDepth {
	p := g.p
	n := p.sampledCount(len(chain))
	if n == 0 || g.used == 0 {
		return dst
	}
	w := g.w
	// The deepest path holds one set per level: at most 2*log2(n)+2 sets.
	need := (2*bits.Len(uint(n)) + 3) * w
	if cap(sc.words) < need {
		sc.words = make([]uint64, need)
	}
	buf := sc.words[:need]
	type pending struct{ off, lo, hi int }
	var stackArr [64]pending
	stack := stackArr[:0]
	// The first sampled depth against every cell.
	first := buf[:w]
	for i := range first {
		first[i] = ^uint64(0)
	}
	if !g.test(chain[p.sampledAt(0)-1], first) {
		return dst
	}
	stack = append(stack, pending{off: 0, lo: 0, hi: n})
	for len(stack) > 0 {
		e := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		set := buf[e.off : e.off+w]
		// e's set is the last one allocated: everything above it is free.
		top := e.off + w
		if e.hi-e.lo <= 1 {
			dst = g.emit(set, p.sampledAt(e.lo), dst)
			continue
		}
		// A few cells are cheaper to finish one by one: a test of one
		// cell's filter is one cache line, a bank test K of them.
		if onesCount(set) <= bankFewCells {
			dst = g.finish(chain, set, e.lo, e.hi, dst)
			continue
		}
		mid := int(uint(e.lo+e.hi) >> 1)
		hit := buf[top : top+w]
		copy(hit, set)
		hitAny := g.test(chain[p.sampledAt(mid)-1], hit)
		missAny := false
		for i := range set {
			set[i] &^= hit[i]
			missAny = missAny || set[i] != 0
		}
		// set (misses) stays at e.off; hit is at top. Push the misses
		// first so the hits, allocated last, are popped (and freed) first.
		switch {
		case missAny && hitAny:
			stack = append(stack, pending{off: e.off, lo: e.lo, hi: mid}, pending{off: top, lo: mid, hi: e.hi})
		case hitAny:
			copy(set, hit)
			stack = append(stack, pending{off: e.off, lo: mid, hi: e.hi})
		default:
			stack = append(stack, pending{off: e.off, lo: e.lo, hi: mid})
		}
	}
	return dst
}

// test ANDs set with h's K rows and reports whether any cell is left.
func (g *bankGroup) test(h blockhash.Hash, set []uint64) bool {
	h1, x := probe(h)
	base := int(reduce(h1, g.p.M/BlockBits)) * BlockBits
	w := g.w
	for i := range g.p.K {
		if i > 0 && i%bitsPerDraw == 0 {
			x = remix(x)
		}
		r := (base + int(x&(BlockBits-1))) * w
		x >>= 9
		row := g.rows[r : r+w]
		var any uint64
		for j := range set {
			set[j] &= row[j]
			any |= set[j]
		}
		if any == 0 {
			return false
		}
	}
	return true
}

// bankFewCells is the size of a set below which the search goes on in each
// cell's own filter (Summary.depthFrom, the same binary search).
const bankFewCells = 6

func onesCount(set []uint64) int {
	n := 0
	for _, x := range set {
		n += bits.OnesCount64(x)
	}
	return n
}

// finish appends the depth of every cell of set, each continuing its own
// binary search from (lo, hi) in its summary.
func (g *bankGroup) finish(chain []blockhash.Hash, set []uint64, lo, hi int, dst []CellDepth) []CellDepth {
	for i, x := range set {
		for x != 0 {
			t := bits.TrailingZeros64(x)
			s := i*64 + t
			dst = append(dst, CellDepth{Cell: g.cells[s], Depth: g.sums[s].depthFrom(chain, lo, hi)})
			x &= x - 1
		}
	}
	return dst
}

// emit appends every cell of set at depth d.
func (g *bankGroup) emit(set []uint64, d int, dst []CellDepth) []CellDepth {
	for i, x := range set {
		for x != 0 {
			t := bits.TrailingZeros64(x)
			dst = append(dst, CellDepth{Cell: g.cells[i*64+t], Depth: d})
			x &= x - 1
		}
	}
	return dst
}
