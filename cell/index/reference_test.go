package index

import (
	"math/rand/v2"
	"sort"
	"testing"
)

// refIndex is the naive reference model: a map from hash to the set of
// pods holding it, and a linear walk of the chain per pod.
type refIndex struct {
	holders map[BlockHash]map[Slot]bool
	alive   map[Slot]bool
}

func newRef() *refIndex {
	return &refIndex{holders: map[BlockHash]map[Slot]bool{}, alive: map[Slot]bool{}}
}

func (r *refIndex) store(s Slot, h BlockHash) {
	if !r.alive[s] {
		return
	}
	if r.holders[h] == nil {
		r.holders[h] = map[Slot]bool{}
	}
	r.holders[h][s] = true
}

func (r *refIndex) remove(s Slot, h BlockHash) {
	if !r.alive[s] {
		return
	}
	delete(r.holders[h], s)
	if len(r.holders[h]) == 0 {
		delete(r.holders, h)
	}
}

func (r *refIndex) drop(s Slot) {
	for h, set := range r.holders {
		delete(set, s)
		if len(set) == 0 {
			delete(r.holders, h)
		}
	}
}

func (r *refIndex) depth(s Slot, chain []BlockHash) int {
	if !r.alive[s] {
		return 0
	}
	for i, h := range chain {
		if !r.holders[h][s] {
			return i
		}
	}
	return len(chain)
}

func (r *refIndex) dump() []DumpEntry {
	var out []DumpEntry
	for h, set := range r.holders {
		var b HostBitmap
		for s := range set {
			b = b.Set(s)
		}
		out = append(out, DumpEntry{Hash: h, Holders: b})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Hash < out[j].Hash })
	return out
}

// tree is a random prefix tree of block hashes: the chains requests share.
type tree struct {
	parent   []int // -1 for roots
	hash     []BlockHash
	children [][]int
}

func newTree(rng *rand.Rand, nodes int) *tree { return newTreeShape(rng, nodes, false) }

// newTreeShape returns a random prefix tree; a deep one mostly extends the
// last node, so that its chains run over several pages of the paged layout
// and branch inside pages.
func newTreeShape(rng *rand.Rand, nodes int, deep bool) *tree {
	t := &tree{}
	for i := 0; i < nodes; i++ {
		p := -1
		switch {
		case i == 0:
		case deep && rng.IntN(16) != 0:
			p = i - 1
		case deep || rng.IntN(8) != 0:
			p = rng.IntN(i)
		}
		t.parent = append(t.parent, p)
		t.hash = append(t.hash, BlockHash(rng.Uint64()|1))
		t.children = append(t.children, nil)
		if p >= 0 {
			t.children[p] = append(t.children[p], i)
		}
	}
	return t
}

// path returns the chain from the root down to node n.
func (t *tree) path(n int) []BlockHash {
	var rev []BlockHash
	for ; n >= 0; n = t.parent[n] {
		rev = append(rev, t.hash[n])
	}
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	return rev
}

// placeOps returns ops of kind for slot s on the GPU tier, one per node
// given, each with its place in its chain (Op.Pos, Op.Page).
func (t *tree) placeOps(kind OpKind, s Slot, nodes []int) []Op {
	ops := make([]Op, 0, len(nodes))
	for _, n := range nodes {
		p := t.path(n)
		op := Op{Kind: kind, Slot: s, Tier: TierGPU, Hash: t.hash[n]}
		op.SetPlace(p, len(p)-1)
		ops = append(ops, op)
	}
	return ops
}

// chainOps returns ops of kind for blocks [from, to) of chain, placed.
func chainOps(kind OpKind, s Slot, chain []BlockHash, from, to int) []Op {
	ops := make([]Op, 0, to-from)
	for i := from; i < to; i++ {
		op := Op{Kind: kind, Slot: s, Tier: TierGPU, Hash: chain[i]}
		op.SetPlace(chain, i)
		ops = append(ops, op)
	}
	return ops
}

// testLayouts are the layouts every reference-model test runs against.
var testLayouts = []Layout{LayoutBlock, LayoutPaged}

// subtree returns node n and all its descendants.
func (t *tree) subtree(n int) []int {
	out := []int{n}
	for i := 0; i < len(out); i++ {
		out = append(out, t.children[out[i]]...)
	}
	return out
}

func newTestIndex(t testing.TB, cfg Config) *Index {
	t.Helper()
	ix, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(ix.Close)
	return ix
}

func checkMatch(t *testing.T, ix *Index, ref *refIndex, chain []BlockHash, r *MatchResult, step int) {
	t.Helper()
	ix.Match(chain, r)
	bestDepth := 0
	for s := 0; s < MaxPods; s++ {
		want := ref.depth(Slot(s), chain)
		if got := r.Depth(Slot(s)); got != want {
			t.Fatalf("step %d: pod %d: Depth = %d, want %d (chain len %d)", step, s, got, want, len(chain))
		}
		bestDepth = max(bestDepth, want)
	}
	_, d, ok := r.Best()
	if ok != (bestDepth > 0) || d != bestDepth {
		t.Fatalf("step %d: Best depth = %d,%v, want %d", step, d, ok, bestDepth)
	}
}

// TestMatchesReferenceModel applies random interleavings of store, remove,
// clear, kill, register and query to the index and to the reference model
// and compares every answer and, at the end, the whole content.
func TestMatchesReferenceModel(t *testing.T) {
	for _, lay := range testLayouts {
		for _, deep := range []bool{false, true} {
			name := string(lay) + "/shallow"
			if deep {
				name = string(lay) + "/deep"
			}
			t.Run(name, func(t *testing.T) { testMatchesReference(t, lay, deep) })
		}
	}
}

// checkHeld compares the index's per-pod held counts with the reference's
// sets of held nodes: a live pod holds as many blocks as its set has, every
// other slot none.
func checkHeld(t *testing.T, ix *Index, held map[Slot]map[int]bool, seed uint64, step int) {
	t.Helper()
	for s := 0; s < MaxPods; s++ {
		want := 0
		if h, ok := held[Slot(s)]; ok {
			want = len(h)
		}
		if got := ix.Held(Slot(s)); got != want {
			t.Fatalf("seed %d step %d: Held(%d) = %d, want %d", seed, step, s, got, want)
		}
	}
}

func testMatchesReference(t *testing.T, lay Layout, deep bool) {
	deepest := int32(0)
	defer func() {
		if lay == LayoutPaged && deep && !t.Failed() && deepest < 2*PageSize {
			t.Errorf("deepest block held at %d: the test never reaches a third page", deepest)
		}
	}()
	for seed := uint64(1); seed <= 6; seed++ {
		rng := rand.New(rand.NewPCG(seed, 99))
		tr := newTreeShape(rng, 400, deep)
		cfg := DefaultConfig()
		cfg.Layout = lay
		if seed%2 == 0 {
			cfg.ExpectedBlocks = 64 << 10 // pre-sized tables, never shrunk
		}
		ix := newTestIndex(t, cfg)
		ref := newRef()
		held := map[Slot]map[int]bool{} // reference: tree nodes each pod holds
		nextID := 0
		register := func() {
			// A killed pod's slot is free only once its sweep ran, so
			// which slot a new pod gets would depend on the sweeper's
			// timing: wait, keeping every run of a seed the same.
			ix.WaitSweeps()
			s, err := ix.Register("pod-" + itoa(nextID))
			nextID++
			if err != nil {
				return
			}
			ref.alive[s] = true
			held[s] = map[int]bool{}
		}
		for i := 0; i < 40; i++ {
			register()
		}
		var r MatchResult
		live := func() []Slot {
			var out []Slot
			for s := range ref.alive {
				out = append(out, s)
			}
			sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
			return out
		}
		for step := 0; step < 3000; step++ {
			pods := live()
			if len(pods) == 0 {
				register()
				continue
			}
			s := pods[rng.IntN(len(pods))]
			twice := rng.IntN(4) == 0 // idempotency: apply some writes twice
			switch op := rng.IntN(100); {
			case op < 45: // store: extend a held prefix along a random path
				node := rng.IntN(len(tr.hash))
				p := tr.path(node)
				nodes := pathNodes(tr, node)
				k := 0
				for k < len(nodes) && held[s][nodes[k]] {
					k++
				}
				ext := 6
				if deep {
					ext = 2 * PageSize // reach later pages
				}
				end := min(len(p), k+1+rng.IntN(ext))
				from := max(0, k-rng.IntN(3)) // re-store a few held blocks too
				for n := 0; n < 1+b2i(twice); n++ {
					ix.Apply(chainOps(OpStore, s, p, from, end))
				}
				for i := from; i < end; i++ {
					ref.store(s, p[i])
					held[s][nodes[i]] = true
				}
			case op < 65: // remove a held block and the pod's descendants of it
				var hs []int
				for n := range held[s] {
					hs = append(hs, n)
				}
				if len(hs) == 0 {
					continue
				}
				sort.Ints(hs)
				victim := hs[rng.IntN(len(hs))]
				var rm []int
				for _, n := range tr.subtree(victim) {
					if held[s][n] {
						rm = append(rm, n)
						delete(held[s], n)
						ref.remove(s, tr.hash[n])
					}
				}
				rng.Shuffle(len(rm), func(i, j int) { rm[i], rm[j] = rm[j], rm[i] })
				for n := 0; n < 1+b2i(twice); n++ {
					ix.Apply(tr.placeOps(OpRemove, s, rm))
				}
			case op < 68: // clear
				ix.ClearPod(s)
				ref.drop(s)
				held[s] = map[int]bool{}
			case op < 71: // kill, and sometimes wait for the sweep
				ix.Kill(s)
				if twice {
					ix.Kill(s)
				}
				delete(ref.alive, s)
				ref.drop(s)
				delete(held, s)
				if rng.IntN(2) == 0 {
					ix.WaitSweeps()
				}
			case op < 74:
				register()
			default: // query a random path, sometimes with an unknown tail
				node := rng.IntN(len(tr.hash))
				chain := tr.path(node)
				if rng.IntN(3) == 0 {
					chain = append(chain, BlockHash(rng.Uint64()|1))
				}
				checkMatch(t, ix, ref, chain, &r, step)
				checkHeld(t, ix, held, seed, step)
			}
		}
		ix.WaitSweeps()
		checkHeld(t, ix, held, seed, -1)
		got, want := ix.Dump(), ref.dump()
		if len(got) != len(want) {
			t.Fatalf("seed %d: Dump has %d blocks, reference %d", seed, len(got), len(want))
		}
		node := map[BlockHash]int{}
		for n, h := range tr.hash {
			node[h] = n
		}
		maxPos := int32(0)
		for i := range got {
			if got[i].Hash != want[i].Hash || got[i].Holders != want[i].Holders {
				t.Fatalf("seed %d: Dump[%d] = %+v, want %+v", seed, i, got[i], want[i])
			}
			if lay == LayoutPaged {
				place := tr.placeOps(OpStore, 0, []int{node[got[i].Hash]})[0]
				if got[i].Pos != place.Pos || got[i].Page != place.Page {
					t.Fatalf("seed %d: Dump[%d] at %d in page %x, want %d in %x", seed, i, got[i].Pos, got[i].Page, place.Pos, place.Page)
				}
				maxPos = max(maxPos, got[i].Pos)
			}
		}
		if lay == LayoutPaged && deep && maxPos < PageSize {
			t.Fatalf("seed %d: deepest block held at %d: the test does not reach a second page", seed, maxPos)
		}
		deepest = max(deepest, maxPos)
		if st := ix.Stats(); st.Blocks != int64(len(want)) {
			t.Fatalf("seed %d: Stats.Blocks = %d, want %d", seed, st.Blocks, len(want))
		}
	}
}

func pathNodes(t *tree, n int) []int {
	var rev []int
	for ; n >= 0; n = t.parent[n] {
		rev = append(rev, n)
	}
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	return rev
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func itoa(n int) string {
	const digits = "0123456789"
	if n == 0 {
		return "0"
	}
	var buf []byte
	for n > 0 {
		buf = append([]byte{digits[n%10]}, buf...)
		n /= 10
	}
	return string(buf)
}
