package index

import "runtime"

// lookup returns the holders of h. It takes no lock (see shard.holders).
func (ix *Index) lookup(h BlockHash, r *MatchResult) HostBitmap {
	r.lookups++
	return ix.shards[shardOf(uint64(h))].holders(uint64(h))
}

// lookup3 returns the holders of three hashes at once. It issues the three
// table loads before it looks at any of them, so the three memory misses of
// a large index overlap instead of queueing: a 4-ary search with lookup3 has
// about half the latency of a binary search for the same chain.
func (ix *Index) lookup3(a, b, c BlockHash, r *MatchResult) (ha, hb, hc HostBitmap) {
	r.lookups += 3
	ka, kb, kc := uint64(a), uint64(b), uint64(c)
	sa, sb, sc := &ix.shards[shardOf(ka)], &ix.shards[shardOf(kb)], &ix.shards[shardOf(kc)]
	for spins := 0; ; spins++ {
		qa, qb, qc := sa.seq.Load(), sb.seq.Load(), sc.seq.Load()
		if (qa|qb|qc)&1 == 0 {
			ta, tb, tc := sa.tab.Load(), sb.tab.Load(), sc.tab.Load()
			ia, ib, ic := ta.home(ka), tb.home(kb), tc.home(kc)
			// The three independent loads that usually miss the cache.
			fa, fb, fc := ta.slots[ia].key.Load(), tb.slots[ib].key.Load(), tc.slots[ic].key.Load()
			ha = sa.decode(ta.findFrom(ka, ia, fa))
			hb = sb.decode(tb.findFrom(kb, ib, fb))
			hc = sc.decode(tc.findFrom(kc, ic, fc))
			if sa.seq.Load() == qa && sb.seq.Load() == qb && sc.seq.Load() == qc {
				return ha, hb, hc
			}
		}
		if spins > 16 {
			runtime.Gosched()
		}
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
func (s *shard) decode(w uint64) HostBitmap {
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
