package snapshot

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/index"
)

// The tests' engines use 16-token blocks under a router at 32 tokens, so a
// forest node carries pending tokens half of the time.
const (
	engineBS = 16
	routerBS = 32
	testCell = "cell-a"
)

func testIdentity(t testing.TB) Identity {
	fp, err := Fingerprint(routerBS)
	if err != nil {
		t.Fatal(err)
	}
	return Identity{CellID: testCell, Model: "m", BlockSize: routerBS, HashFingerprint: fp}
}

// cellState is an index and an applier, as celld builds them.
type cellState struct {
	ix *index.Index
	a  *events.Applier
	l  *index.Learner
}

func newCellState(t testing.TB) *cellState {
	t.Helper()
	return newCellStateIn(t, index.LayoutBlock)
}

// newCellStateIn is newCellState with an index of the given layout.
func newCellStateIn(t testing.TB, layout index.Layout) *cellState {
	t.Helper()
	cfg := index.DefaultConfig()
	cfg.Layout = layout
	ix, err := index.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ix.Close)
	l, err := index.NewLearner(ix, index.DefaultLearnConfig())
	if err != nil {
		t.Fatal(err)
	}
	ec := events.DefaultConfig()
	ec.BlockSize = routerBS
	ec.DefaultModel = "m"
	reg, err := events.NewRegistry(ec, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	a, err := events.NewApplier(ec, ix, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &cellState{ix: ix, a: a, l: l}
}

// workload generates engine batches for a few pods: chains stored on the
// GPU, some blocks copied to the CPU, removals from the middle of chains
// and the occasional clear.
type workload struct {
	rng  *rand.Rand
	next uint64
	pods []*podGen
}

type podGen struct {
	id     string
	rank   int
	seq    uint64
	blocks []uint64 // engine hashes stored (some may be gone)
}

func newWorkload(seed uint64, pods int) *workload {
	w := &workload{rng: rand.New(rand.NewPCG(seed, seed^0x9e37)), next: 1}
	for i := 0; i < pods; i++ {
		rank := -1
		if i == pods-1 {
			rank = 1 // one data-parallel rank among them
		}
		w.pods = append(w.pods, &podGen{id: fmt.Sprintf("pod-%d", i), rank: rank})
	}
	return w
}

func (w *workload) tokens(n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(w.rng.IntN(50000))
	}
	return out
}

// batch returns the next batch of a random pod.
func (w *workload) batch() *events.Batch {
	p := w.pods[w.rng.IntN(len(w.pods))]
	b := &events.Batch{Pod: p.id, DPRank: p.rank, Seq: p.seq}
	p.seq++
	for k := 1 + w.rng.IntN(3); k > 0; k-- {
		b.Events = append(b.Events, w.event(p))
	}
	return b
}

func (w *workload) event(p *podGen) events.Event {
	r := w.rng.IntN(100)
	switch {
	case r < 8 && len(p.blocks) > 0:
		h := p.blocks[w.rng.IntN(len(p.blocks))]
		return events.Event{Kind: events.KindBlockRemoved, BlockHashes: []uint64{h}}
	case r < 16 && len(p.blocks) > 0:
		h := p.blocks[w.rng.IntN(len(p.blocks))]
		return events.Event{Kind: events.KindBlockRemoved, BlockHashes: []uint64{h}, Medium: "CPU"}
	case r < 17:
		p.blocks = p.blocks[:0]
		return events.Event{Kind: events.KindAllBlocksCleared}
	}
	n := 1 + w.rng.IntN(5)
	deep := r < 24 // a long run continuing the newest block: chains past a page
	if deep {
		n = 20 + w.rng.IntN(30)
	}
	ev := events.Event{Kind: events.KindBlockStored, BlockSize: engineBS, TokenIDs: w.tokens(n * engineBS)}
	if r >= 24 && r < 30 {
		ev.Medium = "CPU"
	}
	switch {
	case deep && len(p.blocks) > 0:
		ev.ParentHash, ev.HasParent = p.blocks[len(p.blocks)-1], true
	case len(p.blocks) > 0 && w.rng.IntN(3) > 0:
		ev.ParentHash, ev.HasParent = p.blocks[w.rng.IntN(len(p.blocks))], true
	}
	for i := 0; i < n; i++ {
		ev.BlockHashes = append(ev.BlockHashes, w.next)
		p.blocks = append(p.blocks, w.next)
		w.next++
	}
	return ev
}

// feed applies n batches of w to every state given, and returns the
// batches.
func feed(t testing.TB, w *workload, n int, states ...*cellState) []*events.Batch {
	t.Helper()
	var out []*events.Batch
	for i := 0; i < n; i++ {
		b := w.batch()
		out = append(out, b)
		for _, s := range states {
			if err := s.a.ApplyBatch(context.Background(), b); err != nil && !errors.Is(err, events.ErrDuplicate) {
				t.Fatalf("batch %d of %s: %v", b.Seq, b.Holder(), err)
			}
		}
	}
	return out
}

// contents is an index's exact state by pod id: block -> pod -> tiers.
func contents(t testing.TB, ix *index.Index) map[index.BlockHash]map[string]index.TierSet {
	t.Helper()
	ids := map[index.Slot]string{}
	for _, p := range ix.LivePods() {
		ids[p.Slot] = p.ID
	}
	out := map[index.BlockHash]map[string]index.TierSet{}
	err := ix.Export(func(bs []index.ExportedBlock) error {
		for _, b := range bs {
			m := map[string]index.TierSet{}
			for _, h := range b.Holders {
				m[ids[h.Slot]] = h.Tiers
			}
			out[b.Hash] = m
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// dumpByID is Index.Dump with slots named by pod id: every holder bit,
// learned ones included.
func dumpByID(ix *index.Index) map[index.BlockHash][]string {
	ids := map[index.Slot]string{}
	for _, p := range ix.LivePods() {
		ids[p.Slot] = p.ID
	}
	out := map[index.BlockHash][]string{}
	for _, e := range ix.Dump() {
		var hs []string
		e.Holders.And(ix.Alive()).ForEach(func(s index.Slot) { hs = append(hs, ids[s]) })
		if len(hs) > 0 {
			out[e.Hash] = hs
		}
	}
	return out
}
