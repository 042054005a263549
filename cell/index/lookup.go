package index

// lookup returns the holders of h. It takes no lock (see shard.holders).
func (ix *Index) lookup(h BlockHash, r *MatchResult) HostBitmap {
	r.lookups++
	return ix.shards[shardOf(uint64(h))].holders(uint64(h))
}

// probeSlot is one lookup of a round: the hash in, the holders out, and
// the state of the optimistic read in between.
type probeSlot struct {
	h     BlockHash
	b     HostBitmap
	s     *shard
	t     *table
	seq   uint64
	i, k0 uint64
}

// lookupMany fills ps[i].b with the holders of ps[i].h. It first issues the
// loads of every probe's home slot, which usually miss the cache and do not
// depend on each other, so the core overlaps them; only then does it finish
// each probe. A probe whose shard was being written is redone on its own.
func (ix *Index) lookupMany(ps []probeSlot, r *MatchResult) {
	r.lookups += len(ps)
	for i := range ps {
		p := &ps[i]
		k := uint64(p.h)
		p.s = &ix.shards[shardOf(k)]
		p.seq = p.s.seq.Load()
		p.t = p.s.tab.Load()
		p.i = p.t.home(k)
		p.k0 = p.t.slots[p.i].key.Load() // the miss
	}
	for i := range ps {
		p := &ps[i]
		if p.seq&1 == 0 {
			p.b = p.s.decode(p.t.findFrom(uint64(p.h), p.i, p.k0))
			if p.s.seq.Load() == p.seq {
				continue
			}
		}
		p.b = p.s.holders(uint64(p.h))
	}
}

// findFrom is table.find continued from slot i whose key k was loaded
// already.
func (t *table) findFrom(key, i, k uint64) uint64 {
	for n := uint64(0); n <= t.mask; n++ {
		if k == key {
			return t.slots[i].val.Load()
		}
		if k == 0 {
			return 0
		}
		i = (i + 1) & t.mask
		k = t.slots[i].key.Load()
	}
	return 0
}

// decode turns a holder word read under the sequence lock into a bitmap.
func (s *shardBase) decode(w uint64) HostBitmap {
	if isOverflow(w) {
		ov := *s.over.Load()
		if ref := overflowRef(w); int(ref) < len(ov) {
			return ov[ref].load()
		}
		return HostBitmap{}
	}
	if w == 0 {
		return HostBitmap{}
	}
	return inlineBitmap(w)
}
