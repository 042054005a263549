package index

import (
	"sync/atomic"
	"unsafe"
)

// The paged layout (Config.Layout = LayoutPaged) keeps the blocks of one
// page of a chain (PageSize consecutive positions) together: a shard's
// directory maps a page key (the hash of the page's first block) to a
// bucket, one allocation holding every block of that page, of every chain
// through it, as 16-byte entries (the block's hash, and a holder word that
// also carries the block's offset in its page). A query that knows its
// page keys reads a page's holders in one directory probe and one bucket
// read, whose cache lines are adjacent and independent.
//
// A holder word of the paged layout is a block layout word with at most
// maxInlinePaged inline slots, which leaves byte 6 for the offset.
const (
	maxInlinePaged = 6
	offShift       = 48
	offMask        = 0xFF << offShift
	// minBucket is the entry capacity of a new bucket. Buckets double when
	// full and halve when a quarter full.
	minBucket = 4
)

func wordOff(w uint64) int { return int(w>>offShift) & 0xFF }

func offBits(off int) uint64 { return uint64(off) << offShift }

// pentry is one entry of a bucket. Entry 0 is the bucket's header: key
// holds the entry count (bits 0-30), the ordered flag (bit 31) and the
// capacity (bits 32-63), val the chain position of the page's first block.
// A bucket is ordered while entry j holds the block at offset j-1, which is
// how a chain's blocks arrive: then the entry of offset o is entry o+1 or
// none, and neither a write nor a query has to scan the bucket.
type pentry struct {
	key, val atomic.Uint64
}

const (
	lenMask     = 1<<31 - 1
	orderedFlag = 1 << 31
)

// bucketOf returns the bucket whose header p points to, header included.
// The capacity never changes for one allocation, so a reader may call it on
// a bucket a writer is changing.
func bucketOf(p *pentry) []pentry {
	return unsafe.Slice(p, int(p.key.Load()>>32)+1)
}

func newBucket(capacity int, base int64) []pentry {
	b := make([]pentry, capacity+1)
	b[0].key.Store(uint64(capacity)<<32 | orderedFlag)
	b[0].val.Store(uint64(base))
	return b
}

// bucketHeader returns the bucket's entry count, clamped to its capacity
// (a reader may see a torn bucket, which its sequence check then rejects),
// and whether it is ordered.
func bucketHeader(b []pentry) (n int, ordered bool) {
	h := b[0].key.Load()
	return min(int(h&lenMask), len(b)-1), h&orderedFlag != 0
}

func setBucketHeader(b []pentry, n int, ordered bool) {
	h := uint64(len(b)-1)<<32 | uint64(n)
	if ordered {
		h |= orderedFlag
	}
	b[0].key.Store(h)
}

// findEntry returns the index of the entry of block h at offset off in
// bucket b of n entries, or 0.
func findEntry(b []pentry, n int, ordered bool, off int, h uint64) int {
	if j := off + 1; j <= n && b[j].key.Load() == h {
		return j
	}
	if ordered {
		return 0
	}
	for j := 1; j <= n; j++ {
		if b[j].key.Load() == h {
			return j
		}
	}
	return 0
}

// pshard is one of the paged layout's 256 partitions; a page's shard is
// chosen by its page key.
type pshard struct {
	shardBase
	dir atomic.Pointer[ptable]

	// Owned by the holder of mu.
	pages   int   // directory entries
	count   int   // blocks
	entries int64 // bucket entries allocated, headers included

	_ [64]byte
}

func (s *pshard) init(minSize int) {
	s.minSize = tableSize(minSize)
	s.dir.Store(newPtable(s.minSize))
	s.initOverflow()
}

// validPlace reports whether op's Pos and Page can place its block.
func validPlace(op *Op) bool {
	return op.Page != 0 && op.Pos >= 0 && (op.Pos%PageSize == 0) == (op.Page == op.Hash)
}

// store adds op.Slot to the holders of op.Hash in page op.Page; see
// shard.store. Writers only.
func (s *pshard) store(op *Op, res *reserver) (created int, added, ok bool) {
	d := s.dir.Load()
	page, h := uint64(op.Page), uint64(op.Hash)
	off := int(op.Pos % PageSize)
	i, found := d.pos(page)
	if !found {
		if res != nil && !res.take() {
			s.capDrops++
			return 0, false, false
		}
		if (s.pages+1)*growDen > d.size()*growNum {
			d = s.resize(d.size() * 2)
			i, _ = d.pos(page)
		}
		b := newBucket(minBucket, int64(op.Pos)-int64(off))
		w := inlineAdd(0, op.Slot) | offBits(off)
		b[1].val.Store(w)
		b[1].key.Store(h)
		setBucketHeader(b, 1, off == 0)
		s.entries += int64(len(b))
		ps := &d.slots[i]
		ps.b.Store(&b[0])
		ps.note(off, h, s.decode(w))
		ps.key.Store(page)
		s.pages++
		s.count++
		return 1, true, true
	}
	ps := &d.slots[i]
	b := bucketOf(ps.b.Load())
	n, ordered := bucketHeader(b)
	if j := findEntry(b, n, ordered, off, h); j > 0 {
		w := b[j].val.Load()
		nw, added := s.addHolder(w, op.Slot, maxInlinePaged, w&offMask)
		if nw != w {
			b[j].val.Store(nw)
		}
		if off == 0 || off == PageSize-1 { // an overflow set changes in place
			ps.note(off, h, s.decode(nw))
		}
		return 0, added, true
	}
	if res != nil && !res.take() {
		s.capDrops++
		return 0, false, false
	}
	if n == len(b)-1 {
		b = s.rebucket(d, i, b, 2*n)
	}
	w := inlineAdd(0, op.Slot) | offBits(off)
	b[n+1].val.Store(w)
	b[n+1].key.Store(h)
	setBucketHeader(b, n+1, ordered && off == n)
	ps.note(off, h, s.decode(w))
	s.count++
	return 1, true, true
}

// rebucket moves the entries of bucket b, directory slot i, into a new
// bucket of the given capacity and publishes it. Readers holding b read
// valid, unchanged memory and retry on the sequence. Writers only.
func (s *pshard) rebucket(d *ptable, i uint64, b []pentry, capacity int) []pentry {
	n, ordered := bucketHeader(b)
	nb := newBucket(capacity, int64(b[0].val.Load()))
	for j := 1; j <= n; j++ {
		nb[j].key.Store(b[j].key.Load())
		nb[j].val.Store(b[j].val.Load())
	}
	setBucketHeader(nb, n, ordered)
	s.entries += int64(len(nb) - len(b))
	d.slots[i].b.Store(&nb[0])
	return nb
}

// remove drops op.Slot from the holders of op.Hash and deletes the block
// (and its page, when it was the last) when nobody holds it any more. It
// returns -1 when it deleted the block, and whether op.Slot was a holder.
// Writers only.
func (s *pshard) remove(op *Op) (deleted int, dropped bool) {
	d := s.dir.Load()
	i, found := d.pos(uint64(op.Page))
	if !found {
		return 0, false
	}
	ps := &d.slots[i]
	b := bucketOf(ps.b.Load())
	n, ordered := bucketHeader(b)
	h := uint64(op.Hash)
	j := findEntry(b, n, ordered, int(op.Pos%PageSize), h)
	if j == 0 {
		return 0, false
	}
	w := b[j].val.Load()
	nw, held := s.dropHolder(w, op.Slot, maxInlinePaged, w&offMask)
	if !held {
		return 0, false
	}
	ps.note(wordOff(w), h, s.decode(nw))
	if nw == w {
		return 0, true // an overflow set changed in place
	}
	if nw != 0 {
		b[j].val.Store(nw)
		return 0, true
	}
	// Delete entry j: the last entry takes its place.
	if j != n {
		b[j].val.Store(b[n].val.Load())
		b[j].key.Store(b[n].key.Load())
	}
	b[n].key.Store(0)
	b[n].val.Store(0)
	setBucketHeader(b, n-1, ordered && j == n)
	s.count--
	switch {
	case n == 1:
		d.deleteAt(i)
		s.pages--
		s.entries -= int64(len(b))
		if d.size() > s.minSize && s.pages*8 < d.size() {
			s.resize(d.size() / 2)
		}
	case len(b)-1 > minBucket && (n-1)*4 <= len(b)-1:
		s.rebucket(d, i, b, (len(b)-1)/2)
	}
	return -1, true
}

// resize rebuilds the directory at the given size and publishes it; see
// shard.resize. Writers only.
func (s *pshard) resize(size int) *ptable {
	old := s.dir.Load()
	s.seq.Add(1) // even: readers may read old
	d := newPtable(size)
	for i := range old.slots {
		if old.slots[i].key.Load() != 0 {
			d.insertFresh(&old.slots[i])
		}
	}
	s.seq.Add(1)
	s.dir.Store(d)
	return d
}

// holders returns the holders of block h of page page (empty when absent).
// It takes no lock; see shard.holders.
func (s *pshard) holders(page uint64, off int, h uint64) (b HostBitmap) {
	s.readStable(func() { b = s.decode(s.find(s.dir.Load(), page, off, h)) })
	return b
}

// find returns the holder word of block h at offset off of page page, or 0.
func (s *pshard) find(d *ptable, page uint64, off int, h uint64) uint64 {
	ps := d.find(page)
	if ps == nil {
		return 0
	}
	b := bucketOf(ps.b.Load())
	n, ordered := bucketHeader(b)
	if j := findEntry(b, n, ordered, off, h); j > 0 {
		return b[j].val.Load()
	}
	return 0
}

// sweep removes every slot in dead from every block of the shard, deletes
// blocks and pages nobody holds any more, and rebuilds the directory, the
// buckets and the overflow array; see shard.sweep. Writers only.
func (s *pshard) sweep(dead HostBitmap) int {
	s.seq.Add(1) // even while the new directory is built from the old one
	old := s.dir.Load()
	keep := make([]pslot, 0, s.pages)
	var bms []HostBitmap
	count := 0
	var entries int64
	var tmp [][2]uint64 // one bucket's surviving (hash, word) pairs
	for i := range old.slots {
		k := old.slots[i].key.Load()
		if k == 0 {
			continue
		}
		b := bucketOf(old.slots[i].b.Load())
		tmp = tmp[:0]
		n, _ := bucketHeader(b)
		for j := 1; j <= n; j++ {
			w := b[j].val.Load()
			hb := s.decode(w).AndNot(dead)
			var nw uint64
			switch c := hb.Count(); {
			case c == 0:
				continue
			case c <= maxInlinePaged:
				nw = inlineFromBitmap(hb) | w&offMask
			default:
				nw = makeOverflow(uint32(len(bms))) | w&offMask
				bms = append(bms, hb)
			}
			tmp = append(tmp, [2]uint64{b[j].key.Load(), nw})
		}
		m := len(tmp)
		if m == 0 {
			continue
		}
		c := minBucket
		for c < m {
			c *= 2
		}
		nb := newBucket(c, int64(b[0].val.Load()))
		ordered := true
		for j, e := range tmp {
			nb[j+1].key.Store(e[0])
			nb[j+1].val.Store(e[1])
			ordered = ordered && wordOff(e[1]) == j
		}
		setBucketHeader(nb, m, ordered)
		keep = append(keep, pslot{})
		ps := &keep[len(keep)-1]
		ps.b.Store(&nb[0])
		for j := 1; j <= m; j++ {
			w := nb[j].val.Load()
			hb := HostBitmap{}
			if isOverflow(w) {
				hb = bms[overflowRef(w)]
			} else {
				hb = inlineBitmap(w)
			}
			ps.note(wordOff(w), nb[j].key.Load(), hb)
		}
		ps.key.Store(k)
		count += m
		entries += int64(len(nb))
	}
	deleted := s.count - count
	size := s.minSize
	for len(keep)*growDen > size*growNum {
		size *= 2
	}
	if size < old.size() && len(keep)*4 > old.size() {
		size = old.size()
	}
	d := newPtable(size)
	for i := range keep {
		d.insertFresh(&keep[i])
	}
	newOv := make([]ovBitmap, len(bms))
	for i, b := range bms {
		newOv[i].store(b)
	}
	s.seq.Add(1) // odd again: publish the directory and overflow array together
	s.over.Store(&newOv)
	s.dir.Store(d)
	s.pages, s.count, s.entries = len(keep), count, entries
	s.free = s.free[:0]
	s.overUsed = len(bms)
	return deleted
}

// forEach calls f for every block of the shard under the write lock, with
// its page key and chain position.
func (s *pshard) forEach(f func(page uint64, pos int64, key uint64, holders HostBitmap)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.dir.Load()
	for i := range d.slots {
		k := d.slots[i].key.Load()
		if k == 0 {
			continue
		}
		b := bucketOf(d.slots[i].b.Load())
		base := int64(b[0].val.Load())
		n, _ := bucketHeader(b)
		for j := 1; j <= n; j++ {
			w := b[j].val.Load()
			f(k, base+int64(wordOff(w)), b[j].key.Load(), s.decode(w))
		}
	}
}

// bytes returns the memory of the shard's directory, buckets and overflow
// array.
func (s *pshard) bytes() int64 {
	return int64(s.dir.Load().size())*int64(unsafe.Sizeof(pslot{})) + s.entries*16 + int64(cap(*s.over.Load()))*32
}
