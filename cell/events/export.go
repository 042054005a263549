package events

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/cellrouter/cellrouter/cell/index"
)

// This file is the Applier's persistence API (package snapshot writes it
// to disk): what it knows per holder beyond the index, which is the last
// applied sequence number and the engine-to-router hash map (the forest of
// engine blocks, chains.go). With it a restarted cell resumes each holder
// after the saved number instead of from scratch.

// HolderState is the exported state of one holder.
type HolderState struct {
	// ID is the holder id (pod, or pod#rank) and Pod its pod.
	ID, Pod string
	// LastSeq is the last applied sequence number, valid when HasSeq.
	LastSeq uint64
	HasSeq  bool
	// Group is the KV cache group the holder indexes, valid when HasGroup.
	Group    int
	HasGroup bool
	// Blocks is the engine block forest, every parent before its children.
	Blocks []BlockState
}

// BlockState is one engine block of a holder's forest.
type BlockState struct {
	// Hash is the engine's hash; Parent the index in HolderState.Blocks of
	// its parent, -1 for a first block.
	Hash   uint64
	Parent int32
	// Tiers is the set of index tiers (bit 1<<Tier) the engine keeps it on.
	Tiers uint8
	// Skip marks a block tracked but not indexed.
	Skip bool
	// Router are the router hashes the block completed; Last is the router
	// chain's last hash up to it and Pending the tokens after Last.
	Router  []index.BlockHash
	Last    index.BlockHash
	Pending []uint32
}

// ExportHolders returns the state of every live holder, sorted by id (see
// EachHolder).
func (a *Applier) ExportHolders() []HolderState {
	var out []HolderState
	_ = a.EachHolder(func(st *HolderState) error {
		out = append(out, *st)
		return nil
	})
	return out
}

// EachHolder calls fn with the state of every live holder, in id order, one
// at a time: each holder is copied under its own lock, so its sequence
// number and forest agree, and fn runs without it, so a slow fn holds up
// no batch and only one holder's copy is alive at a time. fn owns st. It
// stops at fn's first error and returns it. Export the holders before the
// index (index.Index.Export): the index then holds at least what each saved
// number says, and replaying from the next number, which rewrites the
// same (idempotent) ops, converges.
func (a *Applier) EachHolder(fn func(st *HolderState) error) error {
	hs := a.holderList()
	sort.Slice(hs, func(i, j int) bool { return hs[i].id < hs[j].id })
	for _, h := range hs {
		h.mu.Lock()
		if h.dead {
			h.mu.Unlock()
			continue
		}
		st := h.export()
		h.mu.Unlock()
		if err := fn(&st); err != nil {
			return err
		}
	}
	return nil
}

// export copies h; the caller holds h.mu.
func (h *holder) export() HolderState {
	st := HolderState{ID: h.id, Pod: h.pod, Group: h.group, HasGroup: h.hasGroup}
	st.LastSeq, st.HasSeq = h.seq.Last()
	c := &h.chains
	st.Blocks = make([]BlockState, 0, c.len())
	// Walk the forest from its roots so that parents come first.
	type item struct{ node, parent int32 }
	var stack []item
	for _, i := range c.byHash {
		if c.nodes[i].parent == none {
			stack = append(stack, item{i, -1})
		}
	}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n := &c.nodes[it.node]
		b := BlockState{Hash: n.hash, Parent: it.parent, Tiers: n.tiers, Skip: n.skip, Last: n.last,
			Pending: slices.Clone(n.pending)}
		for j := int32(0); j < n.nRouter; j++ {
			b.Router = append(b.Router, n.routerHash(j))
		}
		st.Blocks = append(st.Blocks, b)
		me := int32(len(st.Blocks) - 1)
		for ch := n.child; ch != none; ch = c.nodes[ch].next {
			stack = append(stack, item{ch, me})
		}
	}
	return st
}

// ErrRestore is wrapped by RestoreHolders' errors.
var ErrRestore = errors.New("events: restore")

// RestoreHolders gives the Applier the saved holders. Call it on a fresh
// Applier (it may be called several times with distinct holders), after
// the index was restored (each holder's id is registered there: its slot is
// looked up by id) and before any batch. The holders keep the slices of
// states. Nothing changes when it fails. A
// restored holder resumes after LastSeq: see Resume. reg, when the Applier
// has one, learns each pod as seen at now, so a pod that never comes back
// dies after Config.DeadAfter like any silent pod.
func (a *Applier) RestoreHolders(states []HolderState, now time.Time) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	built := make(map[string]*holder, len(states))
	for i := range states {
		st := &states[i]
		if st.ID == "" || st.Pod == "" {
			return fmt.Errorf("%w: holder %d has no id or pod", ErrRestore, i)
		}
		if _, dup := built[st.ID]; dup || a.holders[st.ID] != nil {
			return fmt.Errorf("%w: holder %q twice", ErrRestore, st.ID)
		}
		slot, err := a.ix.Register(st.ID)
		if err != nil {
			return fmt.Errorf("%w: holder %q: %v", ErrRestore, st.ID, err)
		}
		h := &holder{id: st.ID, pod: st.Pod, slot: slot, group: st.Group, hasGroup: st.HasGroup, bound: a.boundOf(st.Pod)}
		if st.HasSeq {
			h.seq = SeqTracker{last: st.LastSeq, started: true}
			h.resume = true
		}
		if err := h.restoreChains(st.Blocks); err != nil {
			return fmt.Errorf("%w: holder %q: %v", ErrRestore, st.ID, err)
		}
		built[st.ID] = h
	}
	for id, h := range built {
		a.holders[id] = h
		if a.reg != nil {
			last, _ := h.seq.Last()
			a.reg.restore(h.pod, h.id, h.slot, last, now)
		}
	}
	return nil
}

// restoreChains rebuilds h's forest from blocks, parents first. The nodes
// keep the blocks' Router and Pending slices.
func (h *holder) restoreChains(blocks []BlockState) error {
	c := &h.chains
	c.nodes = make([]chainNode, 0, len(blocks))
	c.byHash = make(map[uint64]int32, len(blocks))
	ids := make([]int32, len(blocks))
	for i := range blocks {
		b := &blocks[i]
		parent := none
		if b.Parent >= 0 {
			if int(b.Parent) >= i {
				return fmt.Errorf("block %d names parent %d, not before it", i, b.Parent)
			}
			parent = ids[b.Parent]
		}
		if _, dup := c.lookup(b.Hash); dup {
			return fmt.Errorf("engine block %#x twice", b.Hash)
		}
		if b.Tiers == 0 {
			return fmt.Errorf("engine block %#x on no tier", b.Hash)
		}
		n := c.add(b.Hash, parent)
		node := c.node(n)
		node.tiers, node.skip, node.last = b.Tiers, b.Skip, b.Last
		if len(b.Pending) > 0 {
			node.pending = b.Pending
		}
		if k := len(b.Router); k > 0 {
			node.nRouter = int32(k)
			node.router0 = b.Router[0]
			if k > 1 {
				node.routerRest = b.Router[1:]
			}
			if !b.Skip {
				c.indexed += k
			}
		}
		ids[i] = n
	}
	return nil
}

// Resume reports, once, where a holder restored by RestoreHolders resumes:
// the last sequence number it applied before the snapshot. A transport
// that can replay (zmqsub) asks it at a holder's first contact and fetches
// from the next number instead of from 0; later calls, and calls for
// holders that were not restored, return false. rank -1 names the pod's
// holder without a rank.
func (a *Applier) Resume(pod string, rank int) (last uint64, ok bool) {
	a.mu.RLock()
	h := a.holders[holderID(a.podOf(pod), rank)]
	a.mu.RUnlock()
	if h == nil {
		return 0, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.resume || h.dead {
		return 0, false
	}
	h.resume = false
	return h.seq.Last()
}

// restore records a holder restored from a snapshot as heard from at now.
func (r *Registry) restore(pod, holder string, slot index.Slot, seq uint64, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.entry(pod, now)
	e.info.LastEvent = maxTime(e.info.LastEvent, now)
	if e.info.State == StateUnknown || e.info.State == StateDead {
		e.since = now
	}
	e.holders[holder] = &HolderInfo{ID: holder, Slot: slot, LastSeq: seq}
	e.info.State = r.stateOf(e)
}
