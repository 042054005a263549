package index

import (
	"sync/atomic"
	"unsafe"
)

// table is one shard's open-addressing hash table: linear probing over a
// power-of-two array of (key, holder word) pairs, 16 bytes a slot, key 0 for
// an empty slot. Deletion shifts later entries back instead of leaving
// tombstones, so a probe always ends at the first empty slot.
//
// Every field of a slot is read and written atomically. Writers hold the
// shard's lock; readers take no lock and validate what they read against the
// shard's sequence counter (see shard), so the table is free of data races
// without readers ever writing a shared cache line.
type table struct {
	slots []tslot
	mask  uint64
	shift uint // home(key) = (key*fib) >> shift & mask uses bits below the shard's
}

type tslot struct {
	key atomic.Uint64
	val atomic.Uint64
}

const (
	minTableSize = 16
	// Tables grow at 3/4 full (linear probing slows sharply above that: an
	// unsuccessful probe visits about (1+1/(1-a)^2)/2 slots at load a, 8.5 at
	// 3/4 against 32.5 at 7/8) and shrink below 1/8 full.
	growNum, growDen = 3, 4
)

// tableSize rounds a wanted table size up to a valid one: a power of two,
// at least minTableSize.
func tableSize(size int) int {
	n := minTableSize
	for n < size {
		n *= 2
	}
	return n
}

func newTable(size int) *table {
	logSize := uint(0)
	for 1<<logSize < tableSize(size) {
		logSize++
	}
	return &table{
		slots: make([]tslot, 1<<logSize),
		mask:  1<<logSize - 1,
		shift: 64 - shardBits - logSize,
	}
}

func (t *table) home(key uint64) uint64 {
	return (key * fibMul) >> t.shift & t.mask
}

// find returns the holder word of key, or 0. A reader may call it while a
// writer changes the table; the bounded loop keeps a torn view from spinning,
// and the caller discards what it read when the sequence moved.
func (t *table) find(key uint64) uint64 {
	i := t.home(key)
	for n := uint64(0); n <= t.mask; n++ {
		k := t.slots[i].key.Load()
		if k == key {
			return t.slots[i].val.Load()
		}
		if k == 0 {
			return 0
		}
		i = (i + 1) & t.mask
	}
	return 0
}

// pos returns the slot index of key and true, or the empty slot where it
// would go and false. Writers only.
func (t *table) pos(key uint64) (uint64, bool) {
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

// deleteAt empties slot i and shifts the rest of its probe run back so that
// no entry becomes unreachable. Writers only.
func (t *table) deleteAt(i uint64) {
	for {
		j := i
		for {
			j = (j + 1) & t.mask
			k := t.slots[j].key.Load()
			if k == 0 {
				t.slots[i].key.Store(0)
				t.slots[i].val.Store(0)
				return
			}
			h := t.home(k)
			// Move the entry at j into the hole at i unless its home lies
			// cyclically in (i, j].
			if (j > i && (h <= i || h > j)) || (j < i && (h <= i && h > j)) {
				t.slots[i].val.Store(t.slots[j].val.Load())
				t.slots[i].key.Store(k)
				i = j
				break
			}
		}
	}
}

// insertFresh puts a key known to be absent into a table with room. Used
// when building a table that no reader sees yet.
// No reader sees the table yet, so plain stores do (an atomic store is a
// locked instruction on amd64); publishing the table through the shard's
// atomic pointer orders them before any reader's loads.
func (t *table) insertFresh(key, val uint64) {
	i := t.home(key)
	for t.slots[i].key.Load() != 0 {
		i = (i + 1) & t.mask
	}
	*(*uint64)(unsafe.Pointer(&t.slots[i].val)) = val
	*(*uint64)(unsafe.Pointer(&t.slots[i].key)) = key
}

func (t *table) size() int { return len(t.slots) }
