package events

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/cellrouter/cellrouter/cell/index"
)

// floodApplier returns an index of maxBlocks and an Applier on it whose
// holders index at most bound router blocks (router and engine blocks of 4
// tokens).
func floodApplier(t *testing.T, maxBlocks, bound int) (*index.Index, *Applier) {
	return floodApplierIn(t, index.LayoutBlock, maxBlocks, bound)
}

// floodApplierIn is floodApplier with an index of the given layout.
func floodApplierIn(t *testing.T, layout index.Layout, maxBlocks, bound int) (*index.Index, *Applier) {
	t.Helper()
	icfg := index.DefaultConfig()
	icfg.Layout = layout
	icfg.MaxBlocks = maxBlocks
	ix, err := index.New(icfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ix.Close)
	cfg := DefaultConfig()
	cfg.BlockSize = 4
	cfg.MaxIndexBlocksPerPod = bound
	a, err := NewApplier(cfg, ix, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ix, a
}

// podChain stores a chain of n 4-token blocks for pod from token base and
// returns its router chain.
func podChain(t *testing.T, a *Applier, pod string, seq uint64, base, n int) []index.BlockHash {
	t.Helper()
	all := toks(base, 4*n)
	if err := apply(t, a, &Batch{Pod: pod, DPRank: -1, Seq: seq, Model: "m", Events: []Event{stored(nil, all, 4, 0)}}); err != nil {
		t.Fatal(err)
	}
	return routerChain("m", 4, all)
}

// flood sends n distinct one-block chains for pod, 64 per batch, from
// sequence number seq; it returns the next sequence number.
func flood(t *testing.T, a *Applier, pod string, seq uint64, n int) uint64 {
	t.Helper()
	for i := 0; i < n; i += 64 {
		b := &Batch{Pod: pod, DPRank: -1, Seq: seq, Model: "m"}
		for j := i; j < min(i+64, n); j++ {
			b.Events = append(b.Events, stored(nil, toks(1_000_000+4*j, 4), 4, 0))
		}
		if err := a.ApplyBatch(context.Background(), b); err != nil {
			t.Fatal(err)
		}
		seq++
	}
	return seq
}

// TestFloodStaysWithinItsPod floods one pod with many times the index's
// capacity of distinct blocks: the other pods keep every block, their new
// blocks are indexed, and the flooding pod holds at most its bound. Before
// per-pod bounds the flood filled the index and every later store of every
// pod was refused.
func TestFloodStaysWithinItsPod(t *testing.T) {
	tests := []struct {
		name             string
		maxBlocks, bound int
		wantReason       EvictReason
	}{
		// The pod bound keeps the flood below the index's capacity.
		{"pod bound", 2000, 500, EvictPodBound},
		// No useful pod bound: the index fills, and the flooding pod, over
		// its fair share, pays for the others' new blocks.
		{"fair share", 2000, 1 << 20, EvictFairShare},
	}
	for _, layout := range []index.Layout{index.LayoutBlock, index.LayoutPaged} {
		for _, tc := range tests {
			t.Run(string(layout)+"/"+tc.name, func(t *testing.T) { testFlood(t, layout, tc.maxBlocks, tc.bound, tc.wantReason) })
		}
	}
}

// testFlood is one case of TestFloodStaysWithinItsPod.
func testFlood(t *testing.T, layout index.Layout, maxBlocks, bound int, wantReason EvictReason) {
	ix, a := floodApplierIn(t, layout, maxBlocks, bound)
	r1 := podChain(t, a, "real-1", 0, 1, 100)
	r2 := podChain(t, a, "real-2", 0, 50_000, 100)
	flood(t, a, "flood", 0, 20*maxBlocks)
	if got := depth(t, ix, "real-1", r1); got != len(r1) {
		t.Errorf("real-1 depth after the flood = %d, want %d", got, len(r1))
	}
	if got := depth(t, ix, "real-2", r2); got != len(r2) {
		t.Errorf("real-2 depth after the flood = %d, want %d", got, len(r2))
	}
	// New blocks of the real pods, after the flood, are indexed too.
	n1 := podChain(t, a, "real-1", 1, 100_000, 300)
	n2 := podChain(t, a, "real-2", 1, 200_000, 300)
	if got := depth(t, ix, "real-1", n1); got != len(n1) {
		t.Errorf("real-1 new chain depth = %d, want %d", got, len(n1))
	}
	if got := depth(t, ix, "real-2", n2); got != len(n2) {
		t.Errorf("real-2 new chain depth = %d, want %d", got, len(n2))
	}
	if got := depth(t, ix, "real-1", r1); got != len(r1) {
		t.Errorf("real-1 old chain depth = %d, want %d", got, len(r1))
	}
	if got, share := a.IndexedBlocks("flood"), min(bound, maxBlocks); got > share {
		t.Errorf("flood indexes %d blocks, want at most %d", got, share)
	}
	if got := ix.Stats().Blocks; got > int64(maxBlocks) {
		t.Errorf("index blocks = %d, want at most %d", got, maxBlocks)
	}
	ev := a.EvictionsByPod()
	if len(ev) != 1 || ev[0].Pod != "flood" || ev[0].Evicted[wantReason] == 0 {
		t.Errorf("evictions by pod = %+v, want only flood's, under %s", ev, wantReason)
	}
	if a.Counters().Evicted[wantReason].Load() == 0 {
		t.Errorf("Counters.Evicted[%s] = 0", wantReason)
	}
	if n := a.Counters().EventsDropped[ReasonHolderFull].Load(); n != 0 {
		t.Errorf("holder_full drops = %d, want 0", n)
	}
	if st := ix.Stats(); st.StaleOps != 0 {
		t.Errorf("stale index ops = %d, want 0 (every eviction placed in its chain)", st.StaleOps)
	}
	checkForest(t, a)
}

// TestEvictionKeepsRecentBlocks checks that a pod over its bound loses its
// least recently used blocks: a chain stored again (touched) survives a
// flood of newer blocks that evicts an untouched one stored after it.
func TestEvictionKeepsRecentBlocks(t *testing.T) {
	ix, a := floodApplier(t, 1<<20, 100)
	old := podChain(t, a, "p", 0, 1, 30)
	mid := podChain(t, a, "p", 1, 10_000, 30)
	// Storing old's blocks again makes it more recent than mid.
	podChain(t, a, "p", 2, 1, 30)
	all := toks(20_000, 4*50)
	if err := apply(t, a, &Batch{Pod: "p", DPRank: -1, Seq: 3, Model: "m", Events: []Event{stored(nil, all, 4, 0)}}); err != nil {
		t.Fatal(err)
	}
	// 110 blocks for a bound of 100: the 10 evicted are mid's deepest.
	if got := depth(t, ix, "p", old); got != len(old) {
		t.Errorf("touched chain depth = %d, want %d", got, len(old))
	}
	if got := depth(t, ix, "p", mid); got != len(mid)-10 {
		t.Errorf("untouched chain depth = %d, want %d", got, len(mid)-10)
	}
	if got := depth(t, ix, "p", routerChain("m", 4, all)); got != 50 {
		t.Errorf("new chain depth = %d, want 50", got)
	}
	checkForest(t, a)
}

// TestTouchKeepsMatchedBlocks checks that a chain a request matched (Touch)
// outlives an untouched chain stored after it: without the match, the
// older chain would lose its deepest blocks.
func TestTouchKeepsMatchedBlocks(t *testing.T) {
	for _, touched := range []bool{false, true} {
		ix, a := floodApplier(t, 1<<20, 100)
		old := podChain(t, a, "p", 0, 1, 30)
		mid := podChain(t, a, "p", 1, 10_000, 30)
		if touched && !a.Touch("p", old[len(old)-1]) {
			t.Fatal("Touch of a live holder reported false")
		}
		all := toks(20_000, 4*50)
		if err := apply(t, a, &Batch{Pod: "p", DPRank: -1, Seq: 2, Model: "m", Events: []Event{stored(nil, all, 4, 0)}}); err != nil {
			t.Fatal(err)
		}
		// 110 blocks for a bound of 100: the 10 evicted are the deepest of
		// the older chain, unless a request matched it.
		wantOld, wantMid := 20, 30
		if touched {
			wantOld, wantMid = 30, 20
		}
		if got := depth(t, ix, "p", old); got != wantOld {
			t.Errorf("touched %v: older chain depth = %d, want %d", touched, got, wantOld)
		}
		if got := depth(t, ix, "p", mid); got != wantMid {
			t.Errorf("touched %v: newer chain depth = %d, want %d", touched, got, wantMid)
		}
		checkForest(t, a)
	}
	_, a := floodApplier(t, 1<<20, 100)
	if a.Touch("nobody", 1) {
		t.Error("Touch of an unknown holder reported true")
	}
}

// TestOneChainPastTheBound checks the one refusal left: a chain longer than
// the bound cannot evict its own parent, so its blocks past the bound are
// dropped as ReasonHolderFull, and the pod's earlier chains make room first.
func TestOneChainPastTheBound(t *testing.T) {
	ix, a := floodApplier(t, 1<<20, 50)
	first := podChain(t, a, "p", 0, 1, 20)
	long := podChain(t, a, "p", 1, 10_000, 80)
	if got := depth(t, ix, "p", long); got != 50 {
		t.Errorf("long chain depth = %d, want 50 (the bound)", got)
	}
	if got := depth(t, ix, "p", first); got != 0 {
		t.Errorf("older chain depth = %d, want 0 (evicted for the long one)", got)
	}
	if n := a.Counters().EventsDropped[ReasonHolderFull].Load(); n != 1 {
		t.Errorf("holder_full drops = %d, want 1", n)
	}
	checkForest(t, a)
}

// checkForest checks every holder's forest against its own bookkeeping:
// the heap holds exactly the leaves, in heap order, and indexed counts the
// router blocks of the indexed nodes.
func checkForest(t *testing.T, a *Applier) {
	t.Helper()
	a.mu.RLock()
	defer a.mu.RUnlock()
	for id, h := range a.holders {
		h.mu.Lock()
		c := &h.chains
		leaves, indexed := 0, 0
		for _, i := range c.byHash {
			n := &c.nodes[i]
			if !n.skip {
				indexed += int(n.nRouter)
			}
			if (n.child == none) != (n.heap != none) {
				t.Errorf("%s: node %#x has child %d and heap place %d", id, n.hash, n.child, n.heap)
			}
			if n.heap != none {
				leaves++
				if e := c.leaves[n.heap]; e.node != i || e.stamp != n.stamp {
					t.Errorf("%s: heap place %d of node %#x (stamp %d) holds %+v", id, n.heap, n.hash, n.stamp, e)
				}
			}
		}
		for k := 1; k < len(c.leaves); k++ {
			if c.less(k, (k-1)/2) {
				t.Errorf("%s: heap order broken at %d", id, k)
			}
		}
		if leaves != len(c.leaves) || indexed != c.indexed {
			t.Errorf("%s: %d leaves, heap %d; indexed %d, counted %d", id, leaves, len(c.leaves), indexed, c.indexed)
		}
		h.mu.Unlock()
	}
}

// TestFloodConcurrentWithPods floods one pod while three others store their
// chains at the same time, each from its own goroutine as the transports
// do, into an index of 3,000 blocks with no useful per-pod bound: the
// flooding pod is held to its fair share as the index fills, so every
// chain of the other pods is indexed in full.
func TestFloodConcurrentWithPods(t *testing.T) {
	icfg := index.DefaultConfig()
	icfg.MaxBlocks = 3000
	ix, err := index.New(icfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ix.Close)
	cfg := DefaultConfig()
	cfg.BlockSize = 4
	cfg.Pods = []PodSpec{{ID: "flood"}, {ID: "real-0"}, {ID: "real-1"}, {ID: "real-2"}}
	a, err := NewApplier(cfg, ix, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	const chains, perChain = 20, 20
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 1000; i++ {
			b := &Batch{Pod: "flood", DPRank: -1, Seq: uint64(i), Model: "m",
				Events: []Event{stored(nil, toks(10_000_000+4*64*i, 4*64), 4, 0)}}
			if err := a.ApplyBatch(context.Background(), b); err != nil {
				errs <- err
				return
			}
		}
	}()
	for p := 0; p < 3; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := 0; c < chains; c++ {
				all := toks(1_000_000*(p+1)+4*perChain*c, 4*perChain)
				b := &Batch{Pod: fmt.Sprintf("real-%d", p), DPRank: -1, Seq: uint64(c), Model: "m",
					Events: []Event{stored(nil, all, 4, 0)}}
				if err := a.ApplyBatch(context.Background(), b); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for p := 0; p < 3; p++ {
		id := fmt.Sprintf("real-%d", p)
		for c := 0; c < chains; c++ {
			ch := routerChain("m", 4, toks(1_000_000*(p+1)+4*perChain*c, 4*perChain))
			if got := depth(t, ix, id, ch); got != perChain {
				t.Errorf("%s chain %d: depth %d, want %d", id, c, got, perChain)
			}
		}
	}
	if got := ix.Stats().Blocks; got > 3000 {
		t.Errorf("index blocks = %d, want at most 3000", got)
	}
	if a.Counters().Evicted[EvictFairShare].Load() == 0 {
		t.Error("no fair-share eviction: the flood did not press the index")
	}
	checkForest(t, a)
}
