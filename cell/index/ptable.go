package index

import "sync/atomic"

// ptable is a paged shard's directory: the block layout's table (linear
// probing, backward-shift deletion, see table) with a bucket pointer for a
// value. It repeats table's probing because Go's atomics give a pointer and
// a word different types.
type ptable struct {
	slots []pslot
	mask  uint64
	shift uint
}

// pslot is one directory slot, two adjacent cache lines: the page key, its
// bucket, and a summary of the page, which is all a query reads of a page
// whose holders do not change inside it: the holder sets of its first
// block and of one block at its last offset (with that block's hash; 0
// when none is tracked). The sets are copies of what the bucket's entries
// hold, kept in step by every write (note), and full bitmaps, so that
// reading them takes no access to the overflow array.
type pslot struct {
	key       atomic.Uint64
	b         atomic.Pointer[pentry]
	hLast     atomic.Uint64
	s0, sLast ovBitmap
	_         [40]byte
}

// note records in the summary that the entry of hash h at offset off now
// has holders hb (empty: deleted). Writers only.
func (ps *pslot) note(off int, h uint64, hb HostBitmap) {
	switch off {
	case 0:
		ps.s0.store(hb)
	case PageSize - 1:
		if hl := ps.hLast.Load(); hl == h || hl == 0 {
			if hb.IsEmpty() {
				h = 0
			}
			ps.sLast.store(hb)
			ps.hLast.Store(h)
		}
	}
}

// copyFrom copies slot o into ps. Writers only.
func (ps *pslot) copyFrom(o *pslot) {
	ps.b.Store(o.b.Load())
	ps.s0.store(o.s0.load())
	ps.hLast.Store(o.hLast.Load())
	ps.sLast.store(o.sLast.load())
	ps.key.Store(o.key.Load())
}

func newPtable(size int) *ptable {
	logSize := uint(0)
	for 1<<logSize < tableSize(size) {
		logSize++
	}
	return &ptable{
		slots: make([]pslot, 1<<logSize),
		mask:  1<<logSize - 1,
		shift: 64 - shardBits - logSize,
	}
}

func (t *ptable) home(key uint64) uint64 { return (key * fibMul) >> t.shift & t.mask }

func (t *ptable) size() int { return len(t.slots) }

// find returns the slot of key, or nil; a reader may call it while a
// writer changes the table (see table.find).
func (t *ptable) find(key uint64) *pslot {
	i := t.home(key)
	return t.findFrom(key, i, t.slots[i].key.Load())
}

// findFrom is find continued from slot i whose key k was loaded already.
func (t *ptable) findFrom(key, i, k uint64) *pslot {
	for n := uint64(0); n <= t.mask; n++ {
		if k == key {
			return &t.slots[i]
		}
		if k == 0 {
			return nil
		}
		i = (i + 1) & t.mask
		k = t.slots[i].key.Load()
	}
	return nil
}

// pos returns the slot of key and true, or the empty slot where it would go
// and false. Writers only.
func (t *ptable) pos(key uint64) (uint64, bool) {
	i := t.home(key)
	for {
		k := t.slots[i].key.Load()
		if k == key {
			return i, true
		}
		if k == 0 {
			return i, false
		}
		i = (i + 1) & t.mask
	}
}

// deleteAt empties slot i and shifts the rest of its probe run back; see
// table.deleteAt. Writers only.
func (t *ptable) deleteAt(i uint64) {
	for {
		j := i
		for {
			j = (j + 1) & t.mask
			k := t.slots[j].key.Load()
			if k == 0 {
				t.slots[i].copyFrom(&pslot{})
				return
			}
			h := t.home(k)
			if (j > i && (h <= i || h > j)) || (j < i && (h <= i && h > j)) {
				t.slots[i].copyFrom(&t.slots[j])
				i = j
				break
			}
		}
	}
}

// insertFresh copies slot o, whose key is known to be absent, into a
// table no reader sees yet; see table.insertFresh.
func (t *ptable) insertFresh(o *pslot) {
	i := t.home(o.key.Load())
	for t.slots[i].key.Load() != 0 {
		i = (i + 1) & t.mask
	}
	t.slots[i].copyFrom(o)
}
