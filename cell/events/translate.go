package events

import (
	"slices"
	"strings"
	"sync"

	"github.com/cellrouter/cellrouter/cell/index"
)

// holder is the Applier's state for one publisher: its index slot, its
// sequence tracker, its engine block forest and reusable buffers. Its mutex
// serialises the publisher's batches with kills and give-ups.
type holder struct {
	mu   sync.Mutex
	id   string
	pod  string
	slot index.Slot
	dead bool // killed: the holder left the Applier's map

	seq SeqTracker
	// resume is set for a holder restored from a snapshot until a
	// transport asks where to resume it (Applier.Resume).
	resume bool

	// group is the KV cache group the holder indexes: the group of its first
	// full-attention BlockStored since the last clear.
	group    int
	hasGroup bool

	chains chains

	// seed caches the chain seed of the last (model, LoRA, salt) seen.
	seedModel, seedLoRA, seedSalt string
	seed                          index.BlockHash
	hasSeed                       bool

	// bound is the most router blocks the holder may index (evict.go);
	// evicted and nEvicted count its evictions not yet flushed to the
	// Applier's counters.
	bound    int
	evicted  Evictions
	nEvicted int
	// limit is what the holder may index during the current batch: its
	// bound, or its fair share of an index under pressure (limitOf), and
	// limitReason the reason its evictions count under.
	limit       int
	limitReason EvictReason

	// Reusable buffers for one batch.
	ops    []index.Op
	toks   []uint32
	hashes []index.BlockHash
}

// tierOf maps an engine medium to an index tier: GPU (or unsaid) and CPU to
// their tiers, anything else to the storage tier.
func tierOf(m Medium) index.Tier {
	switch {
	case m == "" || strings.EqualFold(string(m), "GPU"):
		return index.TierGPU
	case strings.EqualFold(string(m), "CPU"), strings.EqualFold(string(m), "CPU_PINNED"): // vLLM, SGLang
		return index.TierCPU
	}
	return index.TierStorage
}

// clearState forgets every block of the holder (not its sequence).
func (h *holder) clearState() {
	h.chains.reset()
	h.hasGroup = false
	h.ops = h.ops[:0]
}

// translate turns the events of b (already validated) into index ops in
// h.ops, updating h's forest as it goes. It reports whether an
// AllBlocksCleared requires the holder's slot to be cleared before the ops
// are applied (ops before the clear are discarded: the clear wipes them).
func (a *Applier) translate(h *holder, b *Batch, model string) (wipe bool) {
	for i := range b.Events {
		ev := &b.Events[i]
		switch ev.Kind {
		case KindBlockStored:
			if r, dropped := a.stored(h, ev, model); dropped {
				a.counters.EventsDropped[r].Add(1)
				if a.cfg.OnDrop != nil {
					a.dropped(h.pod, h.id, r, storedDetail(r, ev))
				}
				continue
			}
		case KindBlockRemoved:
			if a.removed(h, ev) {
				a.counters.EventsDropped[ReasonOtherGroup].Add(1)
				continue
			}
		case KindAllBlocksCleared:
			h.clearState()
			wipe = true
			a.counters.Clears.Add(1)
		}
		a.counters.Events[ev.Kind].Add(1)
	}
	return wipe
}

// seedFor returns the chain seed for model, lora and salt, cached per holder
// for the common case of one identity.
func (a *Applier) seedFor(h *holder, model, lora, salt string) index.BlockHash {
	if !h.hasSeed || h.seedModel != model || h.seedLoRA != lora || h.seedSalt != salt {
		h.seed = seedOf(model, lora, salt)
		h.seedModel, h.seedLoRA, h.seedSalt, h.hasSeed = model, lora, salt, true
	}
	return h.seed
}

// keysOK reports whether block i of ev has extra keys that all map onto the
// request side's cache identity (see blockIdentity), and the cache salt of a
// chain's first block.
func keysOK(ev *Event, i int, first bool) (salt string, ok bool) {
	if i >= len(ev.ExtraKeys) || len(ev.ExtraKeys[i]) == 0 {
		return "", true
	}
	return blockIdentity(ev.ExtraKeys[i], first, ev.LoRAName, ev.LoRAID)
}

// stored adds a BlockStored event's blocks to h's forest and their router
// blocks to h.ops, evicting h's least recently used blocks when a bound is
// reached (evict.go). It returns the reason when it dropped the event (or
// the rest of it, for ReasonHolderFull: nothing but the event's own chain
// was left to evict), or when blocks of it were kept out of the index for
// their extra keys (ReasonExtraKeys; the blocks before them are indexed).
func (a *Applier) stored(h *holder, ev *Event, model string) (DropReason, bool) {
	if ev.SlidingWindow > 0 {
		return ReasonSlidingWindow, true
	}
	if !h.hasGroup {
		h.group, h.hasGroup = ev.GroupIdx, true
	} else if ev.GroupIdx != h.group {
		return ReasonOtherGroup, true
	}
	tier := tierOf(ev.Medium)
	bit := uint8(1) << tier
	parent := none
	skip := false     // the chain so far is not indexed
	unmapped := false // a block of this event was kept out for its keys
	// Without token ids the router cannot hash the blocks: they are tracked
	// (so that their descendants and removals resolve) but not indexed.
	noTokens := len(ev.TokenIDs) == 0
	var last index.BlockHash
	var pending []uint32
	// pos and page place the next router block: its chain position, and
	// the page key of the block before it.
	var pos int32
	var page index.BlockHash
	if ev.HasParent && ev.ParentHash != 0 {
		p, ok := h.chains.lookup(ev.ParentHash)
		if !ok {
			return ReasonUnknownParent, true
		}
		h.chains.touch(p)
		pn := h.chains.node(p)
		parent, last, pending, skip = p, pn.last, pn.pending, pn.skip
		pos, page = pn.place(pn.nRouter)
	} else {
		salt, ok := keysOK(ev, 0, true)
		if salt == "" {
			salt = ev.CacheSalt
		}
		skip = !ok || (ev.CacheSalt != "" && salt != ev.CacheSalt)
		last = a.seedFor(h, model, ev.LoRAName, salt)
	}
	bs := ev.BlockSize
	rbs := a.hasher.BlockSize
	for i, eh := range ev.BlockHashes {
		if i > 0 || parent != none {
			if _, ok := keysOK(ev, i, false); !ok {
				skip = true
			}
		}
		unmapped = unmapped || skip
		if n, ok := h.chains.lookup(eh); ok {
			// Stored again (a replay, or a new tier): continue from it.
			h.chains.touch(n)
			node := h.chains.node(n)
			if node.tiers&bit == 0 {
				node.tiers |= bit
				if !node.skip {
					h.ops = appendOps(h.ops, index.OpStore, h.slot, tier, node)
				}
			}
			parent, last, pending, skip = n, node.last, node.pending, node.skip
			pos, page = node.place(node.nRouter)
			continue
		}
		kr := 0 // the router blocks this block completes
		if !skip && !noTokens {
			kr = (len(pending) + bs) / rbs
		}
		if !a.makeRoom(h, parent, kr) {
			return ReasonHolderFull, true
		}
		n := h.chains.add(eh, parent)
		node := h.chains.node(n)
		node.tiers = bit
		node.pos0, node.pageIn = pos, page
		if skip || noTokens {
			node.skip = true
		} else {
			toks := ev.TokenIDs[i*bs : (i+1)*bs]
			if len(pending) > 0 {
				h.toks = append(append(h.toks[:0], pending...), toks...)
				toks = h.toks
			}
			hs := a.hasher.Extend(last, toks, h.hashes[:0])
			h.hashes = hs
			node.last = last
			if k := len(hs); k > 0 {
				h.chains.indexed += k
				node.nRouter = int32(k)
				node.router0 = hs[0]
				if k > 1 {
					node.routerRest = slices.Clone(hs[1:])
				}
				node.last = hs[k-1]
			}
			if rem := toks[len(hs)*rbs:]; len(rem) > 0 {
				node.pending = slices.Clone(rem)
			}
			h.ops = appendOps(h.ops, index.OpStore, h.slot, tier, node)
		}
		parent, last, pending = n, node.last, node.pending
		pos, page = node.place(node.nRouter)
	}
	switch {
	case noTokens:
		return ReasonNoTokens, true
	case unmapped:
		return ReasonExtraKeys, true
	}
	return 0, false
}

// removed applies a BlockRemoved event: each block leaves the event's tier,
// and a block left on no tier leaves the forest with all its descendants. It
// reports true when it ignored the event as another group's.
func (a *Applier) removed(h *holder, ev *Event) (otherGroup bool) {
	if h.hasGroup && ev.GroupIdx != h.group {
		return true
	}
	tier := tierOf(ev.Medium)
	bit := uint8(1) << tier
	for _, eh := range ev.BlockHashes {
		n, ok := h.chains.lookup(eh)
		if !ok || h.chains.node(n).tiers&bit == 0 {
			a.counters.RemovesUnknown.Add(1)
			continue
		}
		node := h.chains.node(n)
		node.tiers &^= bit
		if !node.skip {
			h.ops = appendOps(h.ops, index.OpRemove, h.slot, tier, node)
		}
		if node.tiers == 0 {
			h.ops, _ = h.chains.removeSubtree(n, h.ops, h.slot)
		}
	}
	return false
}

// appendOps appends one op of kind on tier for every router block node
// completed, placed in its chain (Op.Pos, Op.Page) for the paged layout.
func appendOps(ops []index.Op, kind index.OpKind, slot index.Slot, tier index.Tier, node *chainNode) []index.Op {
	page := node.pageIn
	for j := int32(0); j < node.nRouter; j++ {
		h, pos := node.routerHash(j), node.pos0+j
		if pos%index.PageSize == 0 {
			page = h
		}
		ops = append(ops, index.Op{Kind: kind, Slot: slot, Tier: tier, Hash: h, Pos: pos, Page: page})
	}
	return ops
}

// appendRemoves appends the removal of node's router blocks from every tier
// the node is on.
func appendRemoves(ops []index.Op, slot index.Slot, node *chainNode) []index.Op {
	if node.skip {
		return ops
	}
	for t := index.Tier(0); t < 8; t++ {
		if node.tiers&(1<<t) != 0 {
			ops = appendOps(ops, index.OpRemove, slot, t, node)
		}
	}
	return ops
}

// storedDetail explains why a BlockStored was (partly) dropped, for OnDrop.
func storedDetail(r DropReason, ev *Event) string {
	switch r {
	case ReasonExtraKeys:
		for i, keys := range ev.ExtraKeys {
			if _, ok := blockIdentity(keys, i == 0 && !ev.HasParent, ev.LoRAName, ev.LoRAID); !ok {
				return "extra keys with no request-side counterpart: " + keys.String()
			}
		}
		return "a block below one with unmapped extra keys"
	case ReasonNoTokens:
		return "BlockStored without token_ids: the router cannot hash its blocks"
	case ReasonSlidingWindow:
		return "blocks of a sliding-window KV cache group are not prefix-reusable"
	case ReasonHolderFull:
		return "one chain reached the pod's bound (events.max_blocks_per_pod engine blocks, or its bound of indexed blocks): nothing older is left to evict"
	}
	return r.String()
}
