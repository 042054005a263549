package index

// This file is the index's persistence API (package snapshot writes it to
// disk): an export that walks the blocks with their exact holders and
// tiers, and a restore that rebuilds them through ordinary batched writes.
// Neither depends on how the shards lay blocks out: Export reads through
// the same per-shard walk as Dump, and Restore goes through Apply.

// ExportedPod is one live slot of an export.
type ExportedPod struct {
	Slot Slot
	ID   string
}

// TierSet is a set of tiers, one bit (1<<Tier) each.
type TierSet uint8

// Has reports whether t is in the set.
func (ts TierSet) Has(t Tier) bool { return ts&(1<<t) != 0 }

// ExportedHolder is one pod's copy of an exported block, with the tiers it
// keeps it on when that is not the GPU alone.
type ExportedHolder struct {
	Slot  Slot
	Tiers TierSet // 0: the GPU only
}

// ExportedBlock is one block of an export: its hash and its exact holders,
// by slot. Learned holdings (speculative, approximate) are left out: they
// expire, and a restored index has no learner state to expire them with.
type ExportedBlock struct {
	Hash    BlockHash
	Holders []ExportedHolder
	// Pos and Page place the block in its chain in the paged layout (see
	// Op); the block layout does not keep them and leaves them zero.
	Pos  int32
	Page BlockHash
}

// LivePods returns the live slots and their pod ids, by slot.
func (ix *Index) LivePods() []ExportedPod {
	r := &ix.pods
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []ExportedPod
	for i := 0; i < MaxPods; i++ {
		if r.state[i] == slotLive {
			out = append(out, ExportedPod{Slot: Slot(i), ID: r.ids[i]})
		}
	}
	return out
}

// Export calls fn with every block that has a live exact holder, a batch at
// a time (about one shard's blocks, in no particular order). fn
// owns nothing: the slice and the holder slices are reused after it
// returns. Export stops at fn's first error and returns it.
//
// Export is not a point-in-time picture: it reads one shard at a time while
// writes go on, so every block reflects some moment between the call and
// its return. A caller that records what it applied before calling Export
// (package events' per-holder sequence numbers) and replays what came after
// gets the same index, because each write is idempotent and decides its
// (pod, block, tier) alone: the last write replayed wins.
func (ix *Index) Export(fn func([]ExportedBlock) error) error {
	var (
		raw   []DumpEntry
		batch []ExportedBlock
		hold  []ExportedHolder
		slots []Slot
	)
	for i := 0; i < ix.shardCount(); i++ {
		raw = raw[:0]
		// Copy under the shard lock, filter after: the learner's and the
		// tier maps' locks are taken before shard locks elsewhere.
		ix.forEachInShard(i, func(e DumpEntry) { raw = append(raw, e) })
		alive := ix.Alive()
		batch, hold = batch[:0], hold[:0]
		for _, e := range raw {
			start := len(hold)
			slots = e.Holders.And(alive).Slots(slots[:0])
			for _, s := range slots {
				if ix.learnedBit(s, e.Hash) {
					continue
				}
				hold = append(hold, ExportedHolder{Slot: s, Tiers: ix.exportTiers(s, e.Hash)})
			}
			if len(hold) > start {
				batch = append(batch, ExportedBlock{Hash: e.Hash, Holders: hold[start:len(hold):len(hold)], Pos: e.Pos, Page: e.Page})
			}
		}
		if len(batch) == 0 {
			continue
		}
		if err := fn(batch); err != nil {
			return err
		}
	}
	return nil
}

// shardCount is the number of shards of the index's layout.
func (ix *Index) shardCount() int {
	if ix.pshards != nil {
		return len(ix.pshards)
	}
	return len(ix.shards)
}

// forEachInShard calls fn with every block of shard i, under its lock, with
// its place in the paged layout.
func (ix *Index) forEachInShard(i int, fn func(DumpEntry)) {
	if ix.pshards != nil {
		ix.pshards[i].forEach(func(page uint64, pos int64, k uint64, b HostBitmap) {
			fn(DumpEntry{Hash: BlockHash(k), Holders: b, Pos: int32(pos), Page: BlockHash(page)})
		})
		return
	}
	ix.shards[i].forEach(func(k uint64, b HostBitmap) { fn(DumpEntry{Hash: BlockHash(k), Holders: b}) })
}

// learnedBit reports whether slot s holds h only as a learned block.
func (ix *Index) learnedBit(s Slot, h BlockHash) bool {
	l := ix.learn.Load()
	if l == nil || !l.activeSet().Has(s) {
		return false
	}
	st := &l.slots[s]
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.approx {
		return true // every holding of an approximate slot is learned
	}
	if st.set == nil {
		return false
	}
	_, ok := st.set.lookup(h)
	return ok
}

// exportTiers returns the tiers pod s keeps h on, 0 for the GPU alone.
func (ix *Index) exportTiers(s Slot, h BlockHash) TierSet {
	tm := &ix.tiers[s]
	if tm.n.Load() == 0 {
		return 0
	}
	tm.mu.Lock()
	ts := tm.m[h]
	tm.mu.Unlock()
	if ts == gpuOnly {
		return 0
	}
	return TierSet(ts)
}

// RestoreOps appends to ops the writes that give slot s block b's hash on
// tiers (0: the GPU alone), at b's place (Pos, Page: the paged layout
// needs them), in an order Apply turns into exactly that holding.
// Restoring an export is: Register each pod, then Apply the RestoreOps of
// its blocks in batches. The index should be fresh (or the pods cleared),
// and of the layout the export was taken from.
func RestoreOps(ops []Op, s Slot, b *ExportedBlock, tiers TierSet) []Op {
	if tiers == 0 {
		return append(ops, Op{Kind: OpStore, Slot: s, Tier: TierGPU, Hash: b.Hash, Pos: b.Pos, Page: b.Page})
	}
	// GPU first: a store on another tier of a block not yet held records
	// that tier alone, and a GPU store after it adds the GPU.
	for t := TierGPU; t <= TierStorage; t++ {
		if tiers.Has(t) {
			ops = append(ops, Op{Kind: OpStore, Slot: s, Tier: t, Hash: b.Hash, Pos: b.Pos, Page: b.Page})
		}
	}
	return ops
}
