package index

import (
	"sync"
	"sync/atomic"
	"time"
)

const (
	shardBits = 8
	numShards = 1 << shardBits
	// fibMul is 2^64 divided by the golden ratio: multiplying by it spreads
	// chained hashes, which are not uniform in their low bits, over the top
	// bits that choose the shard (Fibonacci hashing).
	fibMul = 0x9E3779B97F4A7C15
)

// shardOf returns the shard of a block hash: the top 8 bits of hash*fibMul.
func shardOf(key uint64) int { return int((key * fibMul) >> (64 - shardBits)) }

// ovBitmap is a full holder bitmap in a shard's overflow array, for blocks
// held by more than maxInline pods.
type ovBitmap [4]atomic.Uint64

func (o *ovBitmap) load() HostBitmap {
	return HostBitmap{o[0].Load(), o[1].Load(), o[2].Load(), o[3].Load()}
}

func (o *ovBitmap) store(b HostBitmap) {
	o[0].Store(b[0])
	o[1].Store(b[1])
	o[2].Store(b[2])
	o[3].Store(b[3])
}

// shardBase is what both layouts' shards share: the writers' lock and the
// readers' sequence counter, the overflow array of full holder bitmaps, and
// the counters.
//
// Concurrency: writers take mu and make seq odd while they change anything
// (a sequence lock); readers take no lock: they read seq, read the table with
// atomic loads, and retry when seq was odd or has moved. A reader therefore
// never writes a shared cache line, which is what a sync.RWMutex read lock
// would do on every lookup. Writers of one shard are serialised by mu.
type shardBase struct {
	mu   sync.Mutex
	seq  atomic.Uint64
	over atomic.Pointer[[]ovBitmap]

	// Fields below are owned by the holder of mu.
	free     []uint32 // free overflow entries
	overUsed int      // overflow entries handed out, free ones included
	capDrops uint64   // stores refused because the index was full
	stale    uint64   // ops for slots that were not alive
	minSize  int      // the table never shrinks below this (Config.ExpectedBlocks)
}

// shard is one of the block layout's 256 independent partitions.
type shard struct {
	shardBase
	tab   atomic.Pointer[table]
	count int // occupied table slots (distinct blocks); owned by the holder of mu

	_ [64]byte // keep neighbouring shards off this shard's cache lines
}

// reservedSlots is the table size of each shard for expected blocks in
// the whole index: room for the shard's share below the growth load (the
// shares of Fibonacci-hashed shards differ by a few percent; rounding up to
// a power of two leaves more slack than that).
func reservedSlots(expected int) int {
	per := (expected + numShards - 1) / numShards
	return max(minTableSize, per*growDen/growNum+1)
}

func (s *shard) init(minSize int) {
	s.minSize = tableSize(minSize)
	s.tab.Store(newTable(s.minSize))
	s.initOverflow()
}

func (s *shardBase) initOverflow() {
	empty := make([]ovBitmap, 0)
	s.over.Store(&empty)
}

// holders returns the holder set of key (empty when absent). It takes no
// lock and may be called concurrently with writers.
func (s *shard) holders(key uint64) (b HostBitmap) {
	s.readStable(func() { b = s.decode(s.tab.Load().find(key)) })
	return b
}

// readStable runs read, which reads the shard without a lock, until a run
// saw no writer: the sequence was even before it and unchanged after. When
// writers keep moving the shard for readSpinTime, it runs read once more
// under the shard's lock instead.
func (s *shardBase) readStable(read func()) {
	var deadline time.Time
	for spins := 0; ; spins++ {
		s1 := s.seq.Load()
		if s1&1 == 0 {
			read()
			if s.seq.Load() == s1 {
				return
			}
		}
		if spins&63 == 63 {
			now := time.Now()
			if deadline.IsZero() {
				deadline = now.Add(readSpinTime)
			} else if now.After(deadline) {
				s.mu.Lock()
				read()
				s.mu.Unlock()
				return
			}
		}
	}
}

// readSpinTime bounds how long a reader retries while a writer holds the
// shard before it waits on the shard's lock instead. Write sections last
// well under a microsecond (a few ops, or a table publication), so a reader
// that meets one usually succeeds within it; parking on the lock costs a
// scheduler wake-up of tens of microseconds, which is what this avoids. The
// lock fallback only matters when the writer's thread was descheduled inside
// its section; then sleeping beats spinning.
const readSpinTime = 20 * time.Microsecond

// beginWrite locks the shard and opens a write section.
func (s *shardBase) beginWrite() {
	s.mu.Lock()
	s.seq.Add(1)
}

// endWrite closes the write section and unlocks.
func (s *shardBase) endWrite() {
	s.seq.Add(1)
	s.mu.Unlock()
}

// store adds slot sl to key's holders. It returns +1 when it created the
// block, 0 otherwise, and false when the block was new but room was refused.
// Writers only.
func (s *shard) store(key uint64, sl Slot, res *reserver) (created int, added, ok bool) {
	t := s.tab.Load()
	i, found := t.pos(key)
	if !found {
		if res != nil && !res.take() {
			s.capDrops++
			return 0, false, false
		}
		if (s.count+1)*growDen > t.size()*growNum {
			t = s.resize(t.size() * 2)
			i, _ = t.pos(key)
		}
		t.slots[i].val.Store(inlineAdd(0, sl))
		t.slots[i].key.Store(key)
		s.count++
		return 1, true, true
	}
	w := t.slots[i].val.Load()
	nw, added := s.addHolder(w, sl, maxInline, 0)
	if nw != w {
		t.slots[i].val.Store(nw)
	}
	return 0, added, true
}

// addHolder returns holder word w with slot sl added: inline while the
// word has room for maxIn slots, else in an overflow bitmap. extra holds
// bits the word keeps beside its holders (the paged layout's offset).
// added says sl was not a holder before. Writers only.
func (s *shardBase) addHolder(w uint64, sl Slot, maxIn int, extra uint64) (nw uint64, added bool) {
	switch {
	case isOverflow(w):
		ov := *s.over.Load()
		b := ov[overflowRef(w)].load()
		if b.Has(sl) {
			return w, false
		}
		ov[overflowRef(w)].store(b.Set(sl))
		return w, true
	case inlineHas(w, sl):
		return w, false
	case holderCount(w) < maxIn:
		return inlineAdd(w, sl), true
	}
	return makeOverflow(s.allocOverflow(inlineBitmap(w).Set(sl))) | extra, true
}

// dropHolder returns holder word w without slot sl, 0 when sl was its last
// holder; see addHolder. dropped says sl was a holder. Writers only.
func (s *shardBase) dropHolder(w uint64, sl Slot, maxIn int, extra uint64) (nw uint64, dropped bool) {
	if !isOverflow(w) {
		if !inlineHas(w, sl) {
			return w, false
		}
		return inlineRemove(w, sl), true
	}
	ref := overflowRef(w)
	ov := *s.over.Load()
	b := ov[ref].load()
	if !b.Has(sl) {
		return w, false
	}
	b = b.Clear(sl)
	if b.Count() > maxIn {
		ov[ref].store(b)
		return w, true
	}
	ov[ref].store(HostBitmap{})
	s.free = append(s.free, ref)
	return inlineFromBitmap(b) | extra, true
}

// remove drops slot sl from key's holders and deletes the block when nobody
// holds it any more. It returns -1 when it deleted the block, and whether
// sl was a holder. Writers only.
func (s *shard) remove(key uint64, sl Slot) (deleted int, dropped bool) {
	t := s.tab.Load()
	i, found := t.pos(key)
	if !found {
		return 0, false
	}
	w := t.slots[i].val.Load()
	nw, dropped := s.dropHolder(w, sl, maxInline, 0)
	if nw == w {
		return 0, dropped
	}
	if nw != 0 {
		t.slots[i].val.Store(nw)
		return 0, dropped
	}
	t.deleteAt(i)
	s.count--
	if t.size() > s.minSize && s.count*8 < t.size() {
		s.resize(t.size() / 2)
	}
	return -1, dropped
}

// allocOverflow returns an overflow entry holding b. Writers only.
func (s *shardBase) allocOverflow(b HostBitmap) uint32 {
	ov := *s.over.Load()
	if n := len(s.free); n > 0 {
		ref := s.free[n-1]
		s.free = s.free[:n-1]
		ov[ref].store(b)
		return ref
	}
	if s.overUsed == len(ov) {
		grown := make([]ovBitmap, max(4, 2*len(ov)))
		for i := range ov {
			grown[i].store(ov[i].load())
		}
		s.over.Store(&grown)
		ov = grown
	}
	ref := uint32(s.overUsed)
	s.overUsed++
	ov[ref].store(b)
	return ref
}

// resize rebuilds the table at the given size and publishes it. It is
// called inside a write section, whose changes so far are complete; it
// closes the section while it copies (the old table does not change, so
// readers go on reading it instead of waiting for the copy) and reopens it
// to publish the new table. Writers only.
func (s *shard) resize(size int) *table {
	old := s.tab.Load()
	s.seq.Add(1) // even: readers may read old
	t := newTable(size)
	for i := range old.slots {
		if k := old.slots[i].key.Load(); k != 0 {
			t.insertFresh(k, old.slots[i].val.Load())
		}
	}
	s.seq.Add(1) // odd again
	s.tab.Store(t)
	return t
}

// sweep removes every slot in dead from every block of the shard, deletes
// blocks nobody holds any more, and compacts the table and the overflow
// array. It returns the number of blocks deleted. Writers only.
func (s *shard) sweep(dead HostBitmap) int {
	s.seq.Add(1) // even while the new table is built from the unchanged old one
	old := s.tab.Load()
	ov := *s.over.Load()
	type kv struct{ k, w uint64 }
	keep := make([]kv, 0, s.count)
	var bms []HostBitmap
	for i := range old.slots {
		k := old.slots[i].key.Load()
		if k == 0 {
			continue
		}
		w := old.slots[i].val.Load()
		var b HostBitmap
		if isOverflow(w) {
			b = ov[overflowRef(w)].load()
		} else {
			b = inlineBitmap(w)
		}
		b = b.AndNot(dead)
		switch n := b.Count(); {
		case n == 0:
			continue
		case n <= maxInline:
			keep = append(keep, kv{k, inlineFromBitmap(b)})
		default:
			keep = append(keep, kv{k, makeOverflow(uint32(len(bms)))})
			bms = append(bms, b)
		}
	}
	deleted := s.count - len(keep)
	size := s.minSize
	for len(keep)*growDen > size*growNum {
		size *= 2
	}
	if size < old.size() && len(keep)*4 > old.size() {
		size = old.size() // do not shrink a table that is still a quarter full
	}
	t := newTable(size)
	for _, e := range keep {
		t.insertFresh(e.k, e.w)
	}
	newOv := make([]ovBitmap, len(bms))
	for i, b := range bms {
		newOv[i].store(b)
	}
	s.seq.Add(1) // odd again: publish the table and overflow array together
	s.over.Store(&newOv)
	s.tab.Store(t)
	s.count = len(keep)
	s.free = s.free[:0]
	s.overUsed = len(bms)
	return deleted
}

// forEach calls f for every block of the shard under the write lock.
func (s *shard) forEach(f func(key uint64, holders HostBitmap)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tab.Load()
	ov := *s.over.Load()
	for i := range t.slots {
		k := t.slots[i].key.Load()
		if k == 0 {
			continue
		}
		w := t.slots[i].val.Load()
		if isOverflow(w) {
			f(k, ov[overflowRef(w)].load())
		} else {
			f(k, inlineBitmap(w))
		}
	}
}

// bytes returns the memory the shard's table and overflow array take.
func (s *shard) bytes() int64 {
	return int64(s.tab.Load().size())*16 + int64(cap(*s.over.Load()))*32
}
