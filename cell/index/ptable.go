package index

import (
	"sync/atomic"
	"unsafe"
)

// ptable is a paged shard's directory: the block layout's table (linear
// probing, backward-shift deletion, see table) with a bucket pointer for a
// value. It repeats table's probing because Go's atomics give a pointer and
// a word different types.
type ptable struct {
	slots []pslot
	mask  uint64
	shift uint
}

type pslot struct {
	key atomic.Uint64
	b   atomic.Pointer[pentry]
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

// find returns the bucket of key, or nil; a reader may call it while a
// writer changes the table (see table.find).
func (t *ptable) find(key uint64) *pentry {
	i := t.home(key)
	return t.findFrom(key, i, t.slots[i].key.Load())
}

// findFrom is find continued from slot i whose key k was loaded already.
func (t *ptable) findFrom(key, i, k uint64) *pentry {
	for n := uint64(0); n <= t.mask; n++ {
		if k == key {
			return t.slots[i].b.Load()
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
				t.slots[i].key.Store(0)
				t.slots[i].b.Store(nil)
				return
			}
			h := t.home(k)
			if (j > i && (h <= i || h > j)) || (j < i && (h <= i && h > j)) {
				t.slots[i].b.Store(t.slots[j].b.Load())
				t.slots[i].key.Store(k)
				i = j
				break
			}
		}
	}
}

// insertFresh puts a key known to be absent into a table no reader sees
// yet; see table.insertFresh.
func (t *ptable) insertFresh(key uint64, b *pentry) {
	i := t.home(key)
	for t.slots[i].key.Load() != 0 {
		i = (i + 1) & t.mask
	}
	t.slots[i].b.Store(b)
	*(*uint64)(unsafe.Pointer(&t.slots[i].key)) = key
}
