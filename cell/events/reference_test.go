package events

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/cell/index"
)

// This file checks the Applier against a naive reference model: per holder,
// a plain map of engine blocks (each with its own tokens), removals that
// delete descendants by rescanning the map, and router hashes recomputed
// from each block's whole token prefix.

// refNode is an engine block in the reference model.
type refNode struct {
	parent    uint64
	hasParent bool
	toks      []uint32
	tiers     uint8
	skip      bool
	model     string
	lora      string
	salt      string
}

// refHolder is one holder in the reference model.
type refHolder struct {
	nodes    map[uint64]*refNode
	group    int
	hasGroup bool
	last     uint64
	started  bool
}

// refModel is the reference: holder id to refHolder.
type refModel struct {
	defaultModel string
	rbs          int
	maxPer       int
	holders      map[string]*refHolder
	// places records where routerSet saw each router block in its chain
	// (index.Op Pos and Page), for the paged layout's Dump.
	places map[index.BlockHash]index.Op
}

func newRefModel(rbs, maxPer int) *refModel {
	return &refModel{rbs: rbs, maxPer: maxPer, holders: map[string]*refHolder{}}
}

// apply feeds one batch to the reference, mirroring the Applier's rules.
func (m *refModel) apply(b *Batch) {
	if validateBatch(b) != nil && b.Pod == "" {
		return
	}
	h := m.holders[b.Holder()]
	if h == nil {
		h = &refHolder{nodes: map[uint64]*refNode{}}
		m.holders[b.Holder()] = h
	}
	switch {
	case !h.started:
		h.started = true
	case b.Seq == 0 && h.last > 0:
		h.nodes, h.hasGroup = map[uint64]*refNode{}, false
	case b.Seq == h.last+1:
	default:
		return // duplicate or gap
	}
	h.last = b.Seq
	if validateBatch(b) != nil {
		return
	}
	for i := range b.Events {
		ev := &b.Events[i]
		switch ev.Kind {
		case KindAllBlocksCleared:
			h.nodes, h.hasGroup = map[uint64]*refNode{}, false
		case KindBlockStored:
			m.store(h, b, ev)
		case KindBlockRemoved:
			if h.hasGroup && ev.GroupIdx != h.group {
				continue
			}
			for _, eh := range ev.BlockHashes {
				n := h.nodes[eh]
				if n == nil {
					continue
				}
				n.tiers &^= 1 << tierOf(ev.Medium)
				if n.tiers == 0 {
					m.deleteSubtree(h, eh)
				}
			}
		}
	}
}

func (m *refModel) store(h *refHolder, b *Batch, ev *Event) {
	if ev.SlidingWindow > 0 {
		return
	}
	if !h.hasGroup {
		h.group, h.hasGroup = ev.GroupIdx, true
	} else if ev.GroupIdx != h.group {
		return
	}
	// Reference rule for extra keys: drop the adapter's key if it leads;
	// what is left must be nothing, or one string on a chain's first block
	// (the salt).
	mapped := func(i int, first bool) (string, bool) {
		if i >= len(ev.ExtraKeys) {
			return "", true
		}
		k := ev.ExtraKeys[i]
		if len(k) > 0 && ((k[0].Kind == KeyString && ev.LoRAName != "" && k[0].Text == ev.LoRAName) ||
			(k[0].Kind == KeyInt && ev.LoRAID > 0 && k[0].Int == ev.LoRAID)) {
			k = k[1:]
		}
		switch {
		case len(k) == 0:
			return "", true
		case first && len(k) == 1 && k[0].Kind == KeyString:
			return k[0].Text, true
		}
		return "", false
	}
	skip, salt := false, ""
	parent, hasParent := uint64(0), false
	if ev.HasParent && ev.ParentHash != 0 {
		p := h.nodes[ev.ParentHash]
		if p == nil {
			return
		}
		parent, hasParent, skip = ev.ParentHash, true, p.skip
	} else {
		var ok bool
		salt, ok = mapped(0, true)
		skip = !ok
	}
	model := b.Model
	if model == "" {
		model = m.defaultModel
	}
	for i, eh := range ev.BlockHashes {
		if hasParent {
			if _, ok := mapped(i, false); !ok {
				skip = true
			}
		}
		if n := h.nodes[eh]; n != nil {
			n.tiers |= 1 << tierOf(ev.Medium)
			parent, hasParent, skip = eh, true, n.skip
			continue
		}
		if len(h.nodes) >= m.maxPer {
			return
		}
		n := &refNode{parent: parent, hasParent: hasParent, tiers: 1 << tierOf(ev.Medium), skip: skip,
			model: model, lora: ev.LoRAName, salt: salt}
		if len(ev.TokenIDs) == 0 {
			n.skip = true // no tokens: nothing to hash
		} else {
			n.toks = slices.Clone(ev.TokenIDs[i*ev.BlockSize : (i+1)*ev.BlockSize])
		}
		h.nodes[eh] = n
		parent, hasParent = eh, true
	}
}

// deleteSubtree deletes eh and, by rescanning, every node whose parent is gone.
func (m *refModel) deleteSubtree(h *refHolder, eh uint64) {
	delete(h.nodes, eh)
	for changed := true; changed; {
		changed = false
		for k, n := range h.nodes {
			if n.hasParent && h.nodes[n.parent] == nil {
				delete(h.nodes, k)
				changed = true
			}
		}
	}
}

// routerSet returns the router hashes holder h should hold.
func (m *refModel) routerSet(h *refHolder) map[index.BlockHash]bool {
	hasher := blockhash.Hasher{BlockSize: m.rbs}
	out := map[index.BlockHash]bool{}
	for _, n := range h.nodes {
		if n.skip {
			continue
		}
		var path []*refNode
		for p := n; ; p = h.nodes[p.parent] {
			path = append(path, p)
			if !p.hasParent {
				break
			}
		}
		root := path[len(path)-1]
		var prefix []uint32
		for i := len(path) - 1; i >= 0; i-- {
			prefix = append(prefix, path[i].toks...)
		}
		chain := hasher.Chain(blockhash.Seed(blockhash.Identity(root.model, root.lora, root.salt)), prefix, nil)
		start := len(prefix) - len(n.toks)
		for j, rh := range chain {
			if end := (j + 1) * m.rbs; end > start && end <= len(prefix) {
				out[rh] = true
				if m.places != nil {
					var op index.Op
					op.SetPlace(chain, j)
					m.places[rh] = op
				}
			}
		}
	}
	return out
}

// expected returns the index the reference predicts: router hash to holders.
func (m *refModel) expected(t *testing.T, ix *index.Index) map[index.BlockHash]index.HostBitmap {
	t.Helper()
	out := map[index.BlockHash]index.HostBitmap{}
	for id, h := range m.holders {
		set := m.routerSet(h)
		if len(set) == 0 {
			continue
		}
		slot, ok := ix.SlotOf(id)
		if !ok {
			t.Fatalf("holder %s has %d expected blocks but no slot", id, len(set))
		}
		for rh := range set {
			out[rh] = out[rh].Set(slot)
		}
	}
	return out
}

// dumpMap returns the index's content as a map.
func dumpMap(ix *index.Index) map[index.BlockHash]index.HostBitmap {
	out := map[index.BlockHash]index.HostBitmap{}
	for _, e := range ix.Dump() {
		out[e.Hash] = e.Holders
	}
	return out
}

// compareIndex fails t when the index differs from want.
func compareIndex(t *testing.T, ix *index.Index, want map[index.BlockHash]index.HostBitmap, what string) {
	t.Helper()
	got := dumpMap(ix)
	bad := 0
	for h, w := range want {
		if g := got[h]; g != w {
			if bad++; bad <= 5 {
				t.Errorf("%s: block %x: got holders %v, want %v", what, h, g.Slots(nil), w.Slots(nil))
			}
		}
	}
	for h, g := range got {
		if _, ok := want[h]; !ok {
			if bad++; bad <= 5 {
				t.Errorf("%s: block %x: got holders %v, want none", what, h, g.Slots(nil))
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%s: %d blocks differ (got %d blocks, want %d)", what, bad, len(got), len(want))
	}
}

// comparePlaces fails t when a block of the paged index ix is not at the
// place the reference saw it.
func comparePlaces(t *testing.T, ix *index.Index, want map[index.BlockHash]index.Op, what string) {
	t.Helper()
	for _, e := range ix.Dump() {
		w, ok := want[e.Hash]
		if !ok {
			continue // compareIndex reports it
		}
		if e.Pos != w.Pos || e.Page != w.Page {
			t.Fatalf("%s: block %x at %d in page %x, want %d in %x", what, e.Hash, e.Pos, e.Page, w.Pos, w.Page)
		}
	}
}

func newTestIndex(t testing.TB) *index.Index {
	return newTestIndexLayout(t, index.LayoutBlock)
}

func newTestIndexLayout(t testing.TB, layout index.Layout) *index.Index {
	t.Helper()
	cfg := index.DefaultConfig()
	cfg.Layout = layout
	ix, err := index.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ix.Close)
	return ix
}

func newTestApplier(t testing.TB, ix IndexWriter, routerBS int) *Applier {
	t.Helper()
	cfg := DefaultConfig()
	cfg.BlockSize = routerBS
	a, err := NewApplier(cfg, ix, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// applyLog applies every batch and checks every error is a known drop.
func applyLog(t *testing.T, a *Applier, log []*Batch) {
	t.Helper()
	for i, b := range log {
		if err := a.ApplyBatch(context.Background(), b); err != nil {
			if _, ok := ReasonOf(err); !ok {
				t.Fatalf("batch %d: unexpected error %v", i, err)
			}
		}
	}
}

func TestApplierMatchesReference(t *testing.T) {
	sizes := []struct{ engine, router int }{{16, 16}, {16, 64}, {64, 16}, {16, 24}, {4, 4}}
	for _, sz := range sizes {
		for seed := uint64(1); seed <= 4; seed++ {
			// The paged layout needs every op placed in its chain: odd
			// seeds check the applier's places against the reference's.
			layout := index.LayoutBlock
			if seed%2 == 1 {
				layout = index.LayoutPaged
			}
			t.Run(fmt.Sprintf("engine%d_router%d_seed%d_%s", sz.engine, sz.router, seed, layout), func(t *testing.T) {
				log := randomLog(seed, sz.engine, 300)
				ix := newTestIndexLayout(t, layout)
				a := newTestApplier(t, ix, sz.router)
				ref := newRefModel(sz.router, DefaultConfig().MaxBlocksPerPod)
				for i, b := range log {
					err := a.ApplyBatch(context.Background(), b)
					if _, ok := ReasonOf(err); err != nil && !ok {
						t.Fatalf("batch %d: unexpected error %v", i, err)
					}
					ref.apply(b)
					if i%50 == 0 || i == len(log)-1 {
						ref.places = map[index.BlockHash]index.Op{}
						compareIndex(t, ix, ref.expected(t, ix), fmt.Sprintf("after batch %d", i))
						if layout == index.LayoutPaged {
							comparePlaces(t, ix, ref.places, fmt.Sprintf("after batch %d", i))
						}
					}
				}
				for id, h := range ref.holders {
					if got, want := a.TrackedBlocks(id), len(h.nodes); got != want {
						t.Errorf("holder %s: got %d tracked blocks, want %d", id, got, want)
					}
				}
				c := a.Counters()
				if c.Batches.Load() == 0 || c.BlocksStored.Load() == 0 || c.BlocksRemoved.Load() == 0 {
					t.Errorf("got batches %d stored %d removed %d, want all > 0", c.Batches.Load(), c.BlocksStored.Load(), c.BlocksRemoved.Load())
				}
				if c.BatchesDropped[ReasonDuplicate].Load() == 0 || c.Gaps.Load() == 0 || c.EventsDropped[ReasonUnknownParent].Load() == 0 {
					t.Errorf("got duplicates %d gaps %d unknown parents %d, want all > 0 (the stream should exercise them)",
						c.BatchesDropped[ReasonDuplicate].Load(), c.Gaps.Load(), c.EventsDropped[ReasonUnknownParent].Load())
				}
			})
		}
	}
}

func TestApplierIdempotent(t *testing.T) {
	for _, sz := range []struct{ engine, router int }{{16, 16}, {16, 64}, {64, 16}} {
		t.Run(fmt.Sprintf("engine%d_router%d", sz.engine, sz.router), func(t *testing.T) {
			log := randomLog(99, sz.engine, 200)

			once := newTestIndex(t)
			applyLog(t, newTestApplier(t, once, sz.router), log)

			// Every batch delivered twice in a row: the second is a duplicate.
			twice := newTestIndex(t)
			var doubled []*Batch
			for _, b := range log {
				doubled = append(doubled, b, b)
			}
			applyLog(t, newTestApplier(t, twice, sz.router), doubled)
			compareIndex(t, twice, dumpMap(once), "each batch delivered twice")

			// Every event repeated inside its batch: each event is idempotent.
			evTwice := newTestIndex(t)
			var repeated []*Batch
			for _, b := range log {
				c := *b
				c.Events = nil
				for _, ev := range b.Events {
					c.Events = append(c.Events, ev, ev)
				}
				repeated = append(repeated, &c)
			}
			applyLog(t, newTestApplier(t, evTwice, sz.router), repeated)
			compareIndex(t, evTwice, dumpMap(once), "each event repeated")
			if len(dumpMap(once)) == 0 {
				t.Fatal("got an empty index, want blocks (the log should store some)")
			}
		})
	}
}

func TestApplierNeverHalfApplied(t *testing.T) {
	ix := newTestIndex(t)
	a := newTestApplier(t, ix, 16)
	e := newEngineSim(rand.New(rand.NewPCG(5, 5)), "pod-a", -1, "m", 16)
	good := &Batch{Pod: "pod-a", DPRank: -1, Seq: 0, Events: []Event{storeEv(e, 0, 3)}}
	if err := a.ApplyBatch(context.Background(), good); err != nil {
		t.Fatal(err)
	}
	before := dumpMap(ix)
	tracked := a.TrackedBlocks("pod-a")

	bads := map[string]Event{
		"tokens short":   {Kind: KindBlockStored, BlockHashes: []uint64{9}, BlockSize: 16, TokenIDs: make([]uint32, 15)},
		"zero hash":      {Kind: KindBlockStored, BlockHashes: []uint64{0}, BlockSize: 1, TokenIDs: []uint32{1}},
		"no hashes":      {Kind: KindBlockStored, BlockSize: 16},
		"block size 0":   {Kind: KindBlockStored, BlockHashes: []uint64{9}},
		"unknown kind":   {Kind: 77},
		"negative group": {Kind: KindBlockRemoved, BlockHashes: []uint64{1}, GroupIdx: -1},
	}
	seq := uint64(1)
	for name, bad := range bads {
		t.Run(name, func(t *testing.T) {
			b := &Batch{Pod: "pod-a", DPRank: -1, Seq: seq, Events: []Event{
				storeEv(e, 0, 2),
				{Kind: KindBlockRemoved, BlockHashes: good.Events[0].BlockHashes[:1]},
				{Kind: KindAllBlocksCleared},
				bad,
			}}
			seq++
			err := a.ApplyBatch(context.Background(), b)
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("got error %v, want ErrInvalid", err)
			}
			compareIndex(t, ix, before, "after an invalid batch")
			if got := a.TrackedBlocks("pod-a"); got != tracked {
				t.Errorf("got %d tracked blocks, want %d", got, tracked)
			}
		})
	}
}

// storeEv returns a BlockStored of n new blocks of engine e from the root;
// variant picks different tokens.
func storeEv(e *engineSim, variant, n int) Event {
	ev := Event{Kind: KindBlockStored, BlockSize: e.bs}
	var prefix []uint32
	for i := 0; i < n; i++ {
		c := e.chunks[(variant+i)%len(e.chunks)]
		prefix = append(prefix, c...)
		ev.TokenIDs = append(ev.TokenIDs, c...)
		ev.BlockHashes = append(ev.BlockHashes, engineHash("", prefix))
	}
	return ev
}

// TestApplierPlacesPagedOps stores a long chain in several BlockStored
// events (each continuing the last through its parent, with engine blocks
// that do and do not line up with the router's) into a paged index, and
// checks that every router block sits at its chain position in its page,
// that Match finds the whole chain, and that removing the engine blocks
// empties the index.
func TestApplierPlacesPagedOps(t *testing.T) {
	for _, sz := range []struct{ engine, router int }{{16, 16}, {16, 24}, {32, 16}} {
		t.Run(fmt.Sprintf("engine%d_router%d", sz.engine, sz.router), func(t *testing.T) {
			ix := newTestIndexLayout(t, index.LayoutPaged)
			a := newTestApplier(t, ix, sz.router)
			const blocks = 3*index.PageSize + 7 // engine blocks
			toks := make([]uint32, blocks*sz.engine)
			for i := range toks {
				toks[i] = uint32(i*7 + 3)
			}
			var evs []Event
			for from := 0; from < blocks; {
				to := min(blocks, from+13+from%5)
				ev := Event{Kind: KindBlockStored, BlockSize: sz.engine, TokenIDs: toks[from*sz.engine : to*sz.engine]}
				for b := from; b < to; b++ {
					ev.BlockHashes = append(ev.BlockHashes, uint64(1000+b))
				}
				if from > 0 {
					ev.ParentHash, ev.HasParent = uint64(1000+from-1), true
				}
				evs = append(evs, ev)
				from = to
			}
			batch := Batch{Pod: "pod-a", Model: "m", DPRank: -1, Seq: 1, Events: evs}
			if err := a.ApplyBatch(context.Background(), &batch); err != nil {
				t.Fatal(err)
			}
			hasher := blockhash.Hasher{BlockSize: sz.router}
			chain := hasher.Chain(blockhash.Seed(blockhash.Identity("m", "", "")), toks, nil)
			dump := ix.Dump()
			if len(dump) != len(chain) {
				t.Fatalf("index holds %d blocks, want the chain's %d", len(dump), len(chain))
			}
			want := map[index.BlockHash]index.Op{}
			for j := range chain {
				var op index.Op
				op.SetPlace(chain, j)
				want[chain[j]] = op
			}
			comparePlaces(t, ix, want, "after the stores")
			var r index.MatchResult
			ix.Match(chain, &r)
			if _, d, ok := r.Best(); !ok || d != len(chain) {
				t.Fatalf("Match: best depth %d (ok %v), want %d", d, ok, len(chain))
			}
			rm := Event{Kind: KindBlockRemoved}
			for b := blocks - 1; b >= blocks/2; b-- {
				rm.BlockHashes = append(rm.BlockHashes, uint64(1000+b))
			}
			rm2 := Event{Kind: KindBlockRemoved, BlockHashes: []uint64{1000}} // the rest with the root
			if err := a.ApplyBatch(context.Background(), &Batch{Pod: "pod-a", Model: "m", DPRank: -1, Seq: 2, Events: []Event{rm, rm2}}); err != nil {
				t.Fatal(err)
			}
			if got := ix.Dump(); len(got) != 0 {
				t.Fatalf("index holds %d blocks after the removals, want none (removals not placed?)", len(got))
			}
		})
	}
}
