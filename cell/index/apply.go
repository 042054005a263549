package index

import "sync/atomic"

// OpKind says what an Op does.
type OpKind uint8

// The write operations.
const (
	// OpStore records that the pod holds the block on the op's tier.
	OpStore OpKind = iota + 1
	// OpRemove records that the pod dropped the block from the op's tier;
	// the pod stops holding it when no tier keeps it.
	OpRemove
)

// Op is one write to the index.
//
// Pos and Page place the block in its chain; only the paged layout reads
// them (see Layout), and it counts an op without a consistent place as
// stale. SetPlace fills both from a chain.
type Op struct {
	Kind OpKind
	Slot Slot
	Tier Tier
	Hash BlockHash
	// Pos is the block's position in its chain, 0 for a first block.
	Pos int32
	// Page is the hash of the first block of the block's page: the block at
	// position Pos - Pos%PageSize of the chain (Hash itself at a page start).
	Page BlockHash
}

// SetPlace sets op's Pos and Page for the block at position i of chain.
func (op *Op) SetPlace(chain []BlockHash, i int) {
	op.Pos = int32(i)
	op.Page = chain[i-i%PageSize]
}

// ApplyResult counts what an Apply call did.
type ApplyResult struct {
	// Created and Deleted count blocks added to and deleted from the index.
	Created, Deleted int
	// CapDrops counts stores refused because MaxBlocks was reached.
	CapDrops int
	// Stale counts ops ignored because their slot was not alive, and ops
	// with the reserved zero hash.
	Stale int

	// held gathers the per-pod held-count changes; apply flushes it.
	held heldDelta
}

// reserver hands out room for new blocks one at a time when the index is
// near its cap.
type reserver struct {
	blocks *atomic.Int64
	max    int64
}

func (r *reserver) take() bool {
	for {
		n := r.blocks.Load()
		if n >= r.max {
			return false
		}
		if r.blocks.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// smallBatch is the batch size under which Apply locks per op instead of
// grouping by shard: grouping costs a counting sort.
const smallBatch = 8

type applyScratch struct {
	order  []int32
	starts [numShards + 1]int32
	ops    []Op
	held   map[slotHash]bool // applyTiers' view of holder bits within a batch
}

// Apply applies ops as one batch: grouped by shard, one lock per shard, the
// order of ops on one hash kept. Writes are idempotent: storing a held block
// and removing an absent one change nothing. Ops for slots that are not alive
// are ignored, so a pod's writes that race with its Kill cannot leak into a
// reused slot. Apply may be called concurrently; ops of one pod should come
// from one goroutine (the index keeps their order only within a call).
//
// With a Learner attached, Apply holds the learner locks of the slots it
// writes, and the learner folds the writes in (see Learner.reconcile).
func (ix *Index) Apply(ops []Op) ApplyResult {
	l := ix.learn.Load()
	if l == nil || len(ops) == 0 {
		return ix.apply(ops, nil)
	}
	locked := l.lockSlots(ops)
	defer l.unlockSlots(locked)
	return ix.apply(ops, l)
}

// apply is Apply without the learner's locks; when l is not nil the caller
// holds them and l reconciles the ops that took effect.
func (ix *Index) apply(ops []Op, l *Learner) ApplyResult {
	var res ApplyResult
	if len(ops) == 0 {
		return res
	}
	sc := ix.scratch.Get().(*applyScratch)
	defer ix.scratch.Put(sc)
	ops = ix.applyTiers(ops, sc, &res)
	if l != nil {
		defer l.reconcile(ops)
	}

	stores := int64(0)
	for i := range ops {
		if ops[i].Kind == OpStore {
			stores++
		}
	}
	max := int64(ix.cfg.MaxBlocks)
	if ix.blocks.Add(stores) > max {
		ix.blocks.Add(-stores)
		ix.applyOrdered(ops, &res)
		res.held.flush(&ix.held)
		return res
	}
	if len(ops) <= smallBatch {
		for i := range ops {
			sh := shardOf(ix.shardKey(&ops[i]))
			s := ix.base(sh)
			s.beginWrite()
			ix.applyOne(sh, &ops[i], nil, &res)
			s.endWrite()
		}
	} else {
		ix.applyGrouped(ops, sc, &res)
	}
	ix.blocks.Add(int64(res.Created-res.Deleted) - stores)
	res.held.flush(&ix.held)
	return res
}

// applyGrouped sorts op positions by shard (a stable counting sort) and
// applies each shard's ops under one lock.
func (ix *Index) applyGrouped(ops []Op, sc *applyScratch, res *ApplyResult) {
	var counts [numShards]int32
	for i := range ops {
		counts[shardOf(ix.shardKey(&ops[i]))]++
	}
	sc.starts[0] = 0
	for i := 0; i < numShards; i++ {
		sc.starts[i+1] = sc.starts[i] + counts[i]
	}
	if cap(sc.order) < len(ops) {
		sc.order = make([]int32, len(ops))
	}
	order := sc.order[:len(ops)]
	next := counts // reuse as write cursors
	for i := 0; i < numShards; i++ {
		next[i] = sc.starts[i]
	}
	for i := range ops {
		sh := shardOf(ix.shardKey(&ops[i]))
		order[next[sh]] = int32(i)
		next[sh]++
	}
	if prefetchWrites && ix.pshards == nil {
		touchHomes(&ix.shards, ops)
	}
	for sh := 0; sh < numShards; sh++ {
		lo, hi := sc.starts[sh], sc.starts[sh+1]
		if lo == hi {
			continue
		}
		s := ix.base(sh)
		s.beginWrite()
		for _, oi := range order[lo:hi] {
			ix.applyOne(sh, &ops[oi], nil, res)
		}
		s.endWrite()
	}
}

// applyOrdered is the path near the cap: ops one by one in call order, new
// blocks reserved one at a time, and a pod whose store was refused gets no
// later store in this call.
func (ix *Index) applyOrdered(ops []Op, res *ApplyResult) {
	r := reserver{blocks: &ix.blocks, max: int64(ix.cfg.MaxBlocks)}
	var refused HostBitmap
	for i := range ops {
		op := &ops[i]
		sh := shardOf(ix.shardKey(op))
		s := ix.base(sh)
		s.beginWrite()
		if op.Kind == OpStore && refused.Has(op.Slot) {
			s.capDrops++
			res.CapDrops++
		} else if !ix.applyOne(sh, op, &r, res) {
			refused = refused.Set(op.Slot)
		}
		s.endWrite()
	}
	ix.blocks.Add(-int64(res.Deleted))
}

// applyOne applies one op to its shard sh, which the caller has locked. It
// returns false when a store was refused for room.
func (ix *Index) applyOne(sh int, op *Op, r *reserver, res *ApplyResult) bool {
	if ps := ix.pshards; ps != nil {
		return ix.applyPaged(&ps[sh], op, r, res)
	}
	s := &ix.shards[sh]
	if op.Hash == 0 || !ix.isAlive(op.Slot) {
		s.stale++
		res.Stale++
		return true
	}
	switch op.Kind {
	case OpStore:
		created, added, ok := s.store(uint64(op.Hash), op.Slot, r)
		if !ok {
			res.CapDrops++
			return false
		}
		res.Created += created
		if added {
			res.held.add(&ix.held, op.Slot, 1)
		}
	case OpRemove:
		deleted, dropped := s.remove(uint64(op.Hash), op.Slot)
		res.Deleted -= deleted
		if dropped {
			res.held.add(&ix.held, op.Slot, -1)
		}
	}
	return true
}

// applyPaged is applyOne for the paged layout. An op whose place is not
// consistent (see validPlace) is counted as stale.
func (ix *Index) applyPaged(s *pshard, op *Op, r *reserver, res *ApplyResult) bool {
	if op.Hash == 0 || !validPlace(op) || !ix.isAlive(op.Slot) {
		s.stale++
		res.Stale++
		return true
	}
	switch op.Kind {
	case OpStore:
		created, added, ok := s.store(op, r)
		if !ok {
			res.CapDrops++
			return false
		}
		res.Created += created
		if added {
			res.held.add(&ix.held, op.Slot, 1)
		}
	case OpRemove:
		deleted, dropped := s.remove(op)
		res.Deleted -= deleted
		if dropped {
			res.held.add(&ix.held, op.Slot, -1)
		}
	}
	return true
}

// Store records that pod s holds the blocks of chain on tier t. chain is in
// chain order (each block the parent of the next), as an engine's
// BlockStored event lists them; the paged layout takes it to start at the
// chain's first block (use Apply with placed ops otherwise). It returns how
// many leading blocks of chain were stored; fewer than len(chain) only when
// the cap refused one.
func (ix *Index) Store(s Slot, t Tier, chain []BlockHash) int {
	ops := ix.opsFor(OpStore, s, t, chain)
	res := ix.Apply(ops.ops)
	ix.scratch.Put(ops)
	if res.CapDrops > 0 {
		return max(0, len(chain)-res.CapDrops)
	}
	return len(chain)
}

// Remove records that pod s dropped the given blocks from tier t. The
// paged layout cannot find a block by its hash alone and counts these ops
// as stale: use Apply with placed ops (Op.SetPlace) there.
func (ix *Index) Remove(s Slot, t Tier, hashes []BlockHash) {
	ops := ix.opsFor(OpRemove, s, t, hashes)
	ix.Apply(ops.ops)
	ix.scratch.Put(ops)
}

func (ix *Index) opsFor(kind OpKind, s Slot, t Tier, hashes []BlockHash) *applyScratch {
	sc := ix.scratch.Get().(*applyScratch)
	sc.ops = sc.ops[:0]
	for _, h := range hashes {
		sc.ops = append(sc.ops, Op{Kind: kind, Slot: s, Tier: t, Hash: h})
	}
	if kind == OpStore && ix.pshards != nil {
		for i := range sc.ops {
			sc.ops[i].SetPlace(hashes, i)
		}
	}
	return sc
}

// prefetchWrites turns the prefetch pass of batched writes on; benchmarks
// turn it off to compare.
var prefetchWrites = true

// touchSink keeps touchHomes' loads from being optimised away.
var touchSink atomic.Uint64

// touchHomes loads the home slot of every op's key before the batch is
// applied. The loads are independent of each other, so the core overlaps
// their cache misses (a dozen or so in flight) instead of taking them one
// at a time inside the apply loop, where each probe waits for the last.
// It reads without locks: a stale table only wastes the prefetch.
func touchHomes(shards *[numShards]shard, ops []Op) {
	var acc uint64
	for i := range ops {
		k := uint64(ops[i].Hash)
		t := shards[shardOf(k)].tab.Load()
		acc += t.slots[t.home(k)].key.Load()
	}
	touchSink.Store(acc)
}
