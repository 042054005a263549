package index

import (
	"sync"
	"sync/atomic"
)

// tierSet is a set of tiers, one bit each.
type tierSet uint8

func tierBit(t Tier) tierSet { return 1 << t }

const gpuOnly = tierSet(1) << TierGPU

// tierMap keeps, for one pod, the tiers of the blocks that are not on the GPU
// tier alone. A block the pod holds with no entry here is on the GPU only,
// which is the common case and costs nothing. The map is off the query path:
// Match never reads it; TierOf reads it for the winner's cache hint.
type tierMap struct {
	mu sync.Mutex
	m  map[BlockHash]tierSet
	n  atomic.Int32 // len(m), read without the lock to skip empty maps
}

// applyTiers folds tier information into ops. Ops on GPU for pods with no
// tier entries pass through unchanged (and ops is returned as is). Otherwise
// it returns a rewritten copy in sc.ops where a remove that leaves the block
// on another tier is dropped, since the pod still holds the block.
func (ix *Index) applyTiers(ops []Op, sc *applyScratch, res *ApplyResult) []Op {
	simple := true
	for i := range ops {
		if ops[i].Tier != TierGPU || ix.tiers[ops[i].Slot].n.Load() != 0 {
			simple = false
			break
		}
	}
	if simple {
		return ops
	}
	out := sc.ops[:0]
	if sc.held == nil {
		sc.held = make(map[slotHash]bool)
	}
	clear(sc.held)
	for i := range ops {
		op := ops[i]
		tm := &ix.tiers[op.Slot]
		if (op.Tier == TierGPU && tm.n.Load() == 0) || tm.update(ix, op, sc.held) {
			out = append(out, op)
			// The holder bit this op will set or clear, for later ops of the
			// batch on the same block: the index is written only after.
			sc.held[slotHash{op.Slot, op.Hash}] = op.Kind == OpStore
		}
	}
	sc.ops = out
	return out
}

// slotHash names one pod's copy of one block.
type slotHash struct {
	slot Slot
	hash BlockHash
}

// update records op's tier change and reports whether the op must still
// change the pod's holder bit. held has the holder bits earlier ops of the
// same batch will leave, which the index does not show yet.
func (tm *tierMap) update(ix *Index, op Op, held map[slotHash]bool) bool {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	if !ix.isAlive(op.Slot) {
		return true // applyOne counts it as stale
	}
	cur, has := tm.m[op.Hash]
	switch op.Kind {
	case OpStore:
		if !has {
			if op.Tier == TierGPU {
				return true
			}
			// Holding it already means it is on the GPU; else this tier alone.
			holds, pending := held[slotHash{op.Slot, op.Hash}]
			if !pending {
				holds = ix.holdsOp(&op)
			}
			if holds {
				cur = gpuOnly
			}
		}
		cur |= tierBit(op.Tier)
		tm.set(op.Hash, cur)
		return true
	case OpRemove:
		if !has {
			return op.Tier == TierGPU
		}
		cur &^= tierBit(op.Tier)
		tm.set(op.Hash, cur)
		return cur == 0
	}
	return true
}

func (tm *tierMap) set(h BlockHash, ts tierSet) {
	if ts == 0 || ts == gpuOnly {
		delete(tm.m, h)
	} else {
		if tm.m == nil {
			tm.m = make(map[BlockHash]tierSet)
		}
		tm.m[h] = ts
	}
	tm.n.Store(int32(len(tm.m)))
}

func (tm *tierMap) reset() {
	tm.mu.Lock()
	tm.m = nil
	tm.n.Store(0)
	tm.mu.Unlock()
}

// holdsOp reports whether op's slot holds op's block right now.
func (ix *Index) holdsOp(op *Op) bool {
	if ix.pshards != nil {
		return validPlace(op) && ix.pshards[shardOf(uint64(op.Page))].holders(uint64(op.Page), int(op.Pos%PageSize), uint64(op.Hash)).Has(op.Slot)
	}
	return ix.shards[shardOf(uint64(op.Hash))].holders(uint64(op.Hash)).Has(op.Slot)
}

// holdsAt reports whether slot s holds block i of chain right now.
func (ix *Index) holdsAt(s Slot, chain []BlockHash, i int) bool {
	h := uint64(chain[i])
	if ix.pshards != nil {
		page := uint64(PageKey(chain, i))
		return ix.pshards[shardOf(page)].holders(page, i%PageSize, h).Has(s)
	}
	return ix.shards[shardOf(h)].holders(h).Has(s)
}

// TierOf returns the best tier on which pod s holds block h: GPU when the
// block is there (or the pod does not hold it at all), else CPU, else storage.
func (ix *Index) TierOf(s Slot, h BlockHash) Tier {
	tm := &ix.tiers[s]
	if tm.n.Load() == 0 {
		return TierGPU
	}
	tm.mu.Lock()
	ts, ok := tm.m[h]
	tm.mu.Unlock()
	if !ok {
		return TierGPU
	}
	for t := TierGPU; t <= TierStorage; t++ {
		if ts&tierBit(t) != 0 {
			return t
		}
	}
	return TierGPU
}
